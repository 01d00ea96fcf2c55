"""The k nearest rows of one (mind, model) to a query: exact cosine distances, nearest first,
ties by frame id.

The exact scan is one float32 matrix-vector product over the mind and a partial sort. Rows are
unit vectors and the query is normalised here, so ``1 - dot`` is the cosine distance vec0
computes. A mind the calibration chose the coarse pass for (:mod:`.codes`, decided by
:func:`prepare_coarse`) is searched by its codes instead, the candidates rescored exactly; where
filters leave few rows, the exact scan costs about as much and is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from waggle_store.vectorindex.codes import SignCodes, calibrate, candidates, nearest, supported
from waggle_store.vectorindex.rows import Rows

#: Minds smaller than this keep the exact scan: a few milliseconds at most, where the coarse
#: pass would save little and building its codes costs as much as hundreds of searches.
COARSE_MIN_ROWS: Final = 32_768
#: The coarse pass is used while the candidates it rescores are under this share (1/n) of the
#: rows that qualify.
RESCORED_SHARE: Final = 4


@dataclass(frozen=True)
class RowFilter:
    """What a search narrows a mind to: one session, a creation-time window (POSIX seconds,
    inclusive), a set of frame ids. None: not narrowed."""

    gop_id: str | None = None
    since: float | None = None
    until: float | None = None
    frame_ids: Sequence[int] | None = None


@dataclass(frozen=True)
class Found:
    """The ``k`` nearest qualifying rows as ``[frame id, cosine distance]`` pairs, nearest
    first (ties by id), and how many rows qualify (``k >= available``: every one was seen)."""

    pairs: list[list[Any]]
    available: int
    k: int


def prepare_coarse(np_: Any, rows: Rows, mode: str) -> None:
    """Build the mind's codes and calibrate it for the coarse pass, the first time it has
    ``COARSE_MIN_ROWS`` rows and again whenever it has doubled since (``mode`` ``exact``:
    never). It runs on the caller's thread: once per mind and doubling, seconds of CPU at a
    million rows."""
    if mode == "exact" or not supported(np_) or rows.n < max(COARSE_MIN_ROWS, 2 * rows.decided_at):
        return
    n = rows.n
    matrix, alive = rows.matrix[:n], rows.alive[:n]
    codes = SignCodes.of(np_, matrix, len(rows.ids))
    rows.factor, rows.recalls = calibrate(np_, codes, matrix, alive)
    rows.codes = codes if rows.factor is not None else None
    rows.decided_at = n


def unit(np_: Any, vector: Sequence[float]) -> Any:
    """The query as a float32 unit vector; None for a zero vector (it is near nothing)."""
    q = np_.asarray(vector if isinstance(vector, list) else list(vector), dtype=np_.float32)
    norm = float(np_.linalg.norm(q))
    return None if norm == 0.0 else q / norm


def _mask(np_: Any, rows: Rows, where: RowFilter) -> tuple[Any, bool]:
    """The rows that qualify (None: all of them), and False when none can (an unknown
    session). Each filter costs a pass over n values, not n × d."""
    n = rows.n
    mask = None if rows.dead == 0 else rows.alive[:n]
    if where.gop_id is not None:
        code = rows.gop_codes.get(where.gop_id)
        if code is None:
            return None, False
        mask = _and(mask, rows.gops[:n] == code)
    if where.since is not None:
        mask = _and(mask, rows.ts[:n] >= where.since)
    if where.until is not None:
        mask = _and(mask, rows.ts[:n] <= where.until)
    if where.frame_ids is not None:
        mask = _and(mask, np_.isin(rows.ids[:n], np_.asarray(where.frame_ids,
                                                             dtype=rows.ids.dtype)))
    return mask, True


def _and(mask: Any, more: Any) -> Any:
    return more if mask is None else mask & more


def top_k(np_: Any, rows: Rows, vector: Sequence[float], where: RowFilter, k: int,
          exact: bool = False) -> Found:
    """The ``k`` nearest qualifying rows (``exact``: never by the coarse pass)."""
    mask, possible = _mask(np_, rows, where)
    q = unit(np_, vector)
    if not possible or q is None or rows.n == 0:
        return Found([], 0, 0)
    available = rows.n if mask is None else int(np_.count_nonzero(mask))
    k = min(max(k, 1), available)
    if k == 0:
        return Found([], 0, 0)
    if (not exact and rows.codes is not None and rows.factor is not None
            and RESCORED_SHARE * candidates(k, rows.factor) < available):
        found, sims = nearest(np_, rows.codes, rows.matrix, q, rows.n, mask, k, rows.factor)
        return Found(_pairs(np_, rows, found, 1.0 - sims.astype(np_.float64), k), available, k)
    # einsum, not ``@``: one thread's pass over memory, without waking BLAS's threads.
    neg = np_.einsum("ij,j->i", rows.matrix[:rows.n], q)
    # Negated, the nearest come first: numpy's introselect is far slower for a k-th element at
    # the top end of an array of many equal values (a hashing embedder's exact 0.0s).
    np_.negative(neg, out=neg)
    if mask is not None:
        neg[~mask] = np_.inf
    top = np_.argpartition(neg, k - 1)[:k] if k < len(neg) else np_.arange(len(neg))
    top = top[np_.isfinite(neg[top])]
    return Found(_pairs(np_, rows, top, 1.0 + neg[top].astype(np_.float64)), available, k)


def _pairs(np_: Any, rows: Rows, found: Any, distance: Any,
           k: int | None = None) -> list[list[Any]]:
    """[frame id, cosine distance] of the ``k`` nearest of ``found`` (None: all), nearest
    first, ties by frame id."""
    ids = rows.ids[found]
    order = np_.lexsort((ids, distance))[:k]
    return [[i, d] for i, d in zip(ids[order].tolist(), distance[order].tolist(), strict=True)]

"""The SQLite vector index's coarse pass for large minds: short binary codes of every row, their
Hamming distances to the query's code, then the exact cosine of the nearest candidates only.

Why: the exact scan reads ``4·d`` bytes a row and is bound by memory bandwidth (8–12 ms at
100,000 frames of 384 dimensions here, ~90 ms at a million). A row's code is the side of
:data:`BITS` fixed random hyperplanes it lies on (SimHash: the fraction of planes separating
two vectors estimates the angle between them, whatever the embedder), 192 bytes a row — an
eighth of a 384-d row — and a Hamming pass over them costs ~1.6 ms at 100,000 rows. The
candidates are then rescored exactly, so every distance the lane returns is the exact scan's
distance; what the pass can do wrong is *miss* a frame whose code is far from the query's while
its cosine is near. (Plain sign bits of the coordinates were measured first and dropped: they
tell little for sparse vectors such as the hashing embedder's; planes fitted to the data, such
as PCA, rank the mind's own rows well and unseen queries badly, so no calibration on the mind's
rows can vouch for them.)

How many candidates are enough depends on the embedder and the mind, so nothing is assumed:
each (mind, model) is *calibrated* on its own vectors. :data:`CALIBRATION_QUERIES` rows spread
over the mind are searched both ways (each row as a query, itself left out), and the mind uses
the pass with the smallest candidate factor of :data:`FACTORS` whose recall of the exact top
:data:`CALIBRATION_K` is at least :data:`REQUIRED_RECALL`; if none reaches it, the mind keeps the
exact scan. (Rows of the mind are no easier queries than questions: on the benchmark's stores,
the calibration's recall was below the recall measured with its queries, or within 0.004.)
The codes are built and the mind calibrated on a worker thread after the mind is loaded — the
exact scan answers meanwhile — and again once the mind has doubled since. Below
:data:`COARSE_MIN_ROWS` rows the exact scan is cheap and always used;
``WAGGLE_VECTOR_INDEX_MODE=exact`` turns the pass off; it needs numpy 2.0 or later.

Memory: ``BITS / 8`` = 192 bytes a row (19 MB per 100,000 frames) for a mind that uses it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final

from waggle_store.errors import InvalidInputError

#: Minds smaller than this keep the exact scan: ~3 ms of scan or less, where the pass would save
#: little and building its codes costs as much as hundreds of searches.
COARSE_MIN_ROWS: Final = 32_768
#: Hyperplanes per code: the angle's estimate sharpens with the number of planes, not with the
#: embedding's dimensions (1536 measured: recall@20 0.99+ with a few hundred candidates on dense
#: and on hashed vectors; 768 needed four times the candidates).
BITS: Final = 1536
#: Candidates rescored per wanted hit, tried in this order by the calibration; the smallest that
#: reaches the required recall is the mind's. Rescoring costs ~0.3 µs a candidate.
FACTORS: Final = (16, 32, 64, 128)
MIN_CANDIDATES: Final = 256
#: The recall against the exact scan a mind's calibration must show: above the 0.98 the project
#: promises of any approximate mode.
REQUIRED_RECALL: Final = 0.99
#: Rows of the mind searched both ways by a calibration, and the depth compared.
CALIBRATION_QUERIES: Final = 32
CALIBRATION_K: Final = 20
_PLANES_SEED: Final = 20261201  # fixed: the same planes in every process, the same codes
_WORD_BITS: Final = 64
_FAR: Final = 0xFFFF  # a Hamming distance no row reaches (BITS < 65,535): "excluded"
_PACK_ROWS: Final = 16_384  # rows projected at a time: bounded temporaries at a million rows
_BLAS_ROWS: Final = 256  # from this many rows on, a projection is worth BLAS's threads

_planes_by_dims: dict[int, Any] = {}


class Cancelled(Exception):
    """A build stopped because its mind left the index (closed store, eviction, reload)."""


def _check(keep_going: Callable[[], bool] | None) -> None:
    if keep_going is not None and not keep_going():
        raise Cancelled


def mode_from_env() -> str:
    """``auto`` (calibrate each large mind, use the pass where it recalls well) or ``exact``."""
    raw = os.environ.get("WAGGLE_VECTOR_INDEX_MODE", "").strip().lower() or "auto"
    if raw not in ("auto", "exact"):
        raise InvalidInputError(
            f"WAGGLE_VECTOR_INDEX_MODE must be 'auto' or 'exact', not {raw!r}")
    return raw


def supported(np_: Any) -> bool:
    """The pass counts bits with ``numpy.bitwise_count`` (numpy 2.0+); an older numpy keeps the
    exact scan (the same answers, at its cost)."""
    return hasattr(np_, "bitwise_count")


def candidates(k: int, factor: int) -> int:
    """How many of the nearest codes are rescored exactly for ``k`` hits."""
    return max(MIN_CANDIDATES, factor * k)


def _planes(np_: Any, dims: int) -> Any:
    planes = _planes_by_dims.get(dims)
    if planes is None:
        planes = np_.random.default_rng(_PLANES_SEED).standard_normal(
            (dims, BITS)).astype(np_.float32)
        _planes_by_dims[dims] = planes
    return planes


class SignCodes:
    """The codes of a lane's rows, stored word-major (``words[w, row]`` holds planes
    ``64·w .. 64·w+63`` of a row) so that a Hamming pass runs over contiguous arrays, one word
    position at a time (~6x faster here than row-major codes)."""

    def __init__(self, np_: Any, dims: int, capacity: int) -> None:
        self._np = np_
        self._planes = _planes(np_, dims)
        self.words = np_.zeros((BITS // _WORD_BITS, capacity), np_.uint64)

    @classmethod
    def of(cls, np_: Any, matrix: Any, capacity: int,
           keep_going: Callable[[], bool] | None = None) -> SignCodes:
        """The codes of ``matrix``'s rows (``keep_going`` asked between slices: False raises
        :class:`Cancelled`)."""
        codes = cls(np_, matrix.shape[1], capacity)
        for start in range(0, len(matrix), _PACK_ROWS):
            _check(keep_going)
            block = matrix[start:start + _PACK_ROWS]
            codes.words[:, start:start + len(block)] = codes.encode(block).T
        return codes

    @property
    def nbytes(self) -> int:
        return int(self.words.nbytes)

    def encode(self, rows: Any) -> Any:
        """(m, d) float rows -> (m, words) uint64 codes (bit set: the positive side). Few rows
        (a query, a refresh after a few writes) are projected with ``einsum`` on this thread:
        a BLAS product wakes BLAS's own threads, which then spin for a while beside whatever
        runs next — measured: the next query's embedding by torch went from 5.5 to ~75 ms."""
        np_ = self._np
        if len(rows) < _BLAS_ROWS:
            side = np_.einsum("ij,jb->ib", rows, self._planes) > 0
        else:
            side = rows @ self._planes > 0
        return np_.packbits(side, axis=1).view(np_.uint64)

    def set_rows(self, rows: Any, vectors: Any) -> None:
        self.words[:, rows] = self.encode(vectors).T

    def grow(self, capacity: int) -> None:
        np_ = self._np
        more = capacity - self.words.shape[1]
        if more > 0:
            self.words = np_.concatenate(
                [self.words, np_.zeros((self.words.shape[0], more), np_.uint64)], axis=1)

    def distances(self, q: Any, n: int) -> Any:
        """The Hamming distance of rows ``[:n]`` to the query's code (uint16)."""
        np_ = self._np
        code = self.encode(q.reshape(1, -1))[0]
        total = np_.zeros(n, np_.uint16)
        word = np_.empty(n, np_.uint64)
        bits = np_.empty(n, np_.uint8)
        for w in range(self.words.shape[0]):
            np_.bitwise_xor(self.words[w, :n], code[w], out=word)
            np_.bitwise_count(word, out=bits)
            np_.add(total, bits, out=total)
        return total


def _select(np_: Any, far: Any, want: int) -> Any:
    """The ``want`` rows of smallest distance (all rows if fewer), unordered; rows tied at the
    cut-off distance taken in row order, so the work stays bounded where codes tie a lot and
    the calibration measures the recall of exactly this."""
    # The distances are small integers: a histogram finds the cut-off distance in one pass
    # (~0.1 ms at 100,000 rows; argpartition over so many ties takes ~0.6 ms).
    cut = int(np_.searchsorted(np_.cumsum(np_.bincount(far)), want))
    rows = np_.flatnonzero(far <= cut)
    if len(rows) > want:
        below = far[rows] < cut
        rows = np_.concatenate([rows[below], rows[~below][:want - int(np_.count_nonzero(below))]])
    return rows


def nearest(np_: Any, codes: SignCodes, matrix: Any, q: Any, n: int, mask: Any, k: int,
            factor: int) -> tuple[Any, Any]:
    """Rows and exact similarities of the ``candidates(k, factor)`` rows of ``[:n]`` whose
    codes are nearest the query's (``mask``: the rows that may be returned, None = all)."""
    far = codes.distances(q, n)
    if mask is not None:
        far[~mask] = _FAR
    rows = _select(np_, far, candidates(k, factor))
    if mask is not None:
        rows = rows[mask[rows]]
    return rows, np_.einsum("ij,j->i", matrix[rows], q)


def calibrate(np_: Any, codes: SignCodes, matrix: Any, alive: Any,
              keep_going: Callable[[], bool] | None = None
              ) -> tuple[int | None, dict[int, float]]:
    """The mind's candidate factor (None: no factor recalls well enough, or none would rescore
    under an eighth of the mind) and the recall@:data:`CALIBRATION_K` of each factor tried,
    against the exact scan on the mind's own rows: :data:`CALIBRATION_QUERIES` rows spread over
    the mind, each searched both ways with itself left out; a hit as near as the exact k-th
    counts as found (equal vectors tie). ``keep_going``: as in :meth:`SignCodes.of`."""
    n = len(matrix)
    factors = [f for f in FACTORS if 8 * candidates(CALIBRATION_K, f) <= n]
    picks = np_.unique(np_.linspace(0, n - 1, CALIBRATION_QUERIES).astype(np_.int64))
    picks = picks[alive[picks]]
    found = dict.fromkeys(factors, 0)
    total = 0
    for start in range(0, len(picks), 8):  # 8 queries a product: bounded temporaries
        _check(keep_going)
        group = picks[start:start + 8]
        exact = matrix @ matrix[group].T  # (n, queries): every row's similarity
        exact[~alive] = -np_.inf
        for j, row in enumerate(group.tolist()):
            sims = exact[:, j]
            sims[row] = -np_.inf  # the query itself
            depth = min(CALIBRATION_K, int(np_.count_nonzero(np_.isfinite(sims))))
            if depth == 0:
                continue
            kth = float(np_.partition(sims, n - depth)[n - depth])
            far = codes.distances(matrix[row], n)
            far[~alive] = _FAR
            far[row] = _FAR
            total += depth
            for factor in factors:
                rows = _select(np_, far, candidates(depth, factor))
                got = np_.sort(sims[rows])[::-1][:depth]
                found[factor] += int(np_.count_nonzero(got >= kth - 1e-6))
    recalls = {f: found[f] / total for f in factors} if total else {}
    chosen = next((f for f in factors if recalls.get(f, 0.0) >= REQUIRED_RECALL), None)
    return chosen, recalls

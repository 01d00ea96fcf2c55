"""The SQLite vector index's coarse pass for large minds: one sign bit per dimension, the
Hamming distances of the whole mind, then the exact cosine of the nearest candidates only.

Why: the exact scan reads ``4·d`` bytes a row and is bound by memory bandwidth (~0.1 µs a row
of 384 dimensions at best here, 8–12 ms at 100,000 frames, ~90 ms at a million); the sign codes
are 32x smaller (``d/8`` bytes a row), and their Hamming distances to the query's code cost
~0.4 ms at 100,000 rows (``benchmarks/README.md``). The candidates are then rescored exactly,
so every distance the lane returns is the exact cosine distance of the exact scan; what the
pass can do wrong is *miss* a frame whose sign code is far from the query's while its cosine is
near — the pass is approximate in recall, never in scores.

Whether sign codes rank the candidates well depends on the embedder: dense sentence embeddings
(all-MiniLM-L6-v2: recall@20 0.996 against the exact scan on LoCoMo) do; sparse or hashed
vectors (the hashing embedder: ~0.02) and random vectors (0.15–0.26) do not. So nothing is
assumed of a model: each (mind, model) is *calibrated* on its own vectors. A sample of the
mind's rows is searched both ways (each row as a query, itself left out), and the pass is used
for that mind only if it finds at least :data:`REQUIRED_RECALL` of the exact top
:data:`CALIBRATION_K`; otherwise the mind keeps the exact scan. The decision is taken again when
the mind has doubled since. Below :data:`COARSE_MIN_ROWS` rows the exact scan is cheap
(a few milliseconds) and always used. ``WAGGLE_VECTOR_INDEX_MODE=exact`` turns the pass off.

Memory: the codes add ``d/8`` bytes a row (48 bytes at 384 d: 4.8 MB per 100,000 frames) to a
mind that uses them.
"""

from __future__ import annotations

import os
from typing import Any, Final

from waggle_store.errors import InvalidInputError

#: Minds smaller than this keep the exact scan: ~3 ms of scan or less, where the pass would save
#: little and a calibration costs as much as many searches.
COARSE_MIN_ROWS: Final = 32_768
#: Candidates rescored exactly per wanted hit (and at least :data:`MIN_CANDIDATES`): rescoring
#: costs ~0.3 µs a candidate (a gathered row and its dot product), so a wide margin is cheap.
CANDIDATE_FACTOR: Final = 16
MIN_CANDIDATES: Final = 256
#: The recall against the exact scan a mind's calibration must show for the pass to be used:
#: above the 0.98 the project promises of any approximate mode, as the sample's rows (stored
#: texts) are not the questions asked of it.
REQUIRED_RECALL: Final = 0.99
#: Rows of the mind searched both ways by a calibration, and the depth compared.
CALIBRATION_QUERIES: Final = 32
CALIBRATION_K: Final = 20
_WORD_BITS: Final = 64
_FAR: Final = 0xFFFF  # a Hamming distance no row reaches (dimensions < 65,535): "excluded"


def mode_from_env() -> str:
    """``auto`` (calibrate each large mind, use the pass where it recalls well) or ``exact``."""
    raw = os.environ.get("WAGGLE_VECTOR_INDEX_MODE", "").strip().lower() or "auto"
    if raw not in ("auto", "exact"):
        raise InvalidInputError(
            f"WAGGLE_VECTOR_INDEX_MODE must be 'auto' or 'exact', not {raw!r}")
    return raw


def candidates(k: int) -> int:
    """How many of the nearest sign codes are rescored exactly for ``k`` hits."""
    return max(MIN_CANDIDATES, CANDIDATE_FACTOR * k)


class SignCodes:
    """The sign bits of a lane's rows, stored word-major (``words[w, row]`` holds bits
    ``64·w .. 64·w+63`` of a row) so that a Hamming pass runs over contiguous arrays, one word
    position at a time (~6x faster here than row-major codes)."""

    def __init__(self, np_: Any, dims: int, capacity: int) -> None:
        self._np = np_
        self.dims = dims
        self.words = np_.zeros(((dims + _WORD_BITS - 1) // _WORD_BITS, capacity), np_.uint64)

    @classmethod
    def of(cls, np_: Any, matrix: Any, capacity: int) -> SignCodes:
        codes = cls(np_, matrix.shape[1], capacity)
        step = 65_536  # packs in slices: the boolean temporary stays small at a million rows
        for start in range(0, len(matrix), step):
            block = matrix[start:start + step]
            codes.words[:, start:start + len(block)] = codes._pack(block).T
        return codes

    @property
    def nbytes(self) -> int:
        return int(self.words.nbytes)

    def _pack(self, rows: Any) -> Any:
        """(m, d) float rows -> (m, words) uint64 sign codes (bit set: a positive value)."""
        np_ = self._np
        packed = np_.packbits(rows > 0, axis=1)
        width = self.words.shape[0] * 8
        if packed.shape[1] < width:
            packed = np_.concatenate(
                [packed, np_.zeros((len(packed), width - packed.shape[1]), np_.uint8)], axis=1)
        return np_.ascontiguousarray(packed).view(np_.uint64)

    def set_row(self, row: int, vector: Any) -> None:
        self.words[:, row] = self._pack(vector.reshape(1, -1))[0]

    def grow(self, capacity: int) -> None:
        np_ = self._np
        more = capacity - self.words.shape[1]
        if more > 0:
            self.words = np_.concatenate(
                [self.words, np_.zeros((self.words.shape[0], more), np_.uint64)], axis=1)

    def distances(self, q: Any, n: int) -> Any:
        """The Hamming distance of rows ``[:n]`` to the query's sign code (uint16)."""
        np_ = self._np
        code = self._pack(q.reshape(1, -1))[0]
        total = np_.zeros(n, np_.uint16)
        word = np_.empty(n, np_.uint64)
        bits = np_.empty(n, np_.uint8)
        for w in range(self.words.shape[0]):
            np_.bitwise_xor(self.words[w, :n], code[w], out=word)
            np_.bitwise_count(word, out=bits)
            np_.add(total, bits, out=total)
        return total


def nearest(np_: Any, codes: SignCodes, matrix: Any, q: Any, n: int, mask: Any,
            k: int) -> tuple[Any, Any]:
    """Rows and exact similarities of the ``candidates(k)`` rows of ``[:n]`` whose sign codes
    are nearest the query's (``mask``: the rows that may be returned, None = all), unordered.
    Rows tied at the cut-off distance are taken in row order: the work stays bounded where
    codes tie a lot (sparse vectors), and the calibration measures the recall of exactly this."""
    far = codes.distances(q, n)
    if mask is not None:
        far[~mask] = _FAR
    want = candidates(k)
    # The distances are small integers: a histogram finds the cut-off distance in one pass
    # (~0.1 ms at 100,000 rows; argpartition over so many ties takes ~0.6 ms).
    cut = int(np_.searchsorted(np_.cumsum(np_.bincount(far)), want))
    rows = np_.flatnonzero(far <= cut)
    if len(rows) > want:
        below = far[rows] < cut
        ties = rows[~below][:want - int(np_.count_nonzero(below))]
        rows = np_.concatenate([rows[below], ties])
    if mask is not None:
        rows = rows[mask[rows]]
    sims = np_.einsum("ij,j->i", matrix[rows], q)
    return rows, sims


def calibrate(np_: Any, codes: SignCodes, matrix: Any, alive: Any) -> float:
    """The pass's recall@:data:`CALIBRATION_K` against the exact scan on the mind's own rows:
    :data:`CALIBRATION_QUERIES` rows spread over the mind, each searched both ways with itself
    left out; a hit as near as the exact k-th counts as found (equal vectors tie)."""
    n = len(matrix)
    picks = np_.unique(np_.linspace(0, n - 1, CALIBRATION_QUERIES).astype(np_.int64))
    picks = picks[alive[picks]]
    k = CALIBRATION_K
    found = total = 0
    for start in range(0, len(picks), 8):  # 8 queries a product: bounded temporaries
        group = picks[start:start + 8]
        exact = matrix @ matrix[group].T  # (n, queries): every row's similarity
        exact[~alive] = -np_.inf
        for j, row in enumerate(group.tolist()):
            sims = exact[:, j]
            sims[row] = -np_.inf  # the query itself
            live = int(np_.count_nonzero(np_.isfinite(sims)))
            depth = min(k, live)
            if depth == 0:
                continue
            kth = float(np_.partition(sims, n - depth)[n - depth])
            mask = alive.copy()
            mask[row] = False
            rows, _ = nearest(np_, codes, matrix, matrix[row], n, mask, depth)
            got = np_.sort(sims[rows])[::-1][:depth]
            found += int(np_.count_nonzero(got >= kth - 1e-6))
            total += depth
    return found / total if total else 0.0

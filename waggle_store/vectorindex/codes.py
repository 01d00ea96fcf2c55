"""The coarse pass for large minds: a short binary code per row, the Hamming distances of all
codes to the query's code, then the exact cosine of the nearest candidates only.

The exact scan reads ``4·d`` bytes a row and is bound by memory bandwidth. A row's code is the
side of :data:`BITS` fixed random hyperplanes it lies on (SimHash: the share of planes that
separate two vectors estimates the angle between them, whatever the embedder): ``BITS / 8`` =
192 bytes a row, an eighth of a 384-d row. The candidates are rescored exactly, so every
distance returned is the exact scan's; what the pass can do wrong is *miss* a frame whose code
is far from the query's while its cosine is near.

How many candidates are enough depends on the embedder and the mind, so each (mind, model) is
*calibrated* on its own vectors: :data:`CALIBRATION_QUERIES` rows spread over the mind are
searched both ways (each row as a query, itself left out), and the mind uses the smallest
candidate factor of :data:`FACTORS` whose recall of the exact top :data:`CALIBRATION_K` reaches
:data:`REQUIRED_RECALL`; if none does, the mind keeps the exact scan. Random planes (rather than
planes fitted to the mind, such as PCA) are used because they treat the mind's rows and unseen
queries alike, so a calibration on the rows vouches for the queries.

Needs numpy 2.0 or later (``bitwise_count``); with an older numpy every scan is exact.
"""

from __future__ import annotations

from typing import Any, Final

#: Hyperplanes per code: the angle's estimate sharpens with the number of planes, not with the
#: embedding's dimensions.
BITS: Final = 1536
#: Candidates rescored per wanted hit, tried in this order by the calibration.
FACTORS: Final = (16, 32, 64, 128)
MIN_CANDIDATES: Final = 256
#: The recall against the exact scan a calibration must show (above the 0.98 promised of any
#: approximate search).
REQUIRED_RECALL: Final = 0.99
#: Rows of the mind searched both ways by a calibration, and the depth compared.
CALIBRATION_QUERIES: Final = 32
CALIBRATION_K: Final = 20
_PLANES_SEED: Final = 20261201  # fixed: the same planes, hence the same codes, in every process
_WORD_BITS: Final = 64
_FAR: Final = 0xFFFF  # a Hamming distance no row reaches (BITS < 65,535): "excluded"
_PACK_ROWS: Final = 16_384  # rows projected at a time: bounded temporaries for large minds
_BLAS_ROWS: Final = 256  # from this many rows on, a projection is worth BLAS's threads

_planes_by_dims: dict[int, Any] = {}


def supported(np_: Any) -> bool:
    """Whether numpy counts bits (``numpy.bitwise_count``, numpy 2.0+)."""
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
    """The codes of a mind's rows, stored word-major (``words[w, row]`` holds planes
    ``64·w .. 64·w+63`` of a row), so that a Hamming pass runs over contiguous arrays, one word
    position at a time."""

    def __init__(self, np_: Any, dims: int, capacity: int) -> None:
        self._np = np_
        self._planes = _planes(np_, dims)
        self.words = np_.zeros((BITS // _WORD_BITS, capacity), np_.uint64)

    @classmethod
    def of(cls, np_: Any, matrix: Any, capacity: int) -> SignCodes:
        """The codes of ``matrix``'s rows, with room for ``capacity`` rows."""
        codes = cls(np_, matrix.shape[1], capacity)
        for start in range(0, len(matrix), _PACK_ROWS):
            block = matrix[start:start + _PACK_ROWS]
            codes.words[:, start:start + len(block)] = codes.encode(block).T
        return codes

    @property
    def nbytes(self) -> int:
        return int(self.words.nbytes)

    def encode(self, rows: Any) -> Any:
        """(m, d) float rows -> (m, words) uint64 codes (a set bit: the positive side). A few
        rows (a query, a refresh) are projected with single-threaded ``einsum``: a BLAS product
        wakes BLAS's threads, which keep spinning beside whatever runs next (a query's
        embedding by an in-process model, for one)."""
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
    cut-off distance are taken in row order, so the work stays bounded where codes tie a lot
    and the calibration measures the recall of exactly this selection."""
    # The distances are small integers: a histogram finds the cut-off distance in one pass,
    # where argpartition over so many ties is several times slower.
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


def calibrate(np_: Any, codes: SignCodes, matrix: Any, alive: Any
              ) -> tuple[int | None, dict[int, float]]:
    """The mind's candidate factor (None: no factor recalls well enough, or each would rescore
    over an eighth of the mind) and the recall@:data:`CALIBRATION_K` of each factor tried,
    against the exact scan on the mind's own rows: :data:`CALIBRATION_QUERIES` rows spread over
    the mind, each searched both ways with itself left out; a hit as near as the exact k-th
    counts as found (equal vectors tie)."""
    n = len(matrix)
    factors = [f for f in FACTORS if 8 * candidates(CALIBRATION_K, f) <= n]
    picks = np_.unique(np_.linspace(0, n - 1, CALIBRATION_QUERIES).astype(np_.int64))
    picks = picks[alive[picks]]
    found = dict.fromkeys(factors, 0)
    total = 0
    for start in range(0, len(picks), 8):  # 8 queries a product: bounded temporaries
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

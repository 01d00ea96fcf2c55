"""The vectors of one (mind, model) in memory: a float32 matrix of unit rows and, per row, the
frame id, the creation time and the session (as a small integer code), which the search's
filters become masks over.

Rows ``[:n]`` are used. A frame that stops qualifying is masked (``alive`` False) rather than
moved, until the owner reloads the mind; a frame written later is overwritten in place or
appended (the arrays grow by a quarter). The coarse pass's state lives here too: the rows'
codes and the candidate factor the mind's calibration chose (:mod:`.codes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from waggle_store.vectorindex.codes import BITS, SignCodes

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: What the frame id -> row dict costs per entry (~106 bytes on CPython 3.11).
ROW_ENTRY_BYTES: Final = 110
#: Per row beside the vector: id (8), time (8), session code (4), alive flag (1).
ROW_META_BYTES: Final = 21


def bytes_needed(count: int, dims: int, coded: bool) -> int:
    """What ``count`` rows of ``dims`` dimensions cost in memory (with codes, if ``coded``)."""
    return count * (4 * dims + ROW_META_BYTES + ROW_ENTRY_BYTES + (BITS // 8 if coded else 0))


@dataclass
class Rows:
    """One (mind, model)'s rows as of change-log position ``seq`` (the owner's bookkeeping).

    ``dead``: rows masked since the load; ``stale``: the owner reloads before the next use.
    ``codes``/``factor``: set when the mind's calibration chose the coarse pass, decided at
    ``decided_at`` rows with ``recalls`` measured per factor (None: not calibrated)."""

    seq: int
    dims: int
    matrix: npt.NDArray[np.float32]
    ids: npt.NDArray[np.int64]
    ts: npt.NDArray[np.float64]
    gops: npt.NDArray[np.int32]
    alive: npt.NDArray[np.bool_]
    n: int = 0
    gop_codes: dict[str, int] = field(default_factory=dict)
    rows: dict[int, int] = field(default_factory=dict)
    stale: bool = False
    dead: int = 0
    codes: SignCodes | None = None
    factor: int | None = None
    decided_at: int = 0
    recalls: dict[int, float] | None = None

    @classmethod
    def empty(cls, np_: Any, seq: int, dims: int, capacity: int) -> Rows:
        return cls(seq, dims, np_.empty((capacity, dims), np_.float32),
                   np_.empty(capacity, np_.int64), np_.empty(capacity, np_.float64),
                   np_.empty(capacity, np_.int32), np_.zeros(capacity, np_.bool_))

    @property
    def nbytes(self) -> int:
        codes = 0 if self.codes is None else self.codes.nbytes
        return int(self.matrix.nbytes + self.ids.nbytes + self.ts.nbytes + self.gops.nbytes
                   + self.alive.nbytes) + ROW_ENTRY_BYTES * len(self.rows) + codes

    def gop_code(self, gop_id: str) -> int:
        return self.gop_codes.setdefault(gop_id, len(self.gop_codes))

    def extend(self, ids: Any, vectors: Any, ts: Any, gops: Any) -> None:
        """Append rows in bulk (a load: the arrays have room for them)."""
        n, m = self.n, len(ids)
        self.ids[n:n + m] = ids
        self.matrix[n:n + m] = vectors
        self.ts[n:n + m] = ts
        self.gops[n:n + m] = gops
        self.alive[n:n + m] = True
        self.rows.update((i, n + j) for j, i in enumerate(self.ids[n:n + m].tolist()))
        self.n = n + m

    def put(self, np_: Any, frame_id: int, vector: Any, gop_id: str, ts: float) -> int:
        """Write one frame's row (overwritten if present, else appended); returns the row."""
        row = self.rows.get(frame_id)
        if row is None:
            row = self._append(np_)
            self.rows[frame_id] = row
        self.matrix[row] = vector
        self.ids[row] = frame_id
        self.ts[row] = ts
        self.gops[row] = self.gop_code(gop_id)
        self.alive[row] = True
        return row

    def drop(self, frame_id: int) -> None:
        """Mask a frame's row (if present) until the next load."""
        row = self.rows.pop(frame_id, None)
        if row is not None:
            self.alive[row] = False
            self.dead += 1

    def recode(self, np_: Any, rows: list[int]) -> None:
        """Bring the codes of these rows up to date (after :meth:`put`)."""
        if self.codes is not None and rows:
            self.codes.set_rows(np_.array(rows, np_.int64), self.matrix[rows])

    def _append(self, np_: Any) -> int:
        if self.n == len(self.ids):
            grow = max(16, self.n // 4)
            self.matrix = np_.concatenate([self.matrix, np_.empty((grow, self.dims), np_.float32)])
            self.ids = np_.concatenate([self.ids, np_.zeros(grow, np_.int64)])
            self.ts = np_.concatenate([self.ts, np_.zeros(grow, np_.float64)])
            self.gops = np_.concatenate([self.gops, np_.zeros(grow, np_.int32)])
            self.alive = np_.concatenate([self.alive, np_.zeros(grow, np_.bool_)])
            if self.codes is not None:
                self.codes.grow(len(self.ids))
        self.n += 1
        return self.n - 1

"""The SQLite vector lane's in-process index: an exact numpy scan per (mind, model), kept coherent
with the database through a change log that triggers and the adapter write. A large mind whose
vectors suit it (measured per mind) is scanned by a coarse pass instead: 1536-bit codes, then
the nearest candidates' exact distances (:mod:`~waggle_store.dialects.sqlite_veccodes`).

Why: sqlite-vec's ``vec0`` KNN is a brute-force scan at ~900 ns a row (91 ms at 100k frames of
384 dimensions, ~0.9 s at 1M); the same exact scan as one float32 matrix-vector product in numpy
costs ~0.1 µs a row (``benchmarks/README.md``). The result is the same: exact cosine distances
(vectors are stored unit-normalised, the query is normalised here), order ``(distance, id)``.

The tables stay the truth. The cache is only trusted as of a position in the change log
``frame_vectors_log`` (``seq`` = rowid, ``frame_id``): every change that can alter what the lane
may return for a frame appends the frame's id there, in the writing transaction —

* the adapter's ``upsert_vectors``/``delete_vectors`` (vec0 tables take no triggers);
* triggers: a frame deleted, or its ``content_hash``/``gop_id``/``created_at``/``mind_id``
  changed; a manifest row inserted, deleted, or its ``status``/``content_hash``/``model_id``
  changed.

SQLite has one writer at a time, so log positions are handed out in commit order and a read
snapshot sees a prefix of the log. A search reads ``max(seq)`` in its own read transaction: equal
to the cache's position, the cache is that snapshot's state; ahead, the frames logged since are
re-read (an incremental refresh, the common case after an ingest); too far ahead (the log was
pruned past it: it keeps the newest :data:`LOG_KEEP` entries) or behind (another thread's newer
snapshot refreshed it), a full reload or the vec0 KNN. The log exists from the first vector
write (or ``store.reconcile()``) of this version on a store; without it the lane is vec0's.

Every search still verifies its candidates in SQL (frame exists, in the mind and the filters,
manifest ready for the model with the frame's current hash, model still active: the
:func:`checked_knn` join that also reads the page's frames), so even a wrong cache can return no
deleted, changed or foreign frame; a candidate dropped there marks the cache for a full reload.

Memory: a (mind, model) costs about ``n × (4·d + 131)`` bytes (float32 rows; ids, times, session
codes, flags; the id -> row dict): 1.67 GB for 1M frames of 384 dimensions, 167 MB for 100k. The
index of a store keeps at most ``WAGGLE_VECTOR_INDEX_BYTES`` (default :data:`DEFAULT_BUDGET` =
2 GiB; ``0`` turns the index off), evicting the least recently searched (mind, model) first; a
mind larger than the budget is searched by vec0. numpy is imported on the first vector search
(not at ``import waggle_store``); without numpy the lane is vec0's.

Threads: a search starts the scan (:meth:`VectorIndex.start`) before its keyword lane and reads
the result after it. A mind of :data:`INLINE_SCAN_BELOW` matrix entries or more is scanned on a
worker thread meanwhile (numpy and SQLite both release the GIL, so on two cores the search costs
about the slower lane instead of both), its product cut in chunks (:class:`_Product`) that the
searching thread also takes once its keyword lane is done, so the rest of a long scan runs on
both cores; a smaller mind is scanned at once on the caller's thread, where overlapping would
save little. The index's lock is held from the refresh to the scan's end (every chunk computed),
so the scan reads the rows of its own snapshot.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Connection, text
from sqlalchemy.orm import Session

from waggle_store.dialects.base import (
    T_EMBEDDINGS,
    T_FRAMES,
    T_MODELS,
    Executor,
    LaneFilter,
    LaneHit,
)
from waggle_store.dialects.common import (
    ATTRIBUTE_WIDENING,
    attribute_frames,
    checked_knn,
    current_hits,
    frame_filters,
    knn_attributes,
    run_lane,
)
from waggle_store.dialects.sqlite_veccodes import (
    BITS,
    COARSE_MIN_ROWS,
    Cancelled,
    SignCodes,
    calibrate,
    candidates,
    mode_from_env,
    nearest,
    supported,
)
from waggle_store.dialects.sqlite_vecload import (
    current_frames,
    load_chunks,
    load_rows,
    qualifying_sql,
)
from waggle_store.models.base import table_name
from waggle_store.workers import WorkerPool

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

LOG_TABLE: Final = table_name("frame_vectors_log")
#: Log entries kept; a cache further behind reloads in full.
LOG_KEEP: Final = 200_000
DEFAULT_BUDGET: Final = 2 * 1024**3
#: What the frame id -> row dict costs per entry (measured: ~106 bytes on CPython 3.11).
_ROW_ENTRY: Final = 110
#: A (mind, model) over the budget is not counted again for this long (the count costs a scan).
_TOO_BIG_RETRY_S: Final = 300.0



def _trigger(name: str, event: str, table: str, frame: str) -> str:
    return (f"CREATE TRIGGER IF NOT EXISTS {LOG_TABLE}_{name} AFTER {event} ON {table} "
            f"BEGIN INSERT INTO {LOG_TABLE}(frame_id) VALUES ({frame}); END")


LOG_DDL: Final = (
    f"CREATE TABLE IF NOT EXISTS {LOG_TABLE} (seq INTEGER PRIMARY KEY, frame_id INTEGER NOT NULL)",
    _trigger("frame_ad", "DELETE", T_FRAMES, "old.id"),
    _trigger("frame_au", "UPDATE OF content_hash, gop_id, created_at, mind_id", T_FRAMES,
             "new.id"),
    _trigger("manifest_ai", "INSERT", T_EMBEDDINGS, "new.frame_id"),
    _trigger("manifest_au", "UPDATE OF status, content_hash, model_id", T_EMBEDDINGS,
             "new.frame_id"),
    _trigger("manifest_ad", "DELETE", T_EMBEDDINGS, "old.frame_id"),
)


def ensure_log(session: Session) -> None:
    """Create the change log and its triggers (idempotent; in the caller's write transaction)."""
    for ddl in LOG_DDL:
        session.execute(text(ddl))


def log_changes(session: Session, frame_ids: Sequence[int]) -> None:
    """Append these frames to the change log and prune it to its newest :data:`LOG_KEEP`
    entries (a range delete on the primary key: only the entries that just aged out). A store
    without the log (written by an older version, no vector write since) has nothing to keep
    coherent: no index is built without the log."""
    if not frame_ids or not has_log(session):
        return
    session.execute(text(f"INSERT INTO {LOG_TABLE}(frame_id) VALUES (:id)"),
                    [{"id": int(i)} for i in frame_ids])
    session.execute(text(f"DELETE FROM {LOG_TABLE} WHERE seq <= "
                         f"(SELECT max(seq) FROM {LOG_TABLE}) - {LOG_KEEP}"))


def has_log(executor: Executor) -> bool:
    return bool(run_lane(executor, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :n",
                         {"n": LOG_TABLE}))


def _numpy() -> Any:
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


def _and(mask: Any, more: Any) -> Any:
    return more if mask is None else mask & more


def budget_from_env() -> int:
    raw = os.environ.get("WAGGLE_VECTOR_INDEX_BYTES", "").strip()
    return int(raw) if raw else DEFAULT_BUDGET


@dataclass
class _Lane:
    """The vectors of one (mind, model) as of log position ``seq``; rows ``[:n]`` are used,
    ``alive`` is False for the ``dead`` rows whose frame stopped qualifying (masked until the
    next full reload; a quarter of the rows dead, or a candidate the database refused, marks the
    lane ``stale``: reloaded in full by the next search). ``codes`` and ``factor``: the rows'
    codes and the candidate factor when the mind's calibration chose the coarse pass
    (:mod:`~waggle_store.dialects.sqlite_veccodes`), decided at ``decided_at`` rows with the
    ``recalls`` measured per factor (None: not calibrated). While ``building`` (the id of the
    process whose worker builds: a forked child has no such thread and builds anew), the rows
    written since the build began are collected in ``touched`` (coded again at its end)."""

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
    building: int = 0
    touched: set[int] | None = None
    dropped: bool = False  # left the index: a build in progress stops

    @property
    def nbytes(self) -> int:
        codes = 0 if self.codes is None else self.codes.nbytes
        return int(self.matrix.nbytes + self.ids.nbytes + self.ts.nbytes + self.gops.nbytes
                   + self.alive.nbytes) + _ROW_ENTRY * len(self.rows) + codes


class VectorIndex:
    """The in-process vector indexes of one SQLite store (see the module docstring)."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget_from_env() if budget is None else budget
        #: ``auto``: large minds calibrated for the coarse pass; ``exact``: every scan exact.
        self.mode = mode_from_env()
        self._lanes: OrderedDict[tuple[int, int], _Lane] = OrderedDict()
        self._too_big: dict[tuple[int, int], float] = {}
        self._builds: list[Future[None]] = []
        self._log_ready = False
        self._lock = threading.Lock()
        _LIVE.add(self)

    def _after_fork_in_child(self) -> None:
        """A forked child has none of its parent's threads: a lock one of them held (a scan, a
        refresh, a build's install) would never be released, and a lane one of them was
        changing may be half-changed. The child starts with a fresh lock and no lanes (each is
        loaded again on its first search; the parent's copies are freed with this)."""
        self._lock = threading.Lock()
        self._lanes = OrderedDict()
        self._too_big = {}
        self._builds = []

    def settle(self) -> None:
        """Wait for the coarse-pass builds begun so far (their errors are raised here)."""
        while self._builds:
            self._builds.pop(0).result()

    def clear(self) -> None:
        """Forget every loaded (mind, model) (frees their memory; the next search reloads)."""
        with self._lock:
            for lane in self._lanes.values():
                lane.dropped = True
            self._lanes.clear()
            self._too_big.clear()

    @property
    def nbytes(self) -> int:
        return sum(lane.nbytes for lane in self._lanes.values())

    # -- search ---------------------------------------------------------------------------

    def search(self, executor: Executor, model_id: int, vector: Sequence[float],
               where: LaneFilter, mind_id: int, limit: int) -> list[LaneHit] | None:
        """The lane's hits for one mind, or None when this index cannot answer (no numpy, no
        log, over the budget, a snapshot older than the cache): the caller runs vec0's KNN."""
        np_, seq, low = self._position(executor)
        if np_ is None:
            return None
        with self._lock:
            lane = self._lane(executor, np_, (mind_id, model_id), seq, low)
            if lane is None:
                return None
            return self._search(executor, np_, lane, model_id, vector, where, mind_id, limit)

    def start(self, executor: Executor, model_id: int, vector: Sequence[float],
              where: LaneFilter, mind_id: int, limit: int) -> _PendingScan | None:
        """:meth:`search` begun: the change-log check and any refresh run here, on
        ``executor``; the scan runs on a worker thread (numpy releases the GIL) while the
        caller uses the connection; :meth:`_PendingScan.result` verifies the candidates on it.
        None: this index cannot answer (as :meth:`search`)."""
        np_, seq, low = self._position(executor)
        if np_ is None:
            return None
        # The lock is taken here and released by the scan when it ends (a ``threading.Lock``
        # may be released by another thread): no refresh can move the rows under the scan, and
        # the candidates are those of this search's snapshot.
        self._lock.acquire()
        held = True
        try:
            lane = self._lane(executor, np_, (mind_id, model_id), seq, low)
            if lane is None:
                return None
            scan: Future[_Scan] | _Scan | None = None
            product = None
            waiting = not _embedded(vector)
            if waiting or lane.n * lane.dims >= INLINE_SCAN_BELOW:
                # The coarse pass (codes, then the candidates rescored) is not cut in chunks:
                # its passes read 192 bytes a row, short beside the keyword lane. A query still
                # being embedded is waited for on the worker, beside the keyword lane, whatever
                # the mind's size (and its product is the worker's alone).
                product = (None if waiting or lane.codes is not None
                           else _Product.of(np_, lane, vector))
                try:
                    scan = SCAN_THREADS.submit(self._scan_then_release, np_, lane, vector, where,
                                             limit, product)
                    held = False  # the scan releases it
                except RuntimeError:  # the interpreter is shutting down: no new threads
                    scan = product = None
            if scan is None:
                scan = _scan(np_, lane, vector, where, limit)
        finally:
            if held:
                self._lock.release()
        return _PendingScan(self, executor, scan, model_id, vector, where, mind_id, limit, lane,
                            product)

    def _scan_then_release(self, np_: Any, lane: _Lane, vector: Sequence[float],
                           where: LaneFilter, limit: int, product: _Product | None) -> _Scan:
        try:
            return _scan(np_, lane, vector, where, limit, product)
        finally:
            try:
                if product is not None:
                    # Whatever happened above, no chunk is left running or untaken (the search's
                    # thread may never come to help: its keyword lane failed) when the rows are
                    # unlocked for a refresh.
                    product.finish()
            finally:
                self._lock.release()

    def _position(self, executor: Executor) -> tuple[Any, int, int]:
        """numpy (None: no numpy, no log or no budget) and the snapshot's log bounds."""
        np_ = _numpy() if self.budget > 0 else None
        if np_ is None or not self._has_log(executor):
            return None, 0, 0
        # Two subqueries: SQLite answers a lone min() or max() from the primary key's ends,
        # but ``SELECT min(seq), max(seq)`` scans the whole log (7 ms at its 200,000 entries).
        low, high = run_lane(executor, f"SELECT (SELECT min(seq) FROM {LOG_TABLE}), "
                             f"(SELECT max(seq) FROM {LOG_TABLE})", {})[0]
        return np_, int(high or 0), int(low or 0)

    def _lane(self, executor: Executor, np_: Any, key: tuple[int, int], seq: int,
              low: int) -> _Lane | None:
        """The (mind, model) as of ``seq``, refreshed or loaded if need be (under the lock)."""
        lane = self._current(executor, np_, key, seq, low)
        if lane is not None:
            self._lanes.move_to_end(key)
            self._decide(np_, key, lane)
        return lane

    def _decide(self, np_: Any, key: tuple[int, int], lane: _Lane) -> None:
        """Build a large mind's codes and calibrate it for the coarse pass, the first time and
        whenever it has doubled since, on :data:`CODES_THREAD` (under the lock)."""
        if (self.mode == "exact" or lane.building == os.getpid() or not supported(np_)
                or lane.n < max(COARSE_MIN_ROWS, 2 * lane.decided_at)):
            return
        lane.building, lane.touched = os.getpid(), set()
        try:
            self._builds = [b for b in self._builds if not b.done()]
            self._builds.append(CODES_THREAD.submit(
                self._build, np_, key, lane, lane.n, lane.matrix, lane.alive[:lane.n].copy()))
        except RuntimeError:  # the interpreter is shutting down: no new threads
            lane.building, lane.touched = 0, None

    def _build(self, np_: Any, key: tuple[int, int], lane: _Lane, n: int, matrix: Any,
               alive: Any) -> None:
        """The codes of rows ``[:n]`` and the calibration, without the lock (searches go on
        with the exact scan); then, under it, the rows written meanwhile coded again and the
        result installed — unless the lane was evicted or reloaded since (the build stops at its
        next slice: a closed store's process does not wait for it at exit)."""
        factor: int | None = None
        recalls: dict[int, float] | None = None
        codes: SignCodes | None = None

        def keep_going() -> bool:
            return not lane.dropped

        try:
            codes = SignCodes.of(np_, matrix[:n], n, keep_going)
            factor, recalls = calibrate(np_, codes, matrix[:n], alive, keep_going)
        except Cancelled:
            return  # the lane is gone (``finally`` below installs nothing)
        finally:
            with self._lock:
                touched, lane.touched, lane.building = lane.touched or set(), None, 0
                lane.decided_at = n  # a failed build is tried again once the mind doubles
                if self._lanes.get(key) is lane:
                    lane.recalls = recalls
                    lane.factor = factor
                    lane.codes = None
                    if codes is not None and factor is not None:
                        codes.grow(len(lane.ids))
                        redo = np_.array(sorted(touched | set(range(n, lane.n))), np_.int64)
                        if len(redo):
                            codes.set_rows(redo, lane.matrix[redo])
                        lane.codes = codes

    def _has_log(self, executor: Executor) -> bool:
        if not self._log_ready:
            self._log_ready = has_log(executor)
        return self._log_ready

    def _current(self, executor: Executor, np_: Any, key: tuple[int, int], seq: int,
                 low: int) -> _Lane | None:
        lane = self._lanes.get(key)
        if lane is not None and lane.seq == seq and not lane.stale:
            return lane
        if lane is not None and lane.seq > seq:
            return None  # a newer snapshot refreshed it: this older one asks vec0
        # A write session may hold uncommitted log entries: it reads a current cache, never
        # fills one (a rollback would leave the cache ahead of the database).
        if not isinstance(executor, Connection):
            return None
        if lane is not None and not lane.stale and lane.seq + 1 >= low:
            changed = [int(r[0]) for r in run_lane(
                executor, f"SELECT DISTINCT frame_id FROM {LOG_TABLE} WHERE seq > :s",
                {"s": lane.seq})]
            if len(changed) <= max(1000, lane.n // 10):
                self._apply(executor, np_, lane, key, changed)
                lane.seq = seq
                return lane
        replaced = self._lanes.pop(key, None)
        if replaced is not None:
            replaced.dropped = True
        retry = self._too_big.get(key)
        if retry is not None and time.monotonic() < retry:
            return None
        loaded = self._load(executor, np_, key, seq)
        if loaded is None:
            self._too_big[key] = time.monotonic() + _TOO_BIG_RETRY_S
            return None
        self._too_big.pop(key, None)
        self._lanes[key] = loaded
        return loaded

    def _search(self, executor: Executor, np_: Any, lane: _Lane, model_id: int,
                vector: Sequence[float], where: LaneFilter, mind_id: int,
                limit: int) -> list[LaneHit]:
        scan = _scan(np_, lane, vector, where, limit)
        attributes, restricted = where.attributes, False
        while True:
            hits = self._checked(executor, lane, model_id, scan, where, mind_id)
            if len(hits) >= limit or scan.k >= scan.available:
                return hits[:limit]
            if attributes is not None and not restricted:
                # The where= attributes thinned the page out: the same scan over the frames
                # the database says have them (one statement, from the metadata index), rather
                # than verifying ever wider pages of mostly failing candidates.
                allowed = attribute_frames(executor, attributes, mind_id)
                scan = _restrict(np_, lane, scan, allowed, limit)
                restricted = True
                continue
            scan = _widen(np_, lane, scan)

    def _checked(self, executor: Executor, lane: _Lane, model_id: int, scan: _Scan,
                 where: LaneFilter, mind_id: int) -> list[LaneHit]:
        """The scan's candidates that the database confirms (see :meth:`_verify`)."""
        if not scan.pairs:
            return []
        hits, refused = self._verify(executor, model_id, scan.pairs, where, mind_id)
        if refused:
            lane.stale = True  # the log missed a change: reload in full next time
        return hits

    @staticmethod
    def _verify(executor: Executor, model_id: int, pairs: list[list[Any]], where: LaneFilter,
                mind_id: int) -> tuple[list[LaneHit], bool]:
        """The candidates that the database confirms, with their frames, in the given order,
        and whether it refused any (the cache missed a change). A frame failing the where=
        attributes is left out but not refused: the index holds no attributes, so the scan's
        caller widens the scan until the page is full.

        The statement gets the candidates' ids alone and returns each one's position in
        ``pairs`` where the distance goes; the distance is the scan's own, taken from ``pairs``
        (formatting 40 floats into the JSON parameter cost more than the rest of the call)."""
        params: dict[str, Any] = {"c": json.dumps([pair[0] for pair in pairs]),
                                  "model_id": model_id, "check_mind": mind_id}
        filters = frame_filters(LaneFilter([mind_id], where.gop_id, where.since, where.until),
                                params, alias="m")
        source = ("(SELECT j.key AS pos, m.id AS id FROM json_each(:c) j "
                  f"JOIN {T_FRAMES} m ON m.id = j.value WHERE {filters}) c")
        attributes = knn_attributes(where, params, "sqlite")
        rows = run_lane(executor, checked_knn(source, "id", "pos", attributes) + " ORDER BY c.pos",
                        params)
        hits = current_hits(executor, rows, model_id, attributes is not None)
        for hit in hits:  # (the hits are this lane's own until returned)
            hit.score = pairs[int(hit.score)][1]
        refused = len(rows) < len(pairs) or not all(r[-2] for r in rows)
        return hits, refused

    # -- loading --------------------------------------------------------------------------

    def _load(self, executor: Executor, np_: Any, key: tuple[int, int], seq: int) -> _Lane | None:
        """Read the (mind, model) in full (:mod:`~waggle_store.dialects.sqlite_vecload`), or None
        if it would not fit in the budget (least recently searched lanes are evicted first)."""
        mind_id, model_id = key
        current = current_frames(executor, mind_id, model_id)
        count = len(current)
        dims = self._dims(executor, model_id)
        # A mind large enough to be calibrated may take codes too (BITS / 8 bytes a row).
        codes = BITS // 8 if self.mode == "auto" and count >= COARSE_MIN_ROWS else 0
        need = count * (4 * dims + 21 + _ROW_ENTRY + codes)
        if need > self.budget:
            return None
        others = sum(lane.nbytes for k, lane in self._lanes.items() if k != key)
        while self._lanes and others + need > self.budget:
            _, evicted = self._lanes.popitem(last=False)
            evicted.dropped = True
            others -= evicted.nbytes
        lane = _Lane(seq, dims, np_.empty((count, dims), np_.float32), np_.empty(count, np_.int64),
                     np_.empty(count, np_.float64), np_.empty(count, np_.int32),
                     np_.zeros(count, np_.bool_))
        valid_ids = np_.fromiter((int(r[0]) for r in current), np_.int64, count)
        codes = np_.fromiter((lane.gop_codes.setdefault(str(r[1]), len(lane.gop_codes))
                              for r in current), np_.int32, count)
        if not load_chunks(executor, np_, lane, mind_id, model_id, valid_ids, codes):
            load_rows(executor, np_, lane, mind_id, model_id)
        return lane

    @staticmethod
    def _dims(executor: Executor, model_id: int) -> int:
        return int(run_lane(executor, f"SELECT dimensions FROM {T_MODELS} WHERE id = :m",
                            {"m": model_id})[0][0])

    def _apply(self, executor: Executor, np_: Any, lane: _Lane, key: tuple[int, int],
               changed: Sequence[int]) -> None:
        """Bring the frames of ``changed`` up to date: re-read, overwrite, append or drop (a
        dropped row stays masked; once a quarter of the rows are, the next search reloads)."""
        written: list[int] = []
        for start in range(0, len(changed), 500):
            chunk = changed[start:start + 500]
            found = {int(r[0]): r for r in run_lane(
                executor, qualifying_sql(key[1], True),
                {"mind_id": key[0], "model_id": key[1], "ids": json.dumps(list(chunk))})}
            for frame_id in chunk:
                row = lane.rows.get(frame_id)
                now = found.get(frame_id)
                if now is None:
                    if row is not None:
                        lane.alive[row] = False
                        del lane.rows[frame_id]
                        lane.dead += 1
                    continue
                if row is None:
                    row = self._append_row(np_, lane)
                    lane.rows[frame_id] = row
                lane.matrix[row] = np_.frombuffer(bytes(now[1]), dtype="<f4")
                written.append(row)
                lane.ids[row] = frame_id
                lane.ts[row] = float(now[3])
                lane.gops[row] = lane.gop_codes.setdefault(str(now[2]), len(lane.gop_codes))
                lane.alive[row] = True
        if lane.touched is not None:
            lane.touched.update(written)
        if lane.codes is not None and written:
            lane.codes.set_rows(np_.array(written, np_.int64), lane.matrix[written])
        if lane.dead > 1000 and lane.dead * 4 > lane.n:
            lane.stale = True

    @staticmethod
    def _append_row(np_: Any, lane: _Lane) -> int:
        if lane.n == len(lane.ids):
            grow = max(16, lane.n // 4)
            lane.matrix = np_.concatenate([lane.matrix, np_.empty((grow, lane.dims), np_.float32)])
            lane.ids = np_.concatenate([lane.ids, np_.zeros(grow, np_.int64)])
            lane.ts = np_.concatenate([lane.ts, np_.zeros(grow, np_.float64)])
            lane.gops = np_.concatenate([lane.gops, np_.zeros(grow, np_.int32)])
            lane.alive = np_.concatenate([lane.alive, np_.zeros(grow, np_.bool_)])
            if lane.codes is not None:
                lane.codes.grow(len(lane.ids))
        lane.n += 1
        return lane.n - 1


#: The process's live indexes (weakly held: a closed and dropped store's index goes away).
_LIVE: weakref.WeakSet[VectorIndex] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for index in list(_LIVE):
        index._after_fork_in_child()


os.register_at_fork(after_in_child=_reset_after_fork)


# -- the scan ---------------------------------------------------------------------------------

#: Below this many matrix entries (rows × dimensions: ~5,000 frames of 384 d, under ~0.3 ms of
#: scan) the scan runs on the calling thread: overlapping it would save a few percent of a search
#: (the hand-off to a worker and back costs ~0.02–0.05 ms), not worth a thread per process for
#: the many small minds.
INLINE_SCAN_BELOW: Final = 2_000_000
#: The product is computed in chunks of this many matrix entries (~2,600 rows of 384 d, ~4 MB,
#: ~0.2 ms): small enough that two threads sharing the last of a scan finish close together,
#: large enough that taking a chunk (a lock, a slice) costs nothing beside computing it.
SCAN_CHUNK_ENTRIES: Final = 1_000_000

#: The process's scan threads (started on first use, replaced in a forked child). Few: each scan
#: is one pass over memory (bandwidth-bound), so more threads than cores only queue.
SCAN_THREADS: Final = WorkerPool("waggle-vector-scan", min(4, os.cpu_count() or 1))
#: The coarse pass is used while the candidates it rescores are under this share (1/n) of the
#: rows that qualify; with fewer rows (narrow filters) the exact scan costs about as much.
RESCORED_SHARE: Final = 4
#: Where minds' coarse-pass codes are built and calibrated, one at a time (seconds of CPU at a
#: million rows, once per mind and doubling: never on a search's way).
CODES_THREAD: Final = WorkerPool("waggle-vector-codes", 1)


@dataclass(frozen=True)
class _Scan:
    """One scan's result: ``pairs`` = the ``k`` nearest qualifying rows as [frame id, cosine
    distance], nearest first (ties by id); ``neg`` = every row's negated similarity (``inf`` where
    a filter excludes it), kept to widen the page; ``available`` = rows that qualify. A coarse
    pass has no ``neg``: it keeps its unit query and ``mask`` (None: every row qualifies) for an
    exact scan should the page need widening."""

    pairs: list[list[Any]]
    neg: Any
    available: int
    k: int
    query: Any = None
    mask: Any = None


def _embedded(vector: Sequence[float]) -> bool:
    """False for a query vector still being embedded (a search's pending query, which has a
    ``done()``): reading it would wait, which only a worker should do."""
    done = getattr(vector, "done", None)
    return done is None or bool(done())


def _unit(np_: Any, vector: Sequence[float]) -> Any:
    """The query as a float32 unit vector; None for a zero vector (it is near nothing)."""
    # A sequence other than a list (a search's pending query) is read through its own iterator
    # first: numpy would take one that raises while read for a scalar and hide the error.
    q = np_.asarray(vector if isinstance(vector, list) else list(vector), dtype=np_.float32)
    norm = float(np_.linalg.norm(q))
    return None if norm == 0.0 else q / norm


class _Product:
    """A scan's matrix-vector product, negated (the nearest come first), in chunks that any
    thread may take: the scan's worker from the start and the searching thread once its keyword
    lane has ended (:meth:`_PendingScan.result`), so what is left of the product when the
    keyword lane ends runs on both cores (a second thread makes the memory-bound product ~1.6x
    faster here) instead of keeping the search waiting for one."""

    def __init__(self, np_: Any, matrix: Any, q: Any) -> None:
        self._np, self._matrix, self._q = np_, matrix, q
        self.neg = np_.empty(len(matrix), np_.float32)
        self._rows = max(1, SCAN_CHUNK_ENTRIES // max(1, matrix.shape[1]))
        self._lock = threading.Lock()
        self._next = 0  # the first row no thread has taken
        self._left = len(matrix)  # rows not computed (or abandoned) yet
        self._done = threading.Event()
        self._error: BaseException | None = None
        if self._left == 0:
            self._done.set()

    @classmethod
    def of(cls, np_: Any, lane: _Lane, vector: Sequence[float]) -> _Product | None:
        """The product of the lane's rows with the query; None when the scan finds nothing
        (a zero query, an empty lane)."""
        q = _unit(np_, vector)
        return None if q is None or lane.n == 0 else cls(np_, lane.matrix[:lane.n], q)

    def work(self) -> None:
        """Compute chunks until none is left to take. A failing chunk abandons the untaken
        ones (:meth:`wait` raises) and raises here."""
        np_, n = self._np, len(self.neg)
        while True:
            with self._lock:
                start = self._next
                if start >= n:
                    return
                self._next = end = min(n, start + self._rows)
            try:
                # einsum, not ``@``: a single-threaded pass per thread. The product is
                # memory-bound; BLAS's own threads would only contend for the cores with the
                # keyword lane running beside it (benchmarks/README.md).
                chunk = np_.einsum("ij,j->i", self._matrix[start:end], self._q,
                                   out=self.neg[start:end])
                # Negated, the nearest come first: numpy's introselect is ~30x slower for a
                # k-th element at the top end of an array of many equal values (the hashing
                # embedder's many exact 0.0 similarities: 28 ms against 0.9 ms at 1M).
                np_.negative(chunk, out=chunk)
            except BaseException as exc:
                with self._lock:
                    self._error = self._error or exc
                    self._abandon_untaken()
                raise
            finally:
                with self._lock:
                    self._left -= end - start
                    if self._left == 0:
                        self._done.set()

    def wait(self) -> Any:
        """The negated similarities, once every chunk is computed."""
        self._done.wait()
        if self._error is not None:
            raise RuntimeError("the vector scan failed") from self._error
        return self.neg

    def cancel(self) -> None:
        """No chunk is to be taken any more (the scan found it needs none: an unknown session)."""
        with self._lock:
            self._abandon_untaken()

    def _abandon_untaken(self) -> None:
        """The chunks no thread has taken count as done without being computed (under the
        lock)."""
        self._left -= len(self.neg) - self._next
        self._next = len(self.neg)
        if self._left == 0:
            self._done.set()

    def finish(self) -> None:
        """Take what is left, then wait for the chunks other threads are computing (errors are
        the reader's: :meth:`wait`)."""
        try:
            self.work()
        finally:
            self._done.wait()


def _scan(np_: Any, lane: _Lane, vector: Sequence[float], where: LaneFilter,
          limit: int, product: _Product | None = None) -> _Scan:
    """The scan of one (mind, model): a float32 matrix-vector product and the top k, or the
    coarse pass where the mind's calibration chose it. ``product``: the product begun
    (:meth:`VectorIndex.start`), which this thread helps finish; without it, it is computed
    here."""
    n = lane.n
    # One pass over the matrix; the filters are masks over the metadata arrays, built only
    # when something narrows the mind (each costs a pass over n values, not n × d).
    mask = None if lane.dead == 0 else lane.alive[:n]
    if where.gop_id is not None:
        code = lane.gop_codes.get(where.gop_id)
        if code is None:
            if product is not None:
                product.cancel()
            return _Scan([], None, 0, 0)
        mask = _and(mask, lane.gops[:n] == code)
    if where.since is not None:
        mask = _and(mask, lane.ts[:n] >= where.since.timestamp())
    if where.until is not None:
        mask = _and(mask, lane.ts[:n] <= where.until.timestamp())
    available = n if mask is None else int(np_.count_nonzero(mask))
    # The where= attributes are not in the index: the database checks them with the candidates
    # (_verify), so the scan starts wider and widens while they thin the page out.
    k = min(max(limit, 1) * (1 if where.attributes is None else ATTRIBUTE_WIDENING), available)
    # Where the filters leave few rows, rescoring the candidates would cost about as much as
    # the exact scan of the mind: the exact scan.
    if (product is None and lane.codes is not None and lane.factor is not None
            and RESCORED_SHARE * candidates(k, lane.factor) < available):
        return _coarse(np_, lane, lane.codes, lane.factor, vector, mask, available, k)
    if product is None:
        product = _Product.of(np_, lane, vector)
        if product is None:
            return _Scan([], None, 0, 0)
    return _top(np_, lane, _negated(np_, product, mask), available, k)


def _negated(np_: Any, product: _Product, mask: Any) -> Any:
    """The product computed (this thread helping), negated, ``inf`` where ``mask`` excludes."""
    product.work()
    neg = product.wait()  # negated similarities (see _Product.work)
    if mask is not None:
        neg[~mask] = np_.inf
    return neg


def _coarse(np_: Any, lane: _Lane, codes: SignCodes, factor: int, vector: Sequence[float],
            mask: Any, available: int, k: int) -> _Scan:
    """The k nearest by the coarse pass: the candidates' exact distances, as the exact scan
    computes them (one float32 dot product a row), ordered the same way."""
    q = _unit(np_, vector)
    if q is None:
        return _Scan([], None, 0, 0)
    rows, sims = nearest(np_, codes, lane.matrix, q, lane.n, mask, k, factor)
    return _Scan(_pairs(np_, lane, rows, 1.0 - sims.astype(np_.float64), k), None, available, k,
                 q, mask)


def _widen(np_: Any, lane: _Lane, scan: _Scan) -> _Scan:
    """The next page of candidates (4× as many) of the same scan (after a coarse pass, of the
    exact scan: a page that needs widening is rare, the database having refused candidates)."""
    neg = scan.neg
    if neg is None:
        neg = _negated(np_, _Product(np_, lane.matrix[:lane.n], scan.query), scan.mask)
    return _top(np_, lane, neg, scan.available, min(scan.k * 4, scan.available))


def _restrict(np_: Any, lane: _Lane, scan: _Scan, frame_ids: Sequence[int],
              limit: int) -> _Scan:
    """The scan's rows narrowed to ``frame_ids`` (the frames passing the where= attributes):
    its product reused (after a coarse pass, the exact product computed), the others' distances
    set to ``inf``, the first page of ``limit`` taken."""
    neg = scan.neg
    if neg is None:
        neg = _negated(np_, _Product(np_, lane.matrix[:lane.n], scan.query), scan.mask)
    allowed = np_.isin(lane.ids[:lane.n], np_.asarray(frame_ids, dtype=lane.ids.dtype))
    neg = np_.where(allowed, neg, np_.inf)
    available = int(np_.count_nonzero(np_.isfinite(neg)))
    return _top(np_, lane, neg, available, min(max(limit, 1), available))


def _top(np_: Any, lane: _Lane, neg: Any, available: int, k: int) -> _Scan:
    if k <= 0:
        return _Scan([], neg, available, k)
    n = len(neg)
    top = np_.argpartition(neg, k - 1)[:k] if k < n else np_.arange(n)
    top = top[np_.isfinite(neg[top])]
    return _Scan(_pairs(np_, lane, top, 1.0 + neg[top].astype(np_.float64)), neg, available, k)


def _pairs(np_: Any, lane: _Lane, rows: Any, distance: Any,
           k: int | None = None) -> list[list[Any]]:
    """[frame id, cosine distance] of the ``k`` nearest of ``rows`` (None: all), nearest first,
    ties by frame id."""
    ids = lane.ids[rows]
    order = np_.lexsort((ids, distance))[:k]
    return [[i, d] for i, d in zip(ids[order].tolist(), distance[order].tolist(), strict=True)]


class _PendingScan:
    """A scan begun by :meth:`VectorIndex.start`; :meth:`result` waits for it and verifies."""

    def __init__(self, index: VectorIndex, executor: Executor, scan: Future[_Scan] | _Scan,
                 model_id: int, vector: Sequence[float], where: LaneFilter, mind_id: int,
                 limit: int, lane: _Lane, product: _Product | None = None) -> None:
        self._index, self._executor, self._scan = index, executor, scan
        self._model_id, self._vector, self._where = model_id, vector, where
        self._mind_id, self._limit, self._lane = mind_id, limit, lane
        self._product = product

    def result(self) -> list[LaneHit] | None:
        """The hits (as :meth:`VectorIndex.search`), None: vec0 must answer. The calling thread
        first helps with what is left of the product (its keyword lane is done)."""
        if self._product is not None:
            self._product.work()
        scan = self._scan.result() if isinstance(self._scan, Future) else self._scan
        hits = self._index._checked(self._executor, self._lane, self._model_id, scan,
                                    self._where, self._mind_id)
        if len(hits) >= self._limit or scan.k >= scan.available:
            return hits[:self._limit]
        # The database refused candidates (the log missed a change: the lane is marked stale):
        # the whole search again, on the refreshed rows, widening under the lock.
        return self._index.search(self._executor, self._model_id, self._vector, self._where,
                                  self._mind_id, self._limit)

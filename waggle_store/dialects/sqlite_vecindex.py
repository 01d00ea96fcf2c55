"""The SQLite vector lane's in-process index: the store's side of
:mod:`waggle_store.vectorindex` — which rows it holds, how they are kept current, and the SQL
that every hit passes before it is returned.

sqlite-vec's ``vec0`` KNN is a brute-force scan through the virtual-table interface (~0.9 µs a
row); the same exact scan as one numpy matrix-vector product costs a tenth of that, and a large
mind's coarse pass less again. The result is vec0's: exact cosine distances (vectors are stored
unit-normalised), order ``(distance, id)``.

The tables stay the truth. A (mind, model)'s rows are trusted as of a position in the change
log (:mod:`~waggle_store.dialects.sqlite_veclog`). A search reads the log's bounds in its own
read transaction: at the rows' position, the rows are that snapshot's; ahead, the frames logged
since are re-read (an incremental refresh, the common case after an ingest); too far ahead (the
log was pruned past it, or too many changes) the mind is reloaded in full; behind (another
thread's newer snapshot refreshed the rows), vec0 answers. A write session never loads or
refreshes rows (a rollback would leave them ahead of the database).

Every search verifies its candidates in SQL (frame exists, in the mind and the filters, manifest
ready for the model with the frame's current hash, model still active: the ``checked_knn`` join
that also reads the page's frames), so even rows that missed a change return no deleted,
changed or foreign frame; a refused candidate marks the rows for a full reload and the search
widens until its page is full.

The search runs on the caller's thread. The rows are read and changed under the index's one
lock (:mod:`waggle_store.vectorindex.cache`: also the memory budget and fork safety), which a
search holds from the log check to the end of its scan, never across the verification. The
first search of a mind loads it (and for a large mind builds its coarse-pass codes), so other
searches of the same store wait for that once.

Settings: ``WAGGLE_VECTOR_INDEX_BYTES`` (default 2 GiB; ``0`` turns the index off) and
``WAGGLE_VECTOR_INDEX_MODE`` (``auto`` or ``exact``). Without numpy, without the change log or
over the budget, :meth:`VectorIndex.search` returns None and the adapter runs vec0's KNN.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from waggle_store.dialects.base import T_FRAMES, T_MODELS, Executor, LaneFilter, LaneHit
from waggle_store.dialects.common import (
    ATTRIBUTE_WIDENING,
    attribute_frames,
    checked_knn,
    current_hits,
    frame_filters,
    knn_attributes,
    run_lane,
)
from waggle_store.dialects.sqlite_vecload import changed_rows_sql, current_frames, load
from waggle_store.dialects.sqlite_veclog import (
    LOG_KEEP,
    LOG_TABLE,
    changed_since,
    ensure_log,
    has_log,
    log_bounds,
    log_changes,
)
from waggle_store.vectorindex import budget_from_env, mode_from_env, numpy_or_none, topk
from waggle_store.vectorindex.cache import Key, RowsCache, State
from waggle_store.vectorindex.rows import Rows, bytes_needed

__all__ = ["LOG_KEEP", "LOG_TABLE", "VectorIndex", "ensure_log", "has_log", "log_changes"]


def _ts(at: datetime | None) -> float | None:
    return None if at is None else at.timestamp()


class VectorIndex:
    """The in-process vector index of one SQLite store (see the module docstring)."""

    def __init__(self, budget: int | None = None) -> None:
        #: ``auto``: large minds calibrated for the coarse pass; ``exact``: every scan exact.
        self.mode = mode_from_env()
        self.cache = RowsCache(budget_from_env() if budget is None else budget)
        self._log_ready = False

    @property
    def budget(self) -> int:
        return self.cache.budget

    @budget.setter
    def budget(self, value: int) -> None:
        self.cache.budget = value

    @property
    def nbytes(self) -> int:
        return self.cache.nbytes

    def clear(self) -> None:
        """Forget every loaded (mind, model) (frees their memory; the next search reloads)."""
        self.cache.clear()

    def loaded(self) -> dict[Key, Rows]:
        """The (mind, model)s this process holds, least recently searched first."""
        return self.cache.loaded()

    def search(self, executor: Executor, model_id: int, vector: Sequence[float],
               where: LaneFilter, mind_id: int, limit: int) -> list[LaneHit] | None:
        """The lane's hits for one mind, or None when this index cannot answer (no numpy, no
        log, over the budget, a snapshot older than the rows held): the caller runs vec0's
        KNN."""
        np_ = numpy_or_none() if self.cache.budget > 0 else None
        if np_ is None or not self._has_log(executor):
            return None
        low, seq = log_bounds(executor)
        # Read before taking the lock: a query still being embedded is waited for here.
        query = vector if isinstance(vector, list) else list(vector)
        key = (mind_id, model_id)
        state = self.cache.state()
        rows_filter = topk.RowFilter(where.gop_id, _ts(where.since), _ts(where.until))
        # The where= attributes are not in the index: the database checks them with the
        # candidates (_verify), so the first page is wider.
        attributes = where.attributes
        k, exact = limit * (1 if attributes is None else ATTRIBUTE_WIDENING), False
        while True:
            with state.lock:
                rows = self._current(executor, np_, state, key, seq, low)
                if rows is None:
                    return None
                found = topk.top_k(np_, rows, query, rows_filter, k, exact)
            hits, refused = self._verify(executor, model_id, found.pairs, where, mind_id)
            if refused:
                with state.lock:
                    rows.stale = True  # the log missed a change: reloaded by the next scan
            if len(hits) >= limit or found.k >= found.available:
                return hits[:limit]
            if attributes is not None and rows_filter.frame_ids is None:
                # The attributes thinned the page out: the same scan over the frames the
                # database says have them (one statement, from the metadata index), rather
                # than verifying ever wider pages of mostly failing candidates.
                allowed = attribute_frames(executor, attributes, mind_id)
                rows_filter = dataclasses.replace(rows_filter, frame_ids=tuple(allowed))
                k = limit
                continue
            # Candidates were refused: the next page of them (4x as many), by the exact scan.
            k, exact = min(found.k * 4, found.available), True

    def _has_log(self, executor: Executor) -> bool:
        if not self._log_ready:
            self._log_ready = has_log(executor)
        return self._log_ready

    def _current(self, executor: Executor, np_: Any, state: State, key: Key, seq: int,
                 low: int) -> Rows | None:
        """The (mind, model)'s rows as of ``seq``, refreshed or loaded if need be (under the
        lock); None: vec0 answers."""
        rows = self.cache.get(state, key)
        if rows is not None and rows.seq == seq and not rows.stale:
            return rows
        if rows is not None and rows.seq > seq:
            return None  # a newer snapshot refreshed them: this older one asks vec0
        if not isinstance(executor, Connection):
            return None  # a write session: it may hold uncommitted log entries
        if rows is not None and not rows.stale and rows.seq + 1 >= low:
            changed = changed_since(executor, rows.seq)
            if len(changed) <= max(1000, rows.n // 10):
                self._apply(executor, np_, rows, key, changed)
                rows.seq = seq
                topk.prepare_coarse(np_, rows, self.mode)  # a mind that has doubled
                self.cache.trim(state, key)
                return rows
        if not self.cache.may_load(state, key):
            return None
        current = current_frames(executor, *key)
        dims = int(run_lane(executor, f"SELECT dimensions FROM {T_MODELS} WHERE id = :m",
                            {"m": key[1]})[0][0])
        coded = self.mode == "auto" and len(current) >= topk.COARSE_MIN_ROWS
        loaded = self.cache.load(state, key, bytes_needed(len(current), dims, coded),
                                 lambda: load(executor, np_, *key, seq, dims, current))
        if loaded is not None:
            topk.prepare_coarse(np_, loaded, self.mode)
        return loaded

    @staticmethod
    def _apply(executor: Executor, np_: Any, rows: Rows, key: Key,
               changed: Sequence[int]) -> None:
        """Bring the frames of ``changed`` up to date: re-read and overwritten, appended or
        masked (once a quarter of the rows are masked, the next search reloads)."""
        written: list[int] = []
        for start in range(0, len(changed), 500):
            chunk = changed[start:start + 500]
            found = {int(r[0]): r for r in run_lane(
                executor, changed_rows_sql(key[1]),
                {"mind_id": key[0], "model_id": key[1], "ids": json.dumps(list(chunk))})}
            for frame_id in chunk:
                now = found.get(frame_id)
                if now is None:
                    rows.drop(frame_id)
                else:
                    written.append(rows.put(np_, frame_id, np_.frombuffer(bytes(now[1]), "<f4"),
                                            str(now[2]), float(now[3])))
        rows.recode(np_, written)
        if rows.dead > 1000 and rows.dead * 4 > rows.n:
            rows.stale = True

    @staticmethod
    def _verify(executor: Executor, model_id: int, pairs: list[list[Any]], where: LaneFilter,
                mind_id: int) -> tuple[list[LaneHit], bool]:
        """The candidates that the database confirms, with their frames, in the given order,
        and whether it refused any (the rows missed a change). A frame failing the where=
        attributes is left out but not refused: the index holds no attributes.

        The statement gets the candidates' ids alone and returns each one's position in
        ``pairs``; the distance is the scan's own, taken from ``pairs``."""
        if not pairs:
            return [], False
        params: dict[str, Any] = {"c": json.dumps([pair[0] for pair in pairs]),
                                  "model_id": model_id, "check_mind": mind_id}
        filters = frame_filters(LaneFilter([mind_id], where.gop_id, where.since, where.until),
                                params, alias="m")
        source = ("(SELECT j.key AS pos, m.id AS id FROM json_each(:c) j "
                  f"JOIN {T_FRAMES} m ON m.id = j.value WHERE {filters}) c")
        attributes = knn_attributes(where, params, "sqlite")
        found = run_lane(executor, checked_knn(source, "id", "pos", attributes) + " ORDER BY c.pos",
                         params)
        hits = current_hits(executor, found, model_id, attributes is not None)
        for hit in hits:  # (the hits are this lane's own until returned)
            hit.score = pairs[int(hit.score)][1]
        refused = len(found) < len(pairs) or not all(r[-2] for r in found)
        return hits, refused

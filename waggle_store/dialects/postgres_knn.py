"""How the Postgres vector lane finds a mind's nearest vectors: an exact scan of a small mind, the
HNSW index (with a candidate list that follows the page) above that size.

HNSW misses neighbours that an exact scan finds, most for queries unlike any stored vector: a
query of a few words embedded by the hashing embedder has a handful of non-zero coordinates,
every stored vector is about as far from it as every other, and the graph search wanders. Up to
:data:`EXACT_SCAN_MAX` vectors the exact scan costs the server a few milliseconds (where the
planner would choose it over the index itself) and misses nothing. Above that it soon costs more
than the rest of a search, and the HNSW candidate list is the trade between recall and time:
a longer list finds more of the nearest and costs the server more per search.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

from waggle_store.dialects.base import Executor, LaneFilter
from waggle_store.dialects.common import frame_filters, run_lane
from waggle_store.dialects.postgres_maint import HNSW_MAX_VECTOR_DIMS

#: Minds holding at most this many vectors (in one vector table) are searched by an exact scan.
EXACT_SCAN_MAX: Final = 5_000
#: How long a count of the minds' vectors (:class:`VectorCounts`) is reused.
VECTOR_COUNT_TTL: Final = 60.0
#: The HNSW candidate list of a KNN page (:func:`ef_search`): at least this many candidates, and
#: :data:`EF_SEARCH_PER_ROW` a row (a search's page of 20 asks the lane for 40 rows: 80).
EF_SEARCH_MIN: Final = 80
EF_SEARCH_PER_ROW: Final = 2
#: Per transaction (``is_local``), so nothing leaks to the next user of the pooled connection
#: (nor, behind a transaction-pooling PgBouncer, to another client's transaction).
HNSW_SETTINGS: Final = (
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('hnsw.ef_search', :ef, true)"
)


def ef_search(k: int) -> int:
    """The HNSW candidate list (``hnsw.ef_search``) of a KNN page of ``k`` rows: at least
    :data:`EF_SEARCH_MIN`, and :data:`EF_SEARCH_PER_ROW` candidates a row, at most pgvector's
    maximum of 1,000. pgvector's fixed default (40) loses recall for every page size, most for
    wide pages: the page would be the whole candidate list."""
    return min(1000, max(EF_SEARCH_MIN, EF_SEARCH_PER_ROW * int(k)))


def distance_expr(column: str, param: str, dims: int) -> str:
    """The expression the HNSW index was built on, so the planner can use it."""
    if dims > HNSW_MAX_VECTOR_DIMS:
        return f"({column}::halfvec({dims}) <=> CAST(:{param} AS halfvec({dims})))"
    return f"({column} <=> CAST(:{param} AS vector({dims})))"


class VectorCounts:
    """Whether searched minds are small enough for the exact scan, per vector table: counted up
    to :data:`EXACT_SCAN_MAX` from the ``mind_id`` index and reused for
    :data:`VECTOR_COUNT_TTL` seconds (a mind that grows past the cap meanwhile is still scanned
    exactly, a little longer). An adapter keeps one; no lock: each call reads or writes one dict
    entry (atomic under the GIL)."""

    def __init__(self) -> None:
        self._known: dict[tuple[object, ...], tuple[int, float]] = {}

    def few(self, executor: Executor, table: str, mind_ids: Sequence[int]) -> bool:
        """Whether the minds hold at most :data:`EXACT_SCAN_MAX` vectors in ``table``."""
        key = (table, *map(int, mind_ids))
        known = self._known.get(key)
        now = time.monotonic()
        if known is None or now - known[1] >= VECTOR_COUNT_TTL:
            params: dict[str, Any] = {"cap": EXACT_SCAN_MAX + 1}
            minds = frame_filters(LaneFilter(list(mind_ids)), params, alias="v")
            rows = run_lane(executor, f"SELECT count(*) FROM (SELECT 1 FROM {table} v "
                                      f"WHERE {minds} LIMIT :cap) s", params)
            known = (int(rows[0][0]), now)
            self._known[key] = known
        return known[0] <= EXACT_SCAN_MAX

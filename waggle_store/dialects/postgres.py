"""Postgres adapter: generated tsvector + GIN for keywords, pgvector (HNSW) for vectors.

Vector tables are ``waggle_frame_vectors_N(frame_id → waggle_memory_frames ON DELETE CASCADE,
mind_id, embedding vector(d), gop_id, created_at)`` with an HNSW index (``vector_cosine_ops``; above
2,000 dimensions, which HNSW cannot index as ``vector``, an expression index over ``halfvec(d)``).
Vectors travel as text literals cast to ``vector`` so no pgvector adapter has to be registered on
the host's driver.

Filtered KNN: the ordered query reads the vector table alone, so the planner can use the HNSW
index (a join to ``memory_frames``/``frame_embeddings`` inside it made Postgres sort the whole
mind instead). The mind, session and time filters are on the vector table's own columns (copied
from the frame when the vector is stored, like the SQLite ``vec0`` metadata columns) and
``hnsw.iterative_scan = relaxed_order`` keeps the index scanning until ``LIMIT`` rows pass them.
The manifest (is this vector current for the frame's content?) is checked on the materialised
candidates; stale ones are dropped and the KNN widens until the page is full. Iterative scans stop
at ``hnsw.max_scan_tuples``, so a short page is completed by an exact scan, which is only reached
when the filtered set is small enough for that to be cheap.

The vector tables' DDL and row maintenance live in :mod:`waggle_store.dialects.postgres_maint`
(kept apart so each module stays under 400 lines); the adapter's methods delegate to it and
``HNSW_MAX_VECTOR_DIMS`` is re-exported from here, where it was defined first.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sqlalchemy import ColumnElement, any_, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

from waggle_store.dialects import derived, postgres_maint
from waggle_store.dialects.base import (
    T_EMBEDDINGS,
    T_FRAMES,
    Capabilities,
    DeferredLane,
    DerivedProblem,
    Executor,
    LaneFilter,
    LaneHit,
    PendingLane,
    VectorRow,
    VectorTables,
    vector_table_name,
)
from waggle_store.dialects.common import (
    checked_knn,
    clean_term,
    connection_of,
    current_hits,
    frame_filters,
    frame_hits,
    frame_select,
    frames_missing_vectors,
    like_search,
    run_lane,
    sends_ahead,
)
from waggle_store.dialects.context_index import stale_context_update
from waggle_store.dialects.info import engine_info
from waggle_store.dialects.keyword_rank import (
    FrameCounts,
    TermCounts,
    count_frames,
    keyword_rows,
    ranked_page_sql,
    score_sql,
    shortest_page_sql,
    walk_parts,
    weights_sql,
)
from waggle_store.dialects.lane_steps import LaneSteps, SentLane, drive_lane
from waggle_store.dialects.postgres_engine import HNSW_EF_SEARCH
from waggle_store.dialects.postgres_maint import HNSW_MAX_VECTOR_DIMS as HNSW_MAX_VECTOR_DIMS
from waggle_store.dialects.postgres_maint import vector_param
from waggle_store.errors import PGVECTOR_NOT_INSTALLED
from waggle_store.models.idioms import rowcount

#: Widest KNN page asked of the HNSW index before an exact scan takes over.
KNN_MAX_K: Final = 4096
#: Per transaction (``is_local``), so nothing leaks to the next user of the pooled connection.
_HNSW_SETTINGS: Final = (
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('hnsw.ef_search', :ef, true)"
)



def tsquery_terms(terms: Sequence[str]) -> list[str]:
    """The values the keyword lane binds, one per term; empty: skip the lane.

    Each becomes ``plainto_tsquery('english', :tN)``, ORed with ``||``. ``plainto_tsquery``
    accepts any text without a syntax error (unlike ``to_tsquery``) and parses it with the
    parser and dictionary of the generated ``tsvector``, ANDing the lexemes of one term:
    "e-mail" → ``'e-mail' & 'e' & 'mail'``, "node.js" → ``'node.js'``, what ``to_tsvector``
    stored. A term of only stop words ("what's") yields an empty tsquery, which ``||`` ignores.
    """
    return [clean for clean in map(clean_term, terms) if clean]


def _ef_search(limit: int) -> int:
    """The HNSW candidate list a KNN page of ``limit`` rows asks for."""
    return min(1000, max(HNSW_EF_SEARCH, limit))


def _distance_expr(column: str, param: str, dims: int) -> str:
    """The expression the HNSW index was built on, so the planner can use it."""
    if dims > HNSW_MAX_VECTOR_DIMS:
        return f"({column}::halfvec({dims}) <=> CAST(:{param} AS halfvec({dims})))"
    return f"({column} <=> CAST(:{param} AS vector({dims})))"


#: How many KNN statements of a store write their mind ids into their text (see :class:`KnnTexts`).
WRITTEN_IN_KNN: Final = 32


class KnnTexts:
    """The KNN statement texts that write their mind ids in: the first ``room`` a store sends.

    Why a bound: each such text (a mind, a page size, the filters) is a statement of its own for
    psycopg, which prepares a statement at its fifth run and keeps 100 prepared per connection,
    deallocating the least recently used (a round trip) — shared with every other statement the
    pooled connection runs. A process searching more minds than that in turn prepared and
    deallocated a KNN at nearly every search (200 minds of 200 frames searched in turn: 2.68 ms
    a search against 2.35 with the mind bound, ``benchmarks/README.md``). The minds searched first
    keep their own statement and its generic plan; the others share one text with the mind bound,
    planned at each search, as every search was before the mind ids were written in."""

    __slots__ = ("_lock", "_room", "_texts")

    def __init__(self, room: int = WRITTEN_IN_KNN) -> None:
        self._room = room
        self._texts: set[str] = set()
        self._lock = threading.Lock()

    def admit(self, sql: str) -> bool:
        """Whether ``sql`` (written with its mind ids) may be sent: known, or room for it."""
        if sql in self._texts:
            return True
        with self._lock:
            if len(self._texts) >= self._room:
                return False
            self._texts.add(sql)
            return True


#: A frame's length for the keyword lane's tie order, in bytes (``keyword_rank``: no character
#: count walks the text).
TEXT_BYTES: Final = "octet_length(f.content) + coalesce(octet_length(f.search_context), 0)"


class PostgresAdapter:
    dialect = "postgresql"

    def reads_per_statement(self, limit: int) -> bool:
        """READ COMMITTED (the default) gives each statement its own snapshot inside a
        transaction too, so a search's BEGIN and COMMIT bought nothing but two round trips —
        unless the vector lane must ``set_config`` its HNSW settings, which last only for their
        transaction: a page wider than the connection's own ``ef_search``, or an engine without
        the startup options (a host's)."""
        return engine_info(self.engine).hnsw_options and _ef_search(limit) == HNSW_EF_SEARCH

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._has_vector: bool | None = None
        self._filter_columns: set[int] = set()
        self._vector_tables = VectorTables()
        #: Minds searched -> frames counted (idf's N): see :mod:`keyword_rank`.
        self.frame_counts = FrameCounts()
        #: Minds searched and a common term -> the frames holding it: see :mod:`keyword_rank`.
        self.term_counts = TermCounts()
        #: The KNN texts written with their mind ids (:class:`KnnTexts`).
        self.knn_texts = KnnTexts()

    def release_caches(self) -> None:
        pass  # a few counters and flags: nothing worth freeing

    def capabilities(self, session: Session) -> Capabilities:
        reasons: list[str] = []
        versions = {"postgresql": str(session.execute(text("SHOW server_version")).scalar())}
        vec_version = session.execute(
            text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ).scalar()
        if vec_version:
            versions["pgvector"] = str(vec_version)
        else:
            available = session.execute(
                text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            ).scalar()
            reasons.append(
                PGVECTOR_NOT_INSTALLED if available
                else "vector search off: the pgvector extension is not installed on this "
                     "PostgreSQL server (install pgvector, then a superuser runs "
                     "`CREATE EXTENSION vector;`)"
            )
        self._has_vector = bool(vec_version)
        problems = self.verify_derived(session)
        tsv = not derived.keyword_broken(problems)
        reasons.extend(derived.derived_reasons(problems))
        return Capabilities(
            "postgresql",
            keyword_search=tsv,
            vector_backend=bool(vec_version),
            reasons=reasons,
            versions=versions,
        )

    def vector_backend_available(self, session: Executor) -> bool:
        if self._has_vector is None:
            self._has_vector = (
                session.execute(
                    text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
                ).scalar()
                is not None
            )
        return self._has_vector

    def orphan_rows(self, session: Executor) -> list[str]:
        return []  # foreign keys are always enforced: no delete skips its cascade

    def remove_orphan_rows(self, session: Session) -> int:
        return 0

    def vector_off_reason(self, session: Executor) -> str:
        available = session.execute(
            text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        ).scalar()
        return (PGVECTOR_NOT_INSTALLED if available else
                "vector search off: the pgvector extension is not installed on this PostgreSQL "
                "server (install pgvector, then a superuser runs `CREATE EXTENSION vector;`)")

    def in_values(
        self, column: ColumnElement[Any], name: str, type_: TypeEngine[Any]
    ) -> ColumnElement[bool]:
        # One array parameter: the statement text does not change with the list's length, so
        # psycopg prepares it and the server plans it once (an expanded IN was re-parsed,
        # re-rendered and re-planned on every search).
        return column == any_(bindparam(name, type_=ARRAY(type_)))

    # -- lanes ------------------------------------------------------------------------------

    def keyword_search(
        self, session: Executor, *, terms: Sequence[str], where: LaneFilter, limit: int,
        expired_count: bool = False,
    ) -> list[LaneHit]:
        """The idf sum of :mod:`~waggle_store.dialects.keyword_rank` in one statement, the same
        formula as the SQLite lane's, so an exported mind ranks alike on both dialects.

        ``q`` parses each term once (``plainto_tsquery``); ``c`` is every frame of the searched
        minds matching any term in either column, found through the GIN indexes, with per term
        whether it matched in the own words (``m`` = 2, ``content_tsv``) or only in the context
        (``m`` = 1, ``context_tsv``); ``w`` counts ``df`` per term over ``c`` (before the
        session/time filters) and ``N``, and turns them into idfs. The score is positive and
        bigger is better, so the fusion's confidence ``(s / s_top)²`` gives a frame matching only
        a common term next to one matching the rare ones a small weight. ``ts_rank_cd``, which
        ranked here first, had no term rarity: a speaker's name, in half the frames of a
        conversation, counted as much as the question's rare word (``benchmarks/README.md``).

        A query term known to be common (``term_counts``) finds no candidates: ``c`` is then the
        frames holding another term, the common term's ``df`` its known count, and the page is
        kept only if no frame holding only common terms could be on it (``page_holds``); else
        the statement runs again over every frame holding any term (:mod:`keyword_rank`).
        """
        values = tsquery_terms(terms)
        if not values or not where.mind_ids:
            return []
        rows = keyword_rows(
            lambda common: self._keyword_rows(session, values, where, limit, expired_count,
                                              common),
            lambda dfs: self._shortest_rows(session, values, where, limit, expired_count, dfs),
            self.frame_counts, self.term_counts, where.mind_ids, values, limit,
            expired=expired_count)
        return frame_hits(session, rows)

    def count_term_frames(self, session: Executor, mind_ids: Sequence[int], term: str) -> int:
        """The frames of the minds holding ``term`` (a value of :func:`tsquery_terms`) in their
        own words or context: the ``df`` the keyword statement counts."""
        return count_frames(session, mind_ids, "(f.content_tsv @@ plainto_tsquery('english', :t) "
                            "OR f.context_tsv @@ plainto_tsquery('english', :t))", term)

    def _keyword_rows(self, session: Executor, values: Sequence[str], where: LaneFilter,
                      limit: int, expired_count: bool, common: Mapping[int, int]
                      ) -> tuple[list[Any], bool]:
        """The lane's statement (see :meth:`keyword_search`): its rows and whether it counted
        ``N``. Its candidates are the frames holding a term not in ``common`` (terms known to be
        common, with their ``df``: :class:`~waggle_store.dialects.keyword_rank.TermCounts`)."""
        params: dict[str, Any] = {"limit": int(limit)}
        n = range(len(values))
        for i, value in enumerate(values):
            params[f"t{i}"] = value
        minds = frame_filters(LaneFilter(where.mind_ids), params)
        filters = frame_filters(where, params, alias="c")
        queries = ", ".join(f"plainto_tsquery('english', :t{i}) AS q{i}" for i in n)
        # Per term: 2 matched in the own words, 1 only in the context, 0 neither — the context
        # is tested only where the own words lack the term (2–4 % of the statement at 100k).
        matched = ", ".join(
            f"CASE WHEN f.content_tsv @@ q.q{i} THEN 2 WHEN f.context_tsv @@ q.q{i} THEN 1 "
            f"ELSE 0 END AS m{i}" for i in n
        )
        counts = []
        for i in n:
            count = f"count(*) FILTER (WHERE m{i} > 0)"
            if i in common:  # counted among the candidates only: its known df, at least that
                params[f"df{i}"] = common[i]
                count = f"GREATEST(:df{i}, {count})"
            counts.append(f"{count} AS d{i}")
        total, counting = self.frame_counts.total_sql(where.mind_ids, minds, params,
                                                      "GREATEST", expired=expired_count)
        score = score_sql([f"w.w{i}" for i in n], [f"c.m{i} = 2" for i in n],
                          [f"c.m{i} > 0" for i in n])
        anyq = " || ".join(f"q.q{i}" for i in n if i not in common)
        # MATERIALIZED: q is evaluated once and feeds the GIN scan; w is one row, computed once
        # (inlined, the planner re-ran the aggregate for every candidate).
        # The page's frames are read after the LIMIT, so the sort carries ids, not contents.
        rows = run_lane(
            session,
            f"WITH q AS MATERIALIZED (SELECT {queries}), "
            f"c AS MATERIALIZED (SELECT f.id, f.mind_id, f.gop_id, f.created_at, "
            f"{TEXT_BYTES} AS len, {matched} "
            f"FROM {T_FRAMES} f, q "
            f"WHERE (f.content_tsv @@ ({anyq}) OR f.context_tsv @@ ({anyq})) AND {minds}), "
            f"w AS MATERIALIZED ("
            + weights_sql(f"SELECT {total}::float8 AS n, {', '.join(counts)} FROM c",
                          len(values), common)
            + ") "
            + ranked_page_sql(score, filters, frame_select(), len(values)),
            params,
        )
        return rows, counting

    def _shortest_rows(self, session: Executor, values: Sequence[str], where: LaneFilter,
                       limit: int, expired_count: bool, dfs: Mapping[int, int]
                       ) -> tuple[list[Any], bool]:
        """The page of a query of common terms only (``dfs``: each one's known ``df``), walked
        shortest first (:func:`~waggle_store.dialects.keyword_rank.shortest_page_sql`; each
        walked frame's ``content_tsv`` tested): its rows and whether it counted ``N``. ``n`` and
        the ``df`` are typed as :meth:`_keyword_rows` has them (``float8``, ``bigint``), so the
        weights are the same floating-point operations."""
        walk = walk_parts(self.frame_counts, where, values, dfs, limit, expired=expired_count)
        n = range(len(values))
        dfs_sql = [f"CAST(:df{i} AS bigint)" for i in n]
        counted = (f"SELECT GREATEST({walk.total}, {', '.join(dfs_sql)})::float8 AS n, "
                   + ", ".join(f"{df} AS d{i}" for i, df in enumerate(dfs_sql)))
        queries = ", ".join(f"plainto_tsquery('english', :t{i}) AS q{i}" for i in n)
        # The mind's :walk shortest frames in the index's order, each tested as it comes: each
        # term's query is one value (a scalar subquery), not a joined row, so the outer LIMIT
        # stops the walk at the page (joined with q, the planner sorted all :walk rows).
        holds = " AND ".join(f"s.content_tsv @@ (SELECT q.q{i} FROM q)" for i in n)
        walked = (f"SELECT s.id, s.len FROM (SELECT f.id, {TEXT_BYTES} AS len, f.content_tsv "
                  f"FROM {T_FRAMES} f WHERE {walk.filters} ORDER BY {TEXT_BYTES}, f.id "
                  f"LIMIT :walk) s WHERE {holds} ORDER BY s.len, s.id LIMIT :limit")
        rows = run_lane(session, shortest_page_sql(
            counted, len(values), walked, f"q AS MATERIALIZED (SELECT {queries}), "), walk.params)
        return rows, walk.counting

    def like_search(
        self, session: Executor, *, patterns: Sequence[str], where: LaneFilter, limit: int
    ) -> list[LaneHit]:
        return like_search(session, operator="ILIKE", patterns=patterns, where=where, limit=limit)

    def start_vector_search(
        self,
        session: Executor,
        *,
        model_id: int,
        vector: Sequence[float],
        where: LaneFilter,
        limit: int,
        alone: bool = False,
    ) -> PendingLane:
        # The server does the whole lane. On a connection of its own, its first statement is
        # sent beside the caller's keyword lane and runs on the server with it (lane_steps.py);
        # otherwise it runs when its hits are asked for, after the keyword lane.
        steps = self._vector_steps(session, model_id=model_id, vector=vector, where=where,
                                   limit=limit)
        conn = connection_of(session)
        if alone and sends_ahead(conn):
            return SentLane(conn, steps)
        return DeferredLane(lambda: drive_lane(conn, steps), steps.close)

    def vector_search(
        self,
        session: Executor,
        *,
        model_id: int,
        vector: Sequence[float],
        where: LaneFilter,
        limit: int,
    ) -> list[LaneHit]:
        return drive_lane(connection_of(session), self._vector_steps(
            session, model_id=model_id, vector=vector, where=where, limit=limit))

    def _vector_steps(
        self,
        session: Executor,
        *,
        model_id: int,
        vector: Sequence[float],
        where: LaneFilter,
        limit: int,
    ) -> LaneSteps:
        """The vector lane's statements (:data:`~.lane_steps.LaneSteps`): each is sent its rows."""
        if not where.mind_ids:
            return []
        dims = len(vector)
        table = vector_table_name(model_id)
        limit = max(int(limit), 1)
        # The lane serves one mind's model: the check rides on the first (searches pass one).
        params: dict[str, Any] = {
            "q": vector_param(session)(vector),
            "model_id": model_id,
            "check_mind": int(where.mind_ids[0]),
        }
        distance = _distance_expr("v.embedding", "q", dims)
        # relaxed_order can return rows slightly out of order: every page is re-sorted below.
        ef = _ef_search(limit)
        if ef != HNSW_EF_SEARCH or not self._hnsw_options(session):
            # Not the connection's own settings (a wider page, or a host's engine): set them
            # for this transaction. The default page needs no statement (postgres_engine.py).
            yield _HNSW_SETTINGS, {"ef": str(ef)}
        if not where.narrowed or self._has_filter_columns(session, model_id):
            # The KNN sees the vector table alone (any join in the ordered query keeps the planner
            # off the HNSW index): mind, session and time filters on its own columns, which the
            # iterative scan applies while it walks the graph. The manifest is checked on the
            # materialised candidates; stale ones are dropped and the scan widens on a shortfall.
            # The mind ids and the LIMIT are written into the text, not bound: bound, the server's
            # plan cache planned the statement afresh at every execution (a generic plan, costed
            # for any LIMIT and any mind, lost to the custom ones: 0.3–0.4 ms of server time a
            # search at 10k frames); written in, the prepared statement's generic plan is the
            # plan a custom one would choose for that mind and page (benchmarks/README.md). Only
            # for the first texts a store sends (KnnTexts): beyond them, the minds are bound.
            def knn_sql(filters: str, k: int) -> str:
                return (
                    f"WITH c AS MATERIALIZED (SELECT v.frame_id, {distance} AS d FROM {table} v "
                    f"WHERE {filters} ORDER BY {distance} LIMIT {int(k)}) "
                    f"{checked_knn('c', 'frame_id', 'd')} ORDER BY c.d, c.frame_id"
                )

            written_in = frame_filters(where, params, alias="v", mind_alias="v",
                                       inline_minds=True)
            bound: str | None = None
            k = limit
            while True:
                knn = knn_sql(written_in, k)
                if not self.knn_texts.admit(knn):
                    bound = bound or frame_filters(where, params, alias="v", mind_alias="v")
                    knn = knn_sql(bound, k)
                rows = yield knn, params
                hits = current_hits(session, rows, model_id)
                if len(hits) >= limit:
                    return hits[:limit]
                # Fewer rows than asked: the candidates are exhausted, or the iterative scan hit
                # hnsw.max_scan_tuples; the exact scan below settles both.
                if len(rows) < k or k >= KNN_MAX_K:
                    break
                k = min(k * 4, KNN_MAX_K)
            params = {"q": params["q"], "model_id": model_id, "check_mind": params["check_mind"]}
        # Exact scan of the frames that pass every filter ("+ 0" hides the indexed expression
        # from the planner). Reached when the KNN came up short, or for a session/time filter on
        # a vector table created before those columns existed.
        filters = frame_filters(where, params, mind_alias="v")
        exact = (
            f"SELECT v.frame_id, {distance} AS d, {frame_select()} FROM {table} v "
            f"JOIN {T_FRAMES} f ON f.id = v.frame_id "
            f"JOIN {T_EMBEDDINGS} e ON e.frame_id = v.frame_id "
            f"WHERE {filters} AND e.status = 'ready' "
            "AND e.model_id = :model_id AND e.content_hash = f.content_hash "
            f"ORDER BY {distance} + 0, v.frame_id LIMIT :k"
        )
        rows = yield exact, {**params, "k": limit}
        return frame_hits(session, rows)

    def _hnsw_options(self, session: Executor) -> bool:
        """Whether ``session``'s connection started with pgvector's search settings: it comes
        from the pool of an engine :func:`~.postgres_engine.create_postgres_engine` built (the
        store's read engine is an options view of it, sharing its pool), not a host's."""
        return (connection_of(session).engine.pool is self.engine.pool
                and engine_info(self.engine).hnsw_options)

    def _has_filter_columns(self, session: Executor, model_id: int) -> bool:
        """Whether ``frame_vectors_N`` carries ``gop_id``/``created_at``: see
        :func:`postgres_maint.has_filter_columns` (a yes is cached per adapter)."""
        return postgres_maint.has_filter_columns(session, model_id, self._filter_columns)

    # -- vector index maintenance -------------------------------------------------------------
    # The DDL and row writes live in dialects/postgres_maint.py (module size); these methods are
    # the SearchAdapter protocol's entry points and own the per-engine caches.

    def ensure_vector_table(
        self, session: Session, model_id: int, dimensions: int, *, repair: bool = False
    ) -> None:
        if self._vector_tables.ready(model_id) and not repair:
            return
        postgres_maint.create_vector_table(session, model_id, dimensions, self._filter_columns)
        self._vector_tables.ensured_in(session, model_id)

    def vector_table_exists(self, session: Session, model_id: int) -> bool:
        return postgres_maint.vector_table_exists(session, model_id)

    def upsert_vectors(self, session: Session, model_id: int, rows: Sequence[VectorRow]) -> None:
        postgres_maint.upsert_vectors(session, model_id, rows)

    def delete_vectors(self, session: Session, model_id: int, frame_ids: Sequence[int]) -> None:
        postgres_maint.delete_vectors(session, model_id, frame_ids)

    def read_vectors(
        self, session: Executor, model_id: int, frame_ids: Sequence[int]
    ) -> dict[int, list[float]]:
        return postgres_maint.read_vectors(session, model_id, frame_ids)

    def frames_missing_vectors(
        self, session: Session, model_id: int, mind_id: int | None,
        *, after: int = 0, limit: int | None = None, up_to: int | None = None,
    ) -> list[int]:
        return frames_missing_vectors(
            session, vector_table_name(model_id), "frame_id", model_id, mind_id,
            after=after, limit=limit, up_to=up_to,
        )

    def remove_vector_orphans(self, session: Session, model_id: int) -> int:
        return postgres_maint.remove_vector_orphans(session, model_id)

    # -- keyword index maintenance ------------------------------------------------------------

    def repair_keyword_index(self, session: Session, mind_id: int | None) -> int:
        """The generated tsvectors are computed by the server on every write: never missing or
        stale. Frame contexts are kept by triggers; the ones found stale (a store written around
        them, or cleared) are recomputed here, which regenerates their ``context_tsv``."""
        params = {} if mind_id is None else {"mind_id": mind_id}
        result = session.execute(text(stale_context_update("postgresql", mind_id)), params)
        return rowcount(result)

    def remove_keyword_orphans(self, session: Session) -> int:
        return 0

    # -- derived objects ----------------------------------------------------------------------

    def verify_derived(self, session: Executor) -> list[DerivedProblem]:
        return derived.postgres_problems(session, vectors=self.vector_backend_available(session))

    def repair_derived(
        self, session: Session, problems: Sequence[DerivedProblem]
    ) -> list[DerivedProblem]:
        if derived.keyword_broken(problems):
            derived.postgres_repair_keyword(session, problems)
        derived.postgres_drop_broken_vector_indexes(session, problems)
        derived.repair_vector_tables(self, session, problems)
        return self.verify_derived(session)

"""Postgres adapter: generated tsvector + GIN for keywords, pgvector (HNSW) for vectors.

Vector tables are ``waggle_frame_vectors_N(frame_id → waggle_memory_frames ON DELETE CASCADE,
mind_id, embedding vector(d), gop_id, created_at)`` with an HNSW index (``vector_cosine_ops``; above
2,000 dimensions, which HNSW cannot index as ``vector``, an expression index over ``halfvec(d)``).
Vectors travel as text literals cast to ``vector`` so no pgvector adapter has to be registered on
the host's driver.

KNN: minds of few vectors are scanned exactly, larger ones through the HNSW index
(:mod:`waggle_store.dialects.postgres_knn` says when and why). The ordered query reads the vector
table alone, so the planner can use the HNSW index (a join to ``memory_frames``/
``frame_embeddings`` inside it made Postgres sort the whole mind instead). The mind, session and
time filters are on the vector table's own columns (copied from the frame when the vector is
stored, like the SQLite ``vec0`` metadata columns) and ``hnsw.iterative_scan = relaxed_order``
keeps the index scanning until ``LIMIT`` rows pass them.
The manifest (is this vector current for the frame's content?) is checked on the materialised
candidates; stale ones are dropped and the KNN widens until the page is full. Iterative scans stop
at ``hnsw.max_scan_tuples``, so a short page is completed by an exact scan, which is only reached
when the filtered set is small enough for that to be cheap.

The vector tables' DDL and row maintenance live in :mod:`waggle_store.dialects.postgres_maint`,
the keyword lane's statements in :mod:`waggle_store.dialects.postgres_keyword`; the adapter's
methods delegate to them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from waggle_store.dialects import (
    derived,
    frame_metadata,
    postgres_keyword,
    postgres_knn,
    postgres_maint,
)
from waggle_store.dialects.base import (
    T_EMBEDDINGS,
    T_FRAMES,
    Capabilities,
    DerivedProblem,
    DerivedRepair,
    Executor,
    LaneFilter,
    LaneHit,
    VectorRow,
    VectorTables,
    vector_table_name,
)
from waggle_store.dialects.common import (
    ATTRIBUTE_WIDENING,
    checked_knn,
    current_hits,
    frame_filters,
    frame_hits,
    frame_select,
    knn_attributes,
    like_search,
    run_lane,
)
from waggle_store.dialects.context_index import stale_context_update
from waggle_store.dialects.keyword_rank import (
    FrameCounts,
    TermCounts,
    keyword_rows,
)
from waggle_store.dialects.postgres_keyword import tsquery_terms as tsquery_terms
from waggle_store.dialects.postgres_maint import HNSW_MAX_VECTOR_DIMS as HNSW_MAX_VECTOR_DIMS
from waggle_store.dialects.postgres_maint import vector_param
from waggle_store.errors import PGVECTOR_NOT_INSTALLED
from waggle_store.models.idioms import rowcount

#: Widest KNN page asked of the HNSW index before an exact scan takes over.
KNN_MAX_K: Final = 4096
def _few_pass(session: Executor, where: LaneFilter) -> bool:
    """Whether fewer than :data:`KNN_MAX_K` frames pass the filter's where= attributes: then
    the exact scan of them costs less than KNN pages they would thin out (each page widened
    4x). Counted up to that cap only, from the indexes (GIN ``jsonb_path_ops`` for metadata,
    ``(mind_id, source)``, ``(mind_id, importance)``)."""
    if where.attributes is None:
        return False
    params: dict[str, Any] = {"cap": KNN_MAX_K}
    filters = frame_filters(where, params, dialect="postgresql")
    rows = run_lane(session, f"SELECT count(*) FROM (SELECT 1 FROM {T_FRAMES} f "
                             f"WHERE {filters} LIMIT :cap) s", params)
    return int(rows[0][0]) < KNN_MAX_K


def _pgvector_missing(available: bool) -> str:
    """Why vector search is off without pgvector: the extension not created in the database
    (``available`` on the server), or not installed on the server."""
    return (PGVECTOR_NOT_INSTALLED if available else
            "vector search off: the pgvector extension is not installed on this PostgreSQL "
            "server (install pgvector, then a superuser runs `CREATE EXTENSION vector;`)")


class PostgresAdapter:
    dialect = "postgresql"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._has_vector: bool | None = None
        #: Why the vector backend is off (:meth:`vector_off`), once asked.
        self._vector_off: str | None = None
        self._filter_columns: set[int] = set()
        self._vector_tables = VectorTables()
        self._vector_counts = postgres_knn.VectorCounts()
        #: Minds searched -> frames counted (idf's N): see :mod:`keyword_rank`.
        self.frame_counts = FrameCounts()
        #: Minds searched and a common term -> the frames holding it: see :mod:`keyword_rank`.
        self.term_counts = TermCounts()

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
            reasons.append(_pgvector_missing(available is not None))
        self._has_vector = bool(vec_version)
        self._vector_off = None if vec_version else reasons[-1]
        problems = self.verify_derived(session)
        tsv = not derived.broken(problems, "keyword")
        reasons.extend(derived.derived_reasons(problems))
        return Capabilities(
            "postgresql",
            keyword_search=tsv,
            vector_backend=bool(vec_version),
            reasons=reasons,
            versions=versions,
        )

    def vector_off(self, session: Executor) -> str | None:
        if self._has_vector is None:
            self._has_vector = session.execute(
                text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")).scalar() is not None
        if self._has_vector:
            return None
        if self._vector_off is None:  # kept until capabilities() looks again
            available = session.execute(
                text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).scalar()
            self._vector_off = _pgvector_missing(available is not None)
        return self._vector_off

    # -- lanes ------------------------------------------------------------------------------

    def keyword_search(
        self, session: Executor, *, terms: Sequence[str], where: LaneFilter, limit: int
    ) -> list[LaneHit]:
        """The idf sum of :mod:`~waggle_store.dialects.keyword_rank` in one statement, the same
        formula as the SQLite lane's, so an exported mind ranks alike on both dialects.

        ``q`` parses each term once (``plainto_tsquery``); ``c`` is every frame of the searched
        minds matching any term in either column, found through the GIN indexes, with per term
        whether it matched in the own words (``m`` = 2, ``content_tsv``) or only in the context
        (``m`` = 1, ``context_tsv``); ``w`` counts ``df`` per term over ``c`` (before the
        session/time filters) and ``N``, and turns them into idfs. The score is positive and
        bigger is better, so the fusion's confidence ``(s / s_top)²`` gives a frame matching only
        a common term next to one matching the rare ones a small weight. (``ts_rank_cd`` has no
        term rarity: a speaker's name, in half the frames of a conversation, would count as
        much as the question's rare word.)

        A query term known to be common (``term_counts``) finds no candidates: ``c`` is then the
        frames holding another term, the common term's ``df`` its known count, and the page is
        kept only if no frame holding only common terms could be on it (``page_holds``); else
        the statement runs again over every frame holding any term (:mod:`keyword_rank`).
        """
        values = tsquery_terms(terms)
        if not values or not where.mind_ids:
            return []
        rows = keyword_rows(
            lambda common: self._keyword_rows(session, values, where, limit, common),
            lambda dfs: self._shortest_rows(session, values, where, limit, dfs),
            self.frame_counts, self.term_counts, where.mind_ids, values, limit)
        return frame_hits(session, rows)

    def _keyword_rows(self, session: Executor, terms: Sequence[str], where: LaneFilter,
                      limit: int, common: Mapping[int, int]
                      ) -> tuple[list[Any], bool]:
        """The lane's statement (:func:`postgres_keyword.keyword_statement`)."""
        return postgres_keyword.keyword_statement(self.frame_counts, session, terms, where,
                                                  limit, common)

    def _shortest_rows(self, session: Executor, terms: Sequence[str], where: LaneFilter,
                       limit: int, dfs: Mapping[int, int]
                       ) -> tuple[list[Any], bool]:
        """The walk of a query of common terms (:func:`postgres_keyword.shortest_statement`)."""
        return postgres_keyword.shortest_statement(self.frame_counts, session, terms, where,
                                                   limit, dfs)

    def like_search(
        self, session: Executor, *, patterns: Sequence[str], where: LaneFilter, limit: int
    ) -> list[LaneHit]:
        return like_search(session, operator="ILIKE", patterns=patterns, where=where, limit=limit)

    def vector_search(
        self,
        session: Executor,
        *,
        model_id: int,
        vector: Sequence[float],
        where: LaneFilter,
        limit: int,
    ) -> list[LaneHit]:
        """The KNN over the vector table alone, then the manifest check on its candidates (see
        the module docstring): through the HNSW index, or an exact scan of minds holding at most
        :data:`~postgres_knn.EXACT_SCAN_MAX` vectors; an exact scan with the frames when the
        KNN comes up short."""
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
        distance = postgres_knn.distance_expr("v.embedding", "q", dims)
        if (not where.narrowed or self._has_filter_columns(session, model_id)) \
                and not _few_pass(session, where):
            # The vector table carries the mind, session and time; the frame's attributes
            # (where=) are checked with the manifest, and a page they thin out widens.
            filters = frame_filters(dataclasses.replace(where, attributes=None), params,
                                    alias="v", mind_alias="v")
            attributes = knn_attributes(where, params, self.dialect)
            k = limit if attributes is None else limit * ATTRIBUTE_WIDENING
            exact = self._vector_counts.few(session, table, where.mind_ids)
            # "+ 0" hides the indexed expression from the planner: an exact scan.
            order = f"{distance} + 0" if exact else distance
            while True:
                if not exact:  # the candidate list follows the page, for this transaction
                    run_lane(session, postgres_knn.HNSW_SETTINGS,
                             {"ef": str(postgres_knn.ef_search(k))})
                # relaxed_order can return rows slightly out of order: the page is re-sorted.
                rows = run_lane(
                    session,
                    f"WITH c AS MATERIALIZED (SELECT v.frame_id, {distance} AS d FROM {table} v "
                    f"WHERE {filters} ORDER BY {order} LIMIT :k) "
                    f"{checked_knn('c', 'frame_id', 'd', attributes)} ORDER BY c.d, c.frame_id",
                    {**params, "k": k},
                )
                hits = current_hits(session, rows, model_id, attributes is not None)
                if len(hits) >= limit or (exact and len(rows) < k):
                    return hits[:limit]
                # Fewer rows than asked: the candidates are exhausted, or the iterative scan hit
                # hnsw.max_scan_tuples; the exact scan below settles both.
                if len(rows) < k or k >= KNN_MAX_K:
                    break
                k = min(k * 4, KNN_MAX_K)
            params = {"q": params["q"], "model_id": model_id, "check_mind": params["check_mind"]}
        # Exact scan of the frames that pass every filter ("+ 0" hides the indexed expression
        # from the planner). Reached when the KNN came up short, when fewer than KNN_MAX_K
        # frames pass the where= attributes, or for a session/time filter on a vector table
        # created before those columns existed.
        filters = frame_filters(where, params, mind_alias="v", dialect=self.dialect)
        rows = run_lane(
            session,
            f"SELECT v.frame_id, {distance} AS d, {frame_select()} FROM {table} v "
            f"JOIN {T_FRAMES} f ON f.id = v.frame_id "
            f"JOIN {T_EMBEDDINGS} e ON e.frame_id = v.frame_id "
            f"WHERE {filters} AND e.status = 'ready' "
            "AND e.model_id = :model_id AND e.content_hash = f.content_hash "
            f"ORDER BY {distance} + 0, v.frame_id LIMIT :k",
            {**params, "k": limit},
        )
        return frame_hits(session, rows)

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

    def upsert_vectors(self, session: Session, model_id: int, rows: Sequence[VectorRow]) -> None:
        postgres_maint.upsert_vectors(session, model_id, rows)

    def delete_vectors(self, session: Session, model_id: int, frame_ids: Sequence[int]) -> None:
        postgres_maint.delete_vectors(session, model_id, frame_ids)

    def read_vectors(
        self, session: Executor, model_id: int, frame_ids: Sequence[int]
    ) -> dict[int, list[float]]:
        return postgres_maint.read_vectors(session, model_id, frame_ids)

    # -- derived objects ----------------------------------------------------------------------

    def verify_derived(self, session: Executor) -> list[DerivedProblem]:
        """The keyword index's and vector tables' problems; never orphan rows: foreign keys are
        always enforced, so no delete skips its cascade."""
        return derived.postgres_problems(session, vectors=self.vector_off(session) is None)

    def repair_derived(
        self, session: Session, problems: Sequence[DerivedProblem], *, mind_id: int | None = None
    ) -> DerivedRepair:
        """The generated tsvectors are computed by the server on every write: never missing or
        stale, and the foreign keys leave no keyword or vector row without its frame. Frame
        contexts are kept by triggers; the ones found stale (a store written around them, or
        cleared) are recomputed here, which regenerates their ``context_tsv``."""
        if derived.broken(problems, "keyword"):
            derived.postgres_repair_keyword(session, problems)
        if derived.broken(problems, "metadata"):  # invalid or wrong: built again
            session.execute(text(f"DROP INDEX IF EXISTS {frame_metadata.PG_METADATA_INDEX}"))
            session.execute(text(frame_metadata.PG_METADATA_INDEX_DDL))
        derived.postgres_drop_broken_vector_indexes(session, problems)
        derived.repair_vector_tables(self, session, problems)
        params = {} if mind_id is None else {"mind_id": mind_id}
        fixed = rowcount(session.execute(text(stale_context_update(self.dialect, mind_id)),
                                         params))
        orphans = 0
        if self.vector_off(session) is None:
            for model_id in derived.vector_tables(session, self.dialect):
                orphans += postgres_maint.remove_vector_orphans(session, model_id)
        return DerivedRepair(self.verify_derived(session) if problems else [], fixed, orphans)

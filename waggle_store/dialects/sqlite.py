"""SQLite adapter: FTS5 for keywords, sqlite-vec ``vec0`` for vectors.

Vector tables are ``vec0(mind_id integer partition key, embedding float[d] distance_metric=cosine,
gop_id text, created_ts float)`` with rowid = frame id. The two metadata columns exist so that the
session and time filters run *inside* the KNN scan (sqlite-vec >= 0.1.6 filters on metadata
columns), which keeps filtered pages full without a post-filter. What the KNN cannot see is the
manifest (is this vector current for the frame's content?); those few stale rows are filtered
afterwards and the scan widens (``k`` up to vec0's limit, then an exact scan) until the page is
full or the candidates are exhausted.

That KNN is a brute-force scan through the virtual-table interface (~900 ns a row), so the lane
is first asked of the in-process exact index (:mod:`waggle_store.dialects.sqlite_vecindex`: a
numpy matrix per (mind, model), kept coherent through a change log, every candidate verified in
SQL); vec0's KNN answers when the index cannot (no numpy, no log yet, over its memory budget).

The vec0 tables' DDL and rows and the FTS5 repairs live in
:mod:`waggle_store.dialects.sqlite_maint`, the keyword lane's statements in
:mod:`waggle_store.dialects.sqlite_keyword`; the adapter's methods delegate to them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from waggle_store.dialects import derived, frame_metadata, sqlite_keyword, sqlite_maint
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
    T_FRAME_METADATA,
    checked_knn,
    connection_of,
    current_hits,
    frame_filters,
    frame_hits,
    frame_select,
    knn_attributes,
    like_search,
    run_lane,
)
from waggle_store.dialects.info import engine_info
from waggle_store.dialects.keyword_rank import (
    FrameCounts,
    TermCounts,
    keyword_rows,
)
from waggle_store.dialects.sqlite_keyword import TERMS_PER_MASK as TERMS_PER_MASK
from waggle_store.dialects.sqlite_keyword import fts5_match_expression as fts5_match_expression
from waggle_store.dialects.sqlite_keyword import fts5_phrases as fts5_phrases
from waggle_store.dialects.sqlite_vecindex import VectorIndex

#: sqlite-vec 0.1.x refuses a KNN ``k`` above this.
VEC0_MAX_K: Final = 4096


def _vec_json(vector: Sequence[float]) -> str:
    """vec0 accepts JSON text; repr of a float round-trips it exactly."""
    return "[" + ",".join(map(repr, map(float, vector))) + "]"


class SQLiteAdapter:
    dialect = "sqlite"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._vector_tables = VectorTables()
        #: The in-process exact index in front of vec0's KNN (dialects/sqlite_vecindex.py).
        self.vector_index = VectorIndex()
        #: Minds searched -> frames counted (idf's N): see :mod:`keyword_rank`.
        self.frame_counts = FrameCounts()
        #: Minds searched and a common term -> the frames holding it: see :mod:`keyword_rank`.
        self.term_counts = TermCounts()

    def capabilities(self, session: Session) -> Capabilities:
        info = engine_info(self.engine)
        reasons: list[str] = []
        versions: dict[str, str] = {"sqlite": info.sqlite_version or "?"}
        problems = self.verify_derived(session)  # with the orphan rows, last
        fts = not derived.broken(problems, "keyword")
        reasons.extend(derived.derived_reasons(problems))
        vec = bool(info.vector_extension)
        if vec:
            versions["sqlite_vec"] = str(session.execute(text("SELECT vec_version()")).scalar())
        else:
            reasons.append(f"vector search off: {info.vector_reason or 'sqlite-vec is not loaded'}")
        reasons.extend(info.warnings)
        return Capabilities("sqlite", keyword_search=fts, vector_backend=vec, reasons=reasons,
                            versions=versions)

    def vector_off(self, session: Executor) -> str | None:
        info = engine_info(self.engine)
        if info.vector_extension is None:
            connection_of(session)  # no connection made yet: the probe runs on connect
        if info.vector_extension:
            return None
        return f"vector search off: {info.vector_reason or 'sqlite-vec is not loaded'}"

    # -- lanes ------------------------------------------------------------------------------

    def keyword_search(
        self, session: Executor, *, terms: Sequence[str], where: LaneFilter, limit: int
    ) -> list[LaneHit]:
        """The idf sum of :mod:`~waggle_store.dialects.keyword_rank`, the Postgres lane's formula,
        in one statement over FTS5.

        FTS5's own ``bm25()`` cannot tell which column a term matched, so each term is asked of
        each column (``fts.content MATCH :t0``, ``fts.context MATCH :t0``: a column-restricted
        query of the quoted term; ``m``, one row per frame, term and column matched). ``g`` has,
        per frame, which terms it matched in its own words and which in its context (bit masks);
        ``c`` keeps the searched minds' frames among them; ``w`` counts ``df`` per term over
        ``c`` (before the session/time filters) and ``N``, and turns them into idfs. The score
        and the tie order (length of content plus context, then id) are the Postgres lane's, so
        an exported mind ranks alike on both dialects. A query term known to be common
        (``term_counts``) is asked of the other terms' frames only, as on Postgres
        (:mod:`keyword_rank`)."""
        phrases = fts5_phrases(terms)
        if not phrases or not where.mind_ids:
            return []
        rows = keyword_rows(
            lambda common: self._keyword_rows(session, phrases, where, limit, common),
            lambda dfs: self._shortest_rows(session, phrases, where, limit, dfs),
            self.frame_counts, self.term_counts, where.mind_ids, phrases, limit)
        return frame_hits(session, rows)

    def _keyword_rows(self, session: Executor, terms: Sequence[str], where: LaneFilter,
                      limit: int, common: Mapping[int, int]
                      ) -> tuple[list[Any], bool]:
        """The lane's statement (:func:`sqlite_keyword.keyword_statement`)."""
        return sqlite_keyword.keyword_statement(self.frame_counts, session, terms, where,
                                                limit, common)

    def _shortest_rows(self, session: Executor, terms: Sequence[str], where: LaneFilter,
                       limit: int, dfs: Mapping[int, int]
                       ) -> tuple[list[Any], bool]:
        """The walk of a query of common terms (:func:`sqlite_keyword.shortest_statement`)."""
        return sqlite_keyword.shortest_statement(self.frame_counts, session, terms, where,
                                                 limit, dfs)

    def like_search(
        self, session: Executor, *, patterns: Sequence[str], where: LaneFilter, limit: int
    ) -> list[LaneHit]:
        return like_search(session, operator="LIKE", patterns=patterns, where=where, limit=limit)

    def vector_search(
        self,
        session: Executor,
        *,
        model_id: int,
        vector: Sequence[float],
        where: LaneFilter,
        limit: int,
    ) -> list[LaneHit]:
        """Each mind's hits from the in-process index, or from vec0's KNN where the index cannot
        answer (no numpy, no change log yet, over its memory budget); nearest first."""
        hits: list[LaneHit] = []
        for mind_id in map(int, where.mind_ids):
            found = self.vector_index.search(session, model_id, vector, where, mind_id, limit)
            if found is None:
                found = self._vector_search_one(session, model_id, vector, where, mind_id, limit)
            hits.extend(found)
        hits.sort(key=lambda h: (h.score, h.frame_id))
        return hits[:limit]

    def _vector_search_one(
        self,
        session: Executor,
        model_id: int,
        vector: Sequence[float],
        where: LaneFilter,
        mind_id: int,
        limit: int,
    ) -> list[LaneHit]:
        table = vector_table_name(model_id)
        qvec = _vec_json(vector)
        params: dict[str, Any] = {"q": qvec, "mind_id": mind_id, "check_mind": mind_id}
        extra = []
        if where.gop_id is not None:
            params["gop_id"] = where.gop_id
            extra.append("AND gop_id = :gop_id")
        if where.since is not None:
            params["since_ts"] = where.since.timestamp()
            extra.append("AND created_ts >= :since_ts")
        if where.until is not None:
            params["until_ts"] = where.until.timestamp()
            extra.append("AND created_ts <= :until_ts")
        # ``len(rows) < k`` still tells "every candidate seen": the manifest check is LEFT JOINs.
        # The frame's attributes (where=) are checked with the manifest; a page they thin out
        # widens like one of stale vectors.
        attributes = knn_attributes(where, params, self.dialect)
        knn = checked_knn(
            f"(SELECT rowid, distance FROM {table} WHERE embedding MATCH :q AND k = :k "
            f"AND mind_id = :mind_id {' '.join(extra)}) c",
            "rowid",
            "distance",
            attributes,
        )
        params["model_id"] = model_id
        k = min(max(limit, 1) * (1 if attributes is None else ATTRIBUTE_WIDENING), VEC0_MAX_K)
        while True:
            # Sorted here: vec0 refuses any ORDER BY but its own distance.
            rows = sorted(run_lane(session, knn, {**params, "k": k}), key=lambda r: (r[1], r[0]))
            hits = current_hits(session, rows, model_id, attributes is not None)
            if len(hits) >= limit or len(rows) < k:
                return hits[:limit]  # full page, or every candidate seen
            if k >= VEC0_MAX_K:
                break
            k = min(k * 4, VEC0_MAX_K)
        return self._exact_vector_search(session, model_id, qvec, where, mind_id, limit)

    def _exact_vector_search(
        self,
        session: Executor,
        model_id: int,
        qvec: str,
        where: LaneFilter,
        mind_id: int,
        limit: int,
    ) -> list[LaneHit]:
        """Scan every matching frame: only reached when stale vectors, or frames failing the
        where= attributes, crowd out a 4096-wide KNN."""
        params: dict[str, Any] = {"q": qvec, "model_id": model_id, "limit": limit}
        filters = frame_filters(
            LaneFilter([mind_id], where.gop_id, where.since, where.until, where.attributes),
            params, dialect=self.dialect,
        )
        rows = run_lane(
            session,
            f"SELECT f.id, vec_distance_cosine(v.embedding, :q) AS d, {frame_select()} "
            f"FROM {T_FRAMES} f "
            f"JOIN {T_EMBEDDINGS} e ON e.frame_id = f.id AND e.status = 'ready' "
            "AND e.model_id = :model_id AND e.content_hash = f.content_hash "
            f"JOIN {vector_table_name(model_id)} v ON v.rowid = f.id "
            f"WHERE {filters} ORDER BY d, f.id LIMIT :limit",
            params,
        )
        return frame_hits(session, rows)

    # -- vector index maintenance -------------------------------------------------------------
    # The DDL and row writes live in dialects/sqlite_maint.py (module size); these methods are
    # the SearchAdapter protocol's entry points and own the per-engine caches.

    def ensure_vector_table(
        self, session: Session, model_id: int, dimensions: int, *, repair: bool = False
    ) -> None:
        if self._vector_tables.ready(model_id) and not repair:
            return
        sqlite_maint.create_vector_table(session, model_id, dimensions)
        self._vector_tables.ensured_in(session, model_id)

    def upsert_vectors(self, session: Session, model_id: int, rows: Sequence[VectorRow]) -> None:
        if not rows:
            return
        # vec0 has no upsert: re-indexing a frame deletes its row first.
        self.delete_vectors(session, model_id, [r.frame_id for r in rows])
        sqlite_maint.insert_vectors(session, model_id, rows)

    def delete_vectors(self, session: Session, model_id: int, frame_ids: Sequence[int]) -> None:
        sqlite_maint.delete_vectors(session, model_id, frame_ids)

    def read_vectors(
        self, session: Executor, model_id: int, frame_ids: Sequence[int]
    ) -> dict[int, list[float]]:
        return sqlite_maint.read_vectors(session, model_id, frame_ids)

    # -- derived objects ----------------------------------------------------------------------

    def verify_derived(self, session: Executor) -> list[DerivedProblem]:
        return [*derived.sqlite_problems(session, vectors=self.vector_off(session) is None),
                *sqlite_maint.orphan_rows(session)]

    def repair_derived(
        self, session: Session, problems: Sequence[DerivedProblem], *, mind_id: int | None = None
    ) -> DerivedRepair:
        if derived.broken(problems, "keyword"):
            derived.sqlite_repair_keyword(session)
        if derived.broken(problems, "metadata"):
            for statement in frame_metadata.SQLITE_METADATA_DDL:
                session.execute(text(statement))
        derived.repair_vector_tables(self, session, problems)
        orphans = (sqlite_maint.remove_orphan_rows(session)
                   if any(p.lane == "rows" for p in problems) else 0)
        fixed = sqlite_maint.repair_keyword_index(session, mind_id)
        orphans += sqlite_maint.remove_keyword_orphans(session)
        if self.vector_off(session) is None:
            for model_id in derived.vector_tables(session, self.dialect):
                ids = sqlite_maint.vector_orphans(session, model_id)
                self.delete_vectors(session, model_id, ids)  # logged for the vector index
                orphans += len(ids)
        # The metadata filter's side table brought in step with the frames (when it exists).
        metadata = (frame_metadata.sqlite_resync_metadata(session, mind_id)
                    if derived.sqlite_has_table(session, T_FRAME_METADATA) else 0)
        return DerivedRepair(self.verify_derived(session) if problems else [], fixed, orphans,
                             metadata)

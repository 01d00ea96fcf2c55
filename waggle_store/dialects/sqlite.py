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

The vec0 tables' DDL and rows and the FTS5 repairs live in :mod:`waggle_store.dialects.sqlite_maint`
(kept apart so each module stays under 400 lines); the adapter's methods delegate to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sqlalchemy import ColumnElement, bindparam, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

from waggle_store.dialects import derived, sqlite_maint
from waggle_store.dialects.base import (
    T_EMBEDDINGS,
    T_FRAMES,
    T_FTS,
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
)
from waggle_store.dialects.context_index import CONTEXT_COLUMN
from waggle_store.dialects.info import engine_info
from waggle_store.dialects.keyword_rank import (
    FrameCounts,
    TermCounts,
    count_frames,
    keyword_rows,
    only_stop_words,
    ranked_page_sql,
    score_sql,
    shortest_page_sql,
    walk_parts,
    weights_sql,
)
from waggle_store.dialects.sqlite_vecindex import VectorIndex

#: Query terms per integer bit mask of the keyword lane (two bits a term; 62 of a signed 64-bit
#: integer's bits, so a sum of distinct bits never overflows).
TERMS_PER_MASK: Final = 31
#: sqlite-vec 0.1.x refuses a KNN ``k`` above this.
VEC0_MAX_K: Final = 4096


def fts5_phrases(terms: Sequence[str]) -> list[str]:
    """The keyword lane's FTS5 query strings, one per term (each bound as a ``MATCH`` value);
    empty: skip the lane (FTS5 rejects an empty expression).

    Raw query text never reaches ``MATCH``: each term is one quoted string, and inside FTS5
    double quotes every character is literal except ``"`` itself, written ``""``, so
    ``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``^``, ``:`` and parentheses lose their meaning. The
    quoted text is tokenised like the indexed content (``porter unicode61``), so "node.js"
    becomes the phrase ``node js``. A term of Postgres stop words only is dropped
    (:func:`~waggle_store.dialects.keyword_rank.only_stop_words`): the Postgres lane finds
    nothing for it, and the two lanes rank alike.
    """
    return [
        '"' + clean.replace('"', '""') + '"'
        for clean in map(clean_term, terms)
        if clean and not only_stop_words(clean)
    ]


def fts5_match_expression(terms: Sequence[str]) -> str | None:
    """The lane's terms as one FTS5 ``MATCH`` string (:func:`fts5_phrases` ORed; ``None`` for
    no terms): what finds every frame matching any term, for a caller that does not rank."""
    phrases = fts5_phrases(terms)
    return " OR ".join(phrases) if phrases else None


def _vec_json(vector: Sequence[float]) -> str:
    """vec0 accepts JSON text; repr of a float round-trips it exactly."""
    return "[" + ",".join(map(repr, map(float, vector))) + "]"


#: In a query of common terms only, terms that this share of the searched frames hold (all of
#: them: the product of their shares) are looked up per walked frame; rarer ones' lists are read
#: first
#: (:meth:`SQLiteAdapter._shortest_rows`; at 100k frames, a word in 28 % of them: 10 against
#: 13 ms; in 9 %: 72 against 4 ms).
PROBE_SHARE: Final = 1 / 4

#: A frame's length for the keyword lane's tie order, in UTF-8 bytes as on Postgres
#: (``keyword_rank``): a BLOB's length is its size; a TEXT's is counted character by character.
TEXT_BYTES: Final = ("length(CAST(f.content AS BLOB)) "
                     f"+ coalesce(length(CAST(f.{CONTEXT_COLUMN} AS BLOB)), 0)")


class SQLiteAdapter:
    dialect = "sqlite"

    def reads_per_statement(self, limit: int) -> bool:
        return False  # the index lane's log position must match the lanes' snapshot

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._vector_tables = VectorTables()
        #: The in-process exact index in front of vec0's KNN (dialects/sqlite_vecindex.py).
        self.vector_index = VectorIndex()
        #: Minds searched -> frames counted (idf's N): see :mod:`keyword_rank`.
        self.frame_counts = FrameCounts()
        #: Minds searched and a common term -> the frames holding it: see :mod:`keyword_rank`.
        self.term_counts = TermCounts()

    def release_caches(self) -> None:
        self.vector_index.clear()  # up to WAGGLE_VECTOR_INDEX_BYTES of vectors

    def capabilities(self, session: Session) -> Capabilities:
        info = engine_info(self.engine)
        reasons: list[str] = []
        versions: dict[str, str] = {"sqlite": info.sqlite_version or "?"}
        problems = self.verify_derived(session)
        fts = not derived.keyword_broken(problems)
        reasons.extend(derived.derived_reasons(problems))
        reasons.extend(sqlite_maint.orphan_rows(session))
        vec = bool(info.vector_extension)
        if vec:
            versions["sqlite_vec"] = str(session.execute(text("SELECT vec_version()")).scalar())
        else:
            reasons.append(f"vector search off: {info.vector_reason or 'sqlite-vec is not loaded'}")
        reasons.extend(info.warnings)
        return Capabilities("sqlite", keyword_search=fts, vector_backend=vec, reasons=reasons,
                            versions=versions)

    def vector_backend_available(self, session: Executor) -> bool:
        info = engine_info(self.engine)
        if info.vector_extension is None:
            connection_of(session)  # no connection made yet: the probe runs on connect
        return bool(info.vector_extension)

    def vector_off_reason(self, session: Executor) -> str:
        info = engine_info(self.engine)
        return f"vector search off: {info.vector_reason or 'sqlite-vec is not loaded'}"

    def in_values(self, column: ColumnElement[Any], name: str,
                  type_: TypeEngine[Any]) -> ColumnElement[bool]:
        return column.in_(bindparam(name, expanding=True, type_=type_))

    # -- lanes ------------------------------------------------------------------------------

    def keyword_search(
        self, session: Executor, *, terms: Sequence[str], where: LaneFilter, limit: int,
        expired_count: bool = False,
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
        an exported mind ranks alike on both dialects. FTS5's BM25F (``bm25(fts, 1.0, 0.5)``),
        which ranked here before, is compared with this on the LoCoMo development set in
        ``benchmarks/README.md``. A query term known to be common (``term_counts``) is asked of
        the other terms' frames only, as on Postgres (:mod:`keyword_rank`)."""
        phrases = fts5_phrases(terms)
        if not phrases or not where.mind_ids:
            return []
        rows = keyword_rows(
            lambda common: self._keyword_rows(session, phrases, where, limit, expired_count,
                                              common),
            lambda dfs: self._shortest_rows(session, phrases, where, limit, expired_count, dfs),
            self.frame_counts, self.term_counts, where.mind_ids, phrases, limit,
            expired=expired_count)
        return frame_hits(session, rows)

    def count_term_frames(self, session: Executor, mind_ids: Sequence[int], term: str) -> int:
        """The frames of the minds holding ``term`` (a phrase of :func:`fts5_phrases`) in either
        column: the ``df`` the keyword statement counts."""
        return count_frames(session, mind_ids,
                            f"f.id IN (SELECT rowid FROM {T_FTS} WHERE {T_FTS} MATCH :t)", term)

    def _keyword_rows(self, session: Executor, phrases: Sequence[str], where: LaneFilter,
                      limit: int, expired_count: bool, common: Mapping[int, int]
                      ) -> tuple[list[Any], bool]:
        """The lane's statement (see :meth:`keyword_search`): its rows and whether it counted
        ``N``. Its candidates are the frames holding a term not in ``common`` (terms known to be
        common, with their ``df``: :class:`~waggle_store.dialects.keyword_rank.TermCounts`),
        whose (term, column) queries are asked of those candidates only."""
        params: dict[str, Any] = {"limit": int(limit)}
        n = range(len(phrases))
        for i, phrase in enumerate(phrases):
            params[f"t{i}"] = phrase
        minds = frame_filters(LaneFilter(where.mind_ids), params)
        filters = frame_filters(where, params, alias="c")
        # Which (term, column) pairs a frame matched, as bits: term i sets bit 2i in the own words
        # and 2i + 1 in the context, in integer k = i // TERMS_PER_MASK. A frame is returned at
        # most once per (term, column) query, so the sum of its rows' bits is their OR, and one
        # aggregate per mask replaces two per term (a third of the statement's time at 100k).
        masks = range((len(phrases) + TERMS_PER_MASK - 1) // TERMS_PER_MASK)

        def bit(i: int, context: int) -> int:
            return 1 << (2 * (i % TERMS_PER_MASK) + context)

        def mask(i: int) -> str:
            return f"c.b{i // TERMS_PER_MASK}"

        def pairs(terms: Sequence[int], among: str = "") -> str:
            return " UNION ALL ".join(
                "SELECT rowid AS id, "
                + ", ".join(f"{bit(i, context) if k == i // TERMS_PER_MASK else 0} AS b{k}"
                            for k in masks)
                + f" FROM {T_FTS} WHERE {T_FTS}.{column} MATCH :t{i}{among}"
                for i in terms
                for context, column in enumerate(("content", "context"))
            )

        generating, matches = "", pairs([i for i in n if i not in common])
        if common:
            # The common terms' pairs only for the frames found by the others: FTS5 reads the
            # term's list through and SQLite keeps the candidates' rowids. ``+`` keeps the
            # rowids from FTS5 itself, which would look each one up in the list: ~23 µs a
            # lookup against ~45 ns an entry read through (16 ms against 8 for 718 candidates
            # and a list of 87k at 100k frames).
            generating = f"r AS MATERIALIZED ({matches}), "
            matches = (f"SELECT * FROM r UNION ALL "
                       f"{pairs(sorted(common), ' AND +rowid IN (SELECT id FROM r)')}")
        sums = ", ".join(f"sum(m.b{k}) AS b{k}" for k in masks)
        anywhere = [f"({mask(i)} & {bit(i, 0) | bit(i, 1)}) != 0" for i in n]
        counts = []
        for i, a in enumerate(anywhere):
            count = f"sum({a})"
            if i in common:  # counted among the candidates only: its known df, at least that
                params[f"df{i}"] = common[i]
                count = f"max(:df{i}, {count})"
            counts.append(f"{count} AS d{i}")
        total, counting = self.frame_counts.total_sql(where.mind_ids, minds, params, "max",
                                                      expired=expired_count)
        score = score_sql(
            [f"w.w{i}" for i in n], [f"({mask(i)} & {bit(i, 0)}) != 0" for i in n], anywhere
        )
        # g groups the matches per frame before the frames are read; CROSS JOIN keeps g the outer
        # loop (one primary-key probe per candidate: the planner otherwise walked the whole
        # mind's mind_id index, 2x slower at 100k frames). The page's frames are read after the
        # LIMIT, so the sort carries ids, not contents.
        rows = run_lane(
            session,
            f"WITH {generating}m AS MATERIALIZED ({matches}), "
            f"g AS MATERIALIZED (SELECT m.id, {sums} FROM m GROUP BY m.id), "
            f"c AS MATERIALIZED (SELECT g.*, f.mind_id, f.gop_id, f.created_at, "
            f"{TEXT_BYTES} AS len "
            f"FROM g CROSS JOIN {T_FRAMES} f ON f.id = g.id WHERE {minds}), "
            f"w AS MATERIALIZED ("
            + weights_sql(f"SELECT {total} AS n, {', '.join(counts)} FROM c", len(phrases),
                          common)
            + ") "
            + ranked_page_sql(score, filters, frame_select(), len(phrases)),
            params,
        )
        return rows, counting

    def _shortest_rows(self, session: Executor, phrases: Sequence[str], where: LaneFilter,
                       limit: int, expired_count: bool, dfs: Mapping[int, int]
                       ) -> tuple[list[Any], bool]:
        """The page of a query of common terms only (``dfs``: each one's known ``df``), walked
        shortest first (:func:`~waggle_store.dialects.keyword_rank.shortest_page_sql`): its rows
        and whether it counted ``N``.

        Each walked frame is tested against each term's own-words list in one of two ways.
        Terms most frames hold (together, :data:`PROBE_SHARE` of them or more) are looked up in
        their lists for the walked frame (``rowid =``: ~0.1 ms a lookup at 100k frames), and
        the walk ends after about as many frames as its page; rarer ones' lists are read into
        sets first (~0.4 µs an entry: 35 ms for a word in 87 % of 100k frames, 2–4 ms for one
        in 5–9 %), as their walk is longer (a word in 9 %: 72 ms of lookups). Measured on the
        benchmark's 100k-frame store (``benchmarks/README.md``)."""
        walk = walk_parts(self.frame_counts, where, phrases, dfs, limit, expired=expired_count)
        # (Terms taken as independent: the share holding them all is their shares' product.)
        probe = walk.n is not None and math.prod(df / walk.n for df in dfs.values()) >= PROBE_SHARE
        holds = " AND ".join(
            f"EXISTS (SELECT 1 FROM {T_FTS} x WHERE x.content MATCH :t{i} AND x.rowid = f.id)"
            if probe else f"f.id IN (SELECT rowid FROM {T_FTS} x WHERE x.content MATCH :t{i})"
            for i in range(len(phrases))
        )
        # The walk in the index's order, bounded by the length of the mind's :walk-th shortest
        # frame (read off the same index, which holds the length: no frame is read for it).
        bound = (f"(SELECT max(s.len) FROM (SELECT {TEXT_BYTES} AS len FROM {T_FRAMES} f "
                 f"WHERE {walk.minds} ORDER BY {TEXT_BYTES} LIMIT :walk) s)")
        walked = (f"SELECT f.id, {TEXT_BYTES} AS len FROM {T_FRAMES} f WHERE {walk.filters} "
                  f"AND {TEXT_BYTES} <= {bound} AND {holds} ORDER BY {TEXT_BYTES}, f.id "
                  "LIMIT :limit")
        dfs_sql = [f":df{i}" for i in range(len(phrases))]
        counted = (f"SELECT max({walk.total}, {', '.join(dfs_sql)}) AS n, "
                   + ", ".join(f"{df} AS d{i}" for i, df in enumerate(dfs_sql)))
        rows = run_lane(session, shortest_page_sql(counted, len(phrases), walked), walk.params)
        return rows, walk.counting

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
        return self.start_vector_search(
            session, model_id=model_id, vector=vector, where=where, limit=limit
        ).result()

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
        # Each mind's index scan starts now (on a worker thread); vec0 answers, on the
        # connection, when the result is asked for.
        scans = [(int(mind_id), self.vector_index.start(
            session, model_id, vector, where, int(mind_id), limit)) for mind_id in where.mind_ids]

        def finish() -> list[LaneHit]:
            hits: list[LaneHit] = []
            for mind_id, scan in scans:
                found = scan.result() if scan is not None else None
                if found is None:  # no numpy, no change log yet, over the memory budget: vec0
                    found = self._vector_search_one(
                        session, model_id, vector, where, mind_id, limit
                    )
                hits.extend(found)
            hits.sort(key=lambda h: (h.score, h.frame_id))
            return hits[:limit]

        return DeferredLane(finish)

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
        knn = checked_knn(
            f"(SELECT rowid, distance FROM {table} WHERE embedding MATCH :q AND k = :k "
            f"AND mind_id = :mind_id {' '.join(extra)}) c",
            "rowid",
            "distance",
        )
        params["model_id"] = model_id
        k = min(max(limit, 1), VEC0_MAX_K)
        while True:
            # Sorted here: vec0 refuses any ORDER BY but its own distance.
            rows = sorted(run_lane(session, knn, {**params, "k": k}), key=lambda r: (r[1], r[0]))
            hits = current_hits(session, rows, model_id)
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
        """Scan every matching frame: only reached when stale vectors crowd out a 4096-wide KNN."""
        params: dict[str, Any] = {"q": qvec, "model_id": model_id, "limit": limit}
        filters = frame_filters(
            LaneFilter([mind_id], where.gop_id, where.since, where.until), params
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

    def vector_table_exists(self, session: Session, model_id: int) -> bool:
        return sqlite_maint.vector_table_exists(session, model_id)

    def upsert_vectors(self, session: Session, model_id: int, rows: Sequence[VectorRow]) -> None:
        if not rows:
            return
        # vec0 has no upsert (the seed crashed re-indexing a frame, reference §23.3).
        self.delete_vectors(session, model_id, [r.frame_id for r in rows])
        sqlite_maint.insert_vectors(session, model_id, rows)

    def delete_vectors(self, session: Session, model_id: int, frame_ids: Sequence[int]) -> None:
        sqlite_maint.delete_vectors(session, model_id, frame_ids)

    def read_vectors(
        self, session: Executor, model_id: int, frame_ids: Sequence[int]
    ) -> dict[int, list[float]]:
        return sqlite_maint.read_vectors(session, model_id, frame_ids)

    def frames_missing_vectors(
        self, session: Session, model_id: int, mind_id: int | None,
        *, after: int = 0, limit: int | None = None, up_to: int | None = None,
    ) -> list[int]:
        return frames_missing_vectors(
            session, vector_table_name(model_id), "rowid", model_id, mind_id,
            after=after, limit=limit, up_to=up_to,
        )

    def remove_vector_orphans(self, session: Session, model_id: int) -> int:
        ids = sqlite_maint.vector_orphans(session, model_id)
        self.delete_vectors(session, model_id, ids)
        return len(ids)

    # -- keyword index maintenance ------------------------------------------------------------

    def _has_fts_table(self, session: Session) -> bool:
        """A dropped FTS5 table has no rows to fix (``verify_derived`` reports it)."""
        return sqlite_maint.has_fts_table(session)

    def repair_keyword_index(self, session: Session, mind_id: int | None) -> int:
        return sqlite_maint.repair_keyword_index(session, mind_id)

    def remove_keyword_orphans(self, session: Session) -> int:
        return sqlite_maint.remove_keyword_orphans(session)

    def orphan_rows(self, session: Executor) -> list[str]:
        return sqlite_maint.orphan_rows(session)

    def remove_orphan_rows(self, session: Session) -> int:
        return sqlite_maint.remove_orphan_rows(session)

    # -- derived objects ----------------------------------------------------------------------

    def verify_derived(self, session: Executor) -> list[DerivedProblem]:
        return derived.sqlite_problems(session, vectors=self.vector_backend_available(session))

    def repair_derived(
        self, session: Session, problems: Sequence[DerivedProblem]
    ) -> list[DerivedProblem]:
        if derived.keyword_broken(problems):
            derived.sqlite_repair_keyword(session)
        derived.repair_vector_tables(self, session, problems)
        return self.verify_derived(session)

"""HybridSearch: keyword and vector lanes, normalised RRF, relevance, explain.

One algorithm for both dialects, read top to bottom in :meth:`HybridSearch.search`:

1. plan (:mod:`.plan`): the query's terms, the filters, the page;
2. the query embedded, before any read (network calls never hold a database lock);
3. on one read connection, in one transaction: the keyword lane's statement, then the vector
   lane's (each over-fetching :data:`OVERFETCH` times the page, every filter inside the lane);
4. fusion (:mod:`.fusion`), the turns beside its best hits (:mod:`.expand`), then ranking and
   explain (:mod:`.explain`), with the graph distances of the candidates that mention one.

SQL that differs between dialects lives in ``dialects/`` (mostly the adapter, ``SearchAdapter``).

Degradation is explicit, never silent: a lane that cannot run (no embedder, no vector backend, no
vectors for the embedder's model yet, no keyword terms) is left out of the fusion and named in
``explain["degraded"]``; a keyword index that errors falls back to an escaped LIKE scan; an
embedder that fails at query time leaves the keyword results. Only a broken database connection
raises (a pooled connection found lost is replaced and the search run once more first).

``lanes=`` (an addition to the API, used by benchmarks and diagnostics) restricts the search to
``{"keyword"}`` or ``{"vector"}``; the default runs both.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any, Final

from sqlalchemy import Connection
from sqlalchemy import exc as sa_exc

from waggle_store.context import MindContext, StoreContext
from waggle_store.dialects.base import LaneHit, ModelNotActiveError
from waggle_store.errors import DatabaseUnavailableError
from waggle_store.records import SearchResult
from waggle_store.repositories.frames import FrameRepository
from waggle_store.repositories.mind_models import active_model, mismatch_reason
from waggle_store.repositories.vectors import ModelKey, model_key
from waggle_store.search.expand import Expansion, expand
from waggle_store.search.explain import Ranking
from waggle_store.search.fusion import LANE_CONFIDENCE, Fusion
from waggle_store.search.graph import GraphDistances
from waggle_store.search.plan import LANES, MAX_LIMIT, SearchPlan, plan_search, query_names
from waggle_store.search.query import like_patterns
from waggle_store.search.where import check_dimensions
from waggle_store.search.where import query_vector as checked_query_vector
from waggle_store.timeutil import utcnow

__all__ = ["LANES", "MAX_LIMIT", "HybridSearch"]

log = logging.getLogger(__name__)

#: Each lane fetches this many times ``limit`` candidates for the fusion.
OVERFETCH: Final = 2
#: Cosine distance at or above which a "nearest" vector shares nothing with the query
#: (similarity <= 0): such hits are noise, and would only push real matches down.
MAX_VECTOR_DISTANCE: Final = 1.0 - 1e-6
#: Decimal places a cosine distance is kept to before the vector lane is ordered and weighed.
#: Vectors are stored as float32 (about 7 significant digits), and the engines sum their 384+
#: products in different orders (numpy's matmul on SQLite, pgvector on Postgres): the same
#: frames' distances differ by ~1e-8 between them. Below the fifth decimal a distance carries
#: no information but that noise, which reordered equal-in-exact-arithmetic hits (the same
#: sentence said on three days) and flipped the lane's median test, so the same memory ranked
#: differently on the two backends. Quantised, such hits tie, and ties go by frame id.
DISTANCE_DECIMALS: Final = 5


def lost_connection(exc: DatabaseUnavailableError) -> bool:
    """Whether ``exc`` is a pooled connection found lost by a statement (SQLAlchemy invalidated
    it), not a failure to connect."""
    cause = exc.__cause__
    return isinstance(cause, sa_exc.DBAPIError) and cause.connection_invalidated


#: A lane hit's sort key: its score, then its frame id.
_SCORE_THEN_ID: Final = attrgetter("score", "frame_id")


def settled(hits: Sequence[LaneHit]) -> list[LaneHit]:
    """The vector lane's hits with their distances quantised (:data:`DISTANCE_DECIMALS`), nearest
    first, ties by frame id; hits sharing nothing with the query (:data:`MAX_VECTOR_DISTANCE`)
    dropped."""
    # LaneHit(...) directly: dataclasses.replace re-reads the fields on every call, 4x slower.
    kept = [LaneHit(h.frame_id, round(h.score, DISTANCE_DECIMALS), h.frame, h.mentions)
            for h in hits if h.score < MAX_VECTOR_DISTANCE]
    kept.sort(key=_SCORE_THEN_ID)
    return kept


def _recover(conn: Connection, exc: sa_exc.DBAPIError) -> None:
    """After a lane's statement failed: a lost connection is raised (not a failing index:
    :meth:`HybridSearch.search` runs the search once more); otherwise the transaction is rolled
    back so the next statement can run (Postgres aborts it on error)."""
    if exc.connection_invalidated:
        raise exc
    conn.rollback()


def _embedding_failed(degraded: list[str], exc: BaseException) -> None:
    """The query could not be embedded: the search goes on with its keyword lane, and says why."""
    log.warning("query embedding failed, searching keywords only: %s", exc)
    degraded.append(f"vector lane off: the embedder failed: {type(exc).__name__}: {exc}")


class HybridSearch:
    """The search of one store; its caches are its own (one per store, never module-global)."""

    def __init__(self, store: StoreContext) -> None:
        self._store = store
        self._graph = GraphDistances(store.adapter)
        #: Mind id -> (its active model id, that model's key). The cache only saves the lookup:
        #: whether the model is still the mind's active one (a switch may flip it) is checked by
        #: the vector lane's own statement, at no extra round trip, and a lane that finds it
        #: replaced looks again (:meth:`_vector_lane`).
        self._models: dict[int, tuple[int, ModelKey]] = {}

    # -- public -------------------------------------------------------------------------------

    def search(self, mind: MindContext, query: str, *, limit: int = 20, gop_id: str | None = None,
               profile: str = "balanced", since: datetime | str | None = None,
               until: datetime | str | None = None, context: Mapping[int, int] | None = None,
               lanes: Collection[str] | None = None,
               query_vector: Sequence[float] | None = None, where: Any = None,
               expand: bool = True) -> list[SearchResult]:
        """Hybrid search of one mind; see the module docstring.

        ``query_vector``: the query's embedding by the mind's model when the caller has it
        (cognify's linker, or the caller's own), so the query is not embedded — and billed —
        again; ``query`` still drives the keyword lane. ``where``: a ``ws.Where`` (or a dict),
        applied inside both lanes. ``expand=False`` leaves out :mod:`.expand`."""
        plan = plan_search(mind.id, query, limit, gop_id, profile, since, until, context, lanes,
                           where, expand)  # every argument checked before anything runs
        degraded: list[str] = []
        qvec, key = self._embed_query(mind, query, plan, degraded,
                                      checked_query_vector(query_vector))
        # A search only reads, so one that lost its pooled connection (the server restarted, or
        # ended the backend, since the connection's last use) runs once more on a fresh one:
        # the pool skips its ping for a connection used moments ago (postgres_engine.py). Not in
        # a host's transaction, which the lost connection took with it.
        retry = self._store.db.owns_connections
        while True:
            notes = list(degraded)
            meta: dict[str, Any] = {"degraded": notes,
                                    "keyword_backend": self._store.adapter.dialect}
            try:
                found = self._read(mind, plan, qvec, key, meta, query)
                break
            except DatabaseUnavailableError as exc:
                if not (retry and lost_connection(exc)):
                    raise
                log.warning("search lost its database connection, running it again: %s", exc)
                retry = False
        if found is None:
            return []
        ran, fusion, distances, expansion = found
        ranking = Ranking(profile=plan.profile, now=utcnow(), query=query,
                          keyword="keyword" in plan.lanes, terms=plan.terms, periods=plan.periods)
        for hits in (*ran.values(), expansion.hits):
            ranking.take(hits)
        return ranking.results(ran=ran, fusion=fusion, distances=distances, limit=plan.limit,
                               keyword_backend=meta["keyword_backend"], degraded=notes,
                               expansion=expansion)

    def _read(self, mind: MindContext, plan: SearchPlan, qvec: Sequence[float] | None,
              key: ModelKey | None, meta: dict[str, Any], query: str
              ) -> tuple[dict[str, list[LaneHit]], Fusion, Mapping[int, int], Expansion] | None:
        """Lanes, fusion, expansion and graph distances, in one read transaction (None: no hits)."""
        degraded: list[str] = meta["degraded"]
        k = plan.limit * OVERFETCH
        ran: dict[str, list[LaneHit]] = {}
        with self._store.read_connection() as conn:
            if "keyword" in plan.lanes:
                if plan.terms:
                    hits = self._keyword_lane(conn, plan, k, meta, query)
                    if hits is not None:
                        ran["keyword"] = hits
                else:
                    degraded.append("keyword lane off: no search terms in the query")
            vector_hits = self._vector_lane(conn, mind, plan, k, qvec, key, degraded)
            if vector_hits is not None:
                ran["vector"] = vector_hits
            # Confidence-weighted RRF (search/fusion.py): each lane's hits are weighted by that
            # lane's own raw scores (the idf sum relative to its best hit; cosine similarity
            # standing out from the lane's median), so a lane's clear best match is not
            # outranked by frames that merely appear in both lanes.
            fusion = Fusion(
                {lane: [h.frame_id for h in lane_hits] for lane, lane_hits in ran.items()},
                weights={lane: LANE_CONFIDENCE[lane]([h.score for h in lane_hits])
                         for lane, lane_hits in ran.items()},
            )
            if not fusion.scores:
                return None
            expansion = expand(conn, self._store.adapter.dialect, plan, ran, fusion)
            distances = plan.context
            if distances is None:
                # Only frames that mention an entity can be near one; none, and no query runs.
                mentioning = sorted({h.frame_id for lane_hits in (*ran.values(), expansion.hits)
                                     for h in lane_hits if h.mentions})
                distances = (self._graph(conn, mind.id, query_names(query), mentioning)
                             if mentioning else {})
        return ran, fusion, distances, expansion

    def recall(self, mind: MindContext, query: str, **options: Any) -> list[SearchResult]:
        """:meth:`search`, then count one access of every returned frame, in one transaction."""
        results = self.search(mind, query, **options)
        if not results:
            return results
        now = utcnow()
        with self._store.write() as session:
            FrameRepository(session, mind.id).touch_many([r.frame.id for r in results], at=now)
        return [
            dataclasses.replace(r, frame=dataclasses.replace(
                r.frame, access_count=r.frame.access_count + 1, last_accessed=now))
            for r in results
        ]

    # -- lanes --------------------------------------------------------------------------------

    def _embed_query(self, mind: MindContext, query: str, plan: SearchPlan, degraded: list[str],
                     given: Sequence[float] | None
                     ) -> tuple[Sequence[float] | None, ModelKey | None]:
        """The query vector and the embedder's model key, or (None, None) with the reason.

        A mind known (cached) to use another model is not embedded for: the vector could not be
        compared, and a provider call would be billed for nothing."""
        if "vector" not in plan.lanes:
            return None, None
        embedder = self._store.embedder
        if embedder is None:
            degraded.append("vector lane off: no embedder configured")
            return None, None
        if given is not None:  # InvalidInputError, not a degraded lane
            check_dimensions(given, model_key(embedder))
        if given is None and not query.strip():
            degraded.append("vector lane off: empty query")
            return None, None
        try:
            key = model_key(embedder)
            known = self._models.get(mind.id)
            if known is not None and known[1] != key:
                with self._store.read_connection() as conn:  # a switch may have changed it
                    known = self._mind_model(conn, mind.id, cached=False)
            if known is not None and known[1] != key:
                degraded.append(f"vector lane off: {mismatch_reason(mind.name, known[1], key)}")
                return None, None
            if given is not None:
                return list(given), key
            return list(embedder.embed_query(query)), key
        except Exception as exc:  # noqa: BLE001 - an outage must not take keyword search down
            _embedding_failed(degraded, exc)
            return None, None

    def _keyword_lane(self, conn: Connection, plan: SearchPlan, k: int, explain: dict[str, Any],
                      query: str) -> list[LaneHit] | None:
        adapter = self._store.adapter
        try:
            # An expired cached count (N, a common term's df) is counted again by this
            # statement, on this thread (dialects/keyword_rank.py).
            return adapter.keyword_search(conn, terms=plan.terms, where=plan.where, limit=k)
        except sa_exc.DBAPIError as exc:
            _recover(conn, exc)
            log.warning("keyword index failed, using the LIKE fallback: %s", exc.orig)
            explain["degraded"].append(f"keyword index failed ({exc.orig}); LIKE fallback used")
            explain["keyword_backend"] = "like"
        try:
            return adapter.like_search(conn, patterns=like_patterns(query), where=plan.where,
                                       limit=k)
        except sa_exc.DBAPIError as exc:
            _recover(conn, exc)
            explain["degraded"].append(f"keyword lane off: LIKE fallback failed ({exc.orig})")
            return None

    def _vector_lane(self, conn: Connection, mind: MindContext, plan: SearchPlan, k: int,
                     qvec: Sequence[float] | None, key: ModelKey | None,
                     degraded: list[str]) -> list[LaneHit] | None:
        """The vector lane's hits (settled), or None with the reason in ``degraded``.

        The mind's cached model is tried first; if the lane finds it replaced (a switch flipped
        the mind), the mind's active model is looked up again and the lane runs once more."""
        if qvec is None or key is None:
            return None
        adapter = self._store.adapter
        if adapter.vector_off(conn) is not None:
            degraded.append("vector lane off: no vector backend (see store.health())")
            return None
        for cached in (True, False):
            found = self._mind_model(conn, mind.id, cached=cached)
            if found is None:
                degraded.append(f"vector lane off: mind {mind.name!r} has no vectors yet "
                                "(run store.reconcile())")
                return None
            model_id, active = found
            if active != key:
                degraded.append(f"vector lane off: {mismatch_reason(mind.name, active, key)}")
                return None
            try:
                hits = adapter.vector_search(conn, model_id=model_id, vector=qvec,
                                             where=plan.where, limit=k)
            except ModelNotActiveError:
                continue
            except sa_exc.DBAPIError as exc:
                _recover(conn, exc)
                log.warning("vector lane failed, searching keywords only: %s", exc.orig)
                degraded.append(f"vector lane off: the vector index failed ({exc.orig})")
                return None
            # No hits and the cache's model: no row carried the model check, so the mind may
            # have been switched since it was cached.
            if hits or not cached or self._mind_model(conn, mind.id, cached=False) == found:
                return settled(hits)
        degraded.append("vector lane off: the mind's embedding model changed during the search")
        return None

    def forget(self, mind_id: int) -> None:
        """Drop the cached model of a mind (after this process switched it)."""
        self._models.pop(mind_id, None)

    def _mind_model(self, conn: Connection, mind_id: int, *,
                    cached: bool = True) -> tuple[int, ModelKey] | None:
        if cached and mind_id in self._models:
            return self._models[mind_id]
        self._models.pop(mind_id, None)
        found = active_model(conn, mind_id)
        if found is not None:
            self._models[mind_id] = found
        return found

"""HybridSearch (DESIGN §5): keyword and vector lanes, normalised RRF, relevance, explain.

One algorithm for both dialects: every piece of SQL that differs lives in the adapter; this module
embeds the query (outside any transaction: network calls never hold a database lock; an
in-process model's embedding runs on a thread beside the keyword lane instead, see
:class:`PendingQueryVector`), runs the lanes in one read transaction (or per statement, where
the database reads each statement's own snapshot anyway), fuses (:mod:`.fusion`),
ranks and explains (:mod:`.explain`). The vector lane is started before the keyword lane and
finished after it (:meth:`~waggle_store.dialects.base.SearchAdapter.start_vector_search`), so an
adapter whose lane has work off the connection (SQLite's in-memory scan) does it while the
keyword lane runs; where the reads need no common transaction (Postgres), the vector lane's
statement is sent on a connection of its own before the keyword lane runs on the first, so the
server runs both at once (:meth:`HybridSearch._read`, :mod:`waggle_store.dialects.lane_steps`).

Degradation is explicit, never silent: a lane that cannot run (no embedder, no vector backend, no
vectors for the embedder's model yet, no keyword terms) is left out of the fusion and named in
``explain["degraded"]``; a keyword index that errors falls back to an escaped LIKE scan; an
embedder that fails at query time leaves the keyword results. Nothing here turns a backend
failure into an exception for the caller except a broken database connection (a
pooled connection found lost is replaced and the search run once more first).

``lanes=`` (an addition to the API, used by benchmarks and diagnostics) restricts the search to
``{"keyword"}`` or ``{"vector"}``; the default runs both.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import ExitStack, nullcontext
from datetime import datetime
from operator import attrgetter
from typing import Any, Final, NamedTuple, overload

from sqlalchemy import Connection, bindparam, select
from sqlalchemy import exc as sa_exc

from waggle_store.context import MindContext, StoreContext
from waggle_store.dialects.base import DeferredLane, LaneHit, ModelNotActiveError, PendingLane
from waggle_store.dialects.common import beside_next_statement
from waggle_store.dialects.info import engine_info
from waggle_store.embeddings.base import embeds_beside_reads
from waggle_store.errors import DatabaseUnavailableError
from waggle_store.models import EmbeddingModelRow, MindEmbeddingModelRow
from waggle_store.records import SearchResult
from waggle_store.repositories.frames import FrameRepository
from waggle_store.repositories.mind_models import mismatch_reason
from waggle_store.repositories.vectors import ModelKey, model_key
from waggle_store.search.explain import Ranking
from waggle_store.search.fusion import LANE_CONFIDENCE, Fusion
from waggle_store.search.graph import GraphDistances
from waggle_store.search.plan import LANES, MAX_LIMIT, SearchPlan, plan_search, query_names
from waggle_store.search.query import like_patterns
from waggle_store.timeutil import utcnow
from waggle_store.workers import WorkerPool

__all__ = ["LANES", "MAX_LIMIT", "HybridSearch", "PendingQueryVector", "QueryNotEmbedded"]

log = logging.getLogger(__name__)

#: Each lane fetches this many times ``limit`` candidates for the fusion (DESIGN §5).
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
#: The weight of a search's lane order in a mind's moving average of them
#: (:meth:`HybridSearch._saw_lane_order`): the order follows a change within a few searches.
LANE_ORDER_WEIGHT: Final = 0.25

#: Recounts of searched minds' frames (the keyword lane's ``N``) whose cached count expired
#: (:class:`~waggle_store.dialects.keyword_rank.FrameCounts`), off the searches' way.
COUNT_THREAD: Final = WorkerPool("waggle-frame-counts", 1)

#: Embeds the query of a search whose embedder runs in this process
#: (:func:`~waggle_store.embeddings.base.embeds_beside_reads`) while the search reads.
QUERY_THREAD: Final = WorkerPool("waggle-query-embed", 1)

class QueryNotEmbedded(Exception):
    """The query's embedding, begun beside the search's reads, failed (the embedder's error is
    the ``__cause__``): the vector lane is off, as when a synchronous embedding fails."""


class PendingQueryVector(Sequence[float]):
    """The query's vector while :data:`QUERY_THREAD` embeds it; reading it waits for it.

    Why: with an in-process model (all-MiniLM-L6-v2: ~5 ms a query on 2 vCPUs) the embedding and
    the keyword lane's statement (~4 ms at 100k frames) each kept one core busy while the other
    idled, one after the other; embedded beside the reads they overlap (measured on SQLite: 1.6–2.3
    ms off a 13.5-ms search at 100k frames, 3.3 ms at 1M; ``benchmarks/README.md``). A remote
    provider's query is still embedded first: its network wait must not hold the read
    transaction (:func:`~waggle_store.embeddings.base.embeds_beside_reads`). The vector lane
    takes this object as its vector: where its work runs off the connection (SQLite's index
    scan, on a worker thread) it waits there; elsewhere it waits when the lane's statement binds
    it, after the keyword lane. A failed embedding raises :class:`QueryNotEmbedded` wherever the
    vector is first read.
    """

    __slots__ = ("_future", "_vector")

    def __init__(self, future: Future[list[float]]) -> None:
        self._future = future
        self._vector: list[float] | None = None

    def done(self) -> bool:
        """Whether reading the vector would not wait (embedded, or failed)."""
        return self._vector is not None or self._future.done()

    def resolve(self) -> list[float]:
        """The vector, once embedded (waits for it)."""
        vector = self._vector
        if vector is None:
            try:
                vector = self._vector = list(self._future.result())
            except Exception as exc:
                raise QueryNotEmbedded(str(exc)) from exc
        return vector

    def __len__(self) -> int:
        return len(self.resolve())

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> list[float]: ...

    def __getitem__(self, index: int | slice) -> float | list[float]:
        return self.resolve()[index]

    def __iter__(self) -> Iterator[float]:
        return iter(self.resolve())


#: A mind's active embedding model: search may only compare the query (embedded by the store's
#: embedder) with vectors of that model (:mod:`waggle_store.repositories.mind_models`).
_MODEL_SQL: Final = select(
    MindEmbeddingModelRow.model_id, EmbeddingModelRow.provider, EmbeddingModelRow.model,
    EmbeddingModelRow.dimensions,
).join(EmbeddingModelRow, EmbeddingModelRow.id == MindEmbeddingModelRow.model_id).where(
    MindEmbeddingModelRow.mind_id == bindparam("mind_id"), MindEmbeddingModelRow.status == "active")


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


def _no_lane() -> None:
    return None


class _VectorLane(NamedTuple):
    """A search's vector lane, begun (:meth:`HybridSearch._vector_lane`)."""

    #: Its hits (settled), None when the lane is off (the reason in the search's notes).
    finish: Callable[[], list[LaneHit] | None]
    #: The lane begun, to send beside the keyword lane where it was begun alone (see
    #: ``beside_next_statement``), and to give up (its ``close``) once the search is done.
    begun: PendingLane


#: No lane begun: nothing to send, await or give up.
_NOT_BEGUN: Final = DeferredLane(list)
_NO_LANE: Final = _VectorLane(_no_lane, _NOT_BEGUN)


class _Reading:
    """The searches of this process that are reading now; entering counts one more and gives
    how many others were reading.

    Why: a second connection per search pays off while cores are idle (one search at a time:
    the server runs both lanes at once); when other searches are reading, the cores are busy
    with them and the second connection (its checkout and return, the pipeline's sync) only
    costs CPU — measured on 2 vCPUs with four searching threads, a vector lane always beside
    (then on a thread of its own) cut throughput by 5–16 % (``benchmarks/README.md``). So only
    a search that reads alone sends its lane beside."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    def _after_fork_in_child(self) -> None:
        # The parent's other threads (their searches, a lock one of them held) did not come along.
        self._lock, self._count = threading.Lock(), 0

    def __enter__(self) -> int:
        with self._lock:
            others = self._count
            self._count += 1
        return others

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._count -= 1


#: See :class:`_Reading`.
READING: Final = _Reading()


def _failed(error: Exception) -> PendingLane:
    """A lane that failed to start: its ``result()`` raises ``error`` where the lane's result is
    handled (a :class:`DeferredLane`: nothing begun, sent or awaited)."""

    def run() -> list[LaneHit]:
        raise error

    return DeferredLane(run)


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
        #: Mind id -> how often, of its recent searches that sent the vector lane beside the
        #: keyword lane, the keyword lane's rows came first (a moving average, 0..1): above
        #: one half, the vector lane's statement is sent first (:meth:`_read`).
        self._vector_ends_last: dict[int, float] = {}

    # -- public -------------------------------------------------------------------------------

    def search(self, mind: MindContext, query: str, *, limit: int = 20, gop_id: str | None = None,
               profile: str = "balanced", since: datetime | str | None = None,
               until: datetime | str | None = None, context: Mapping[int, int] | None = None,
               lanes: Collection[str] | None = None,
               query_vector: Sequence[float] | None = None) -> list[SearchResult]:
        """Hybrid search of one mind; see the module docstring and DESIGN §5.

        ``query_vector``: the query's embedding by the store's embedder when the caller has it
        already (cognify's linker searches with the text it just embedded), so the query is not
        embedded — and billed — a second time.
        """
        plan = plan_search(mind.id, query, limit, gop_id, profile, since, until, context, lanes)
        degraded: list[str] = []
        qvec, key = self._embed_query(mind, query, plan, degraded, query_vector)
        k = plan.limit * OVERFETCH
        # No BEGIN/COMMIT where the database reads per statement anyway (Postgres).
        per_statement = self._store.adapter.reads_per_statement(k)
        # A search only reads, so one that lost its pooled connection (the server restarted, or
        # ended the backend, since the connection's last use) runs once more on a fresh one:
        # the pool skips its ping for a connection used moments ago (postgres_engine.py). Not in
        # a host's transaction, which the lost connection took with it.
        retry = self._store.db.owns_connections
        while True:
            lane_degraded = list(degraded)
            meta: dict[str, Any] = {"degraded": lane_degraded,
                                    "keyword_backend": self._store.adapter.dialect}
            ranking = Ranking(profile=plan.profile, now=utcnow(), query=query,
                              keyword="keyword" in plan.lanes, terms=plan.terms,
                              periods=plan.periods)
            try:
                found = self._read(mind, plan, k, qvec, key, meta, query, per_statement, ranking)
                break
            except DatabaseUnavailableError as exc:
                if not (retry and lost_connection(exc)):
                    raise
                log.warning("search lost its database connection, running it again: %s", exc)
                retry = False
        if self._store.db.owns_connections and "keyword" in plan.lanes and plan.terms:
            self._recount_if_due(plan.where.mind_ids)
        if found is None:
            return []
        ran, fusion, distances = found
        return ranking.results(ran=ran, fusion=fusion, distances=distances, limit=plan.limit,
                               keyword_backend=meta["keyword_backend"], degraded=lane_degraded)

    def _read(self, mind: MindContext, plan: SearchPlan, k: int, qvec: Sequence[float] | None,
              key: ModelKey | None, meta: dict[str, Any], query: str, per_statement: bool,
              ranking: Ranking
              ) -> tuple[dict[str, list[LaneHit]], Fusion, Mapping[int, int]] | None:
        """The lanes, their fusion and the graph distances, on one read connection; None when
        no lane found anything. Each lane's hits are taken by ``ranking`` as they come."""
        degraded: list[str] = meta["degraded"]
        with ExitStack() as held:
            # The keyword lane's connection, given back as soon as that lane is done where the
            # vector lane has a connection of its own (below).
            first = held.enter_context(ExitStack())
            conn = first.enter_context(self._store.read_connection(per_statement=per_statement))
            others = held.enter_context(READING)
            ran: dict[str, list[LaneHit]] = {}
            # The vector lane begins first: what it does off the connection (SQLite: the
            # in-process scan, on a worker thread) runs while the keyword lane uses the
            # connection. Its notes join ``degraded`` after the keyword lane's.
            vector_notes: list[str] = []
            lane_conn = conn
            if (per_statement and not others and qvec is not None and plan.terms
                    and "keyword" in plan.lanes and self._store.db.owns_connections
                    and (not isinstance(qvec, PendingQueryVector) or qvec.done())
                    and self._store.db.spare_connection()):
                # Statements that need no common transaction need no common connection: the
                # vector lane's statement is sent on a second connection, and the server runs it
                # while this thread runs the keyword lane on the first (the adapter's ``alone``,
                # sent below). Only a search reading alone (_Reading); only with a query vector
                # in hand (a local model still embedding it would make this thread wait before
                # the keyword lane: its lane runs after the keyword lane instead, as below); and
                # only when the pool has a connection to spare within its size, so the checkout
                # neither opens a connection for one search nor waits for one (unless another
                # thread takes the spare one in between: then an overflow connection, or a wait
                # for any connection to come back, which no search holding one waits on).
                lane_conn = held.enter_context(self._store.read_connection(per_statement=True))
            alone = lane_conn is not conn
            vector = self._vector_lane(lane_conn, mind, plan, k, qvec, key, vector_notes,
                                       alone=alone)
            vector_first = alone and self._vector_ends_last.get(mind.id, 0.0) > 0.5
            try:
                # A lane begun alone sends its statement beside the keyword lane's first
                # (beside_next_statement): just after it, or first where the vector lane's rows
                # have lately come last; a lane run on ``conn`` sends nothing ahead.
                if vector_first:
                    vector.begun.send()
                with beside_next_statement(vector.begun) if alone else nullcontext():
                    if "keyword" in plan.lanes:
                        if plan.terms:
                            hits = self._keyword_lane(conn, plan, k, meta, query)
                            if hits is not None:
                                ran["keyword"] = hits
                                ranking.take(hits)  # while the vector lane may still run
                        else:
                            degraded.append("keyword lane off: no search terms in the query")
                if alone:
                    if engine_info(lane_conn.engine).first_rows:  # (else never read first)
                        self._saw_lane_order(mind.id, vector.begun)
                    # The lane's rows may still be awaited: the pool takes the keyword lane's
                    # connection back meanwhile, and the graph query below runs on the lane's.
                    first.close()
                    conn = lane_conn
                hits = vector.finish()
            finally:
                vector.begun.close()
            degraded.extend(vector_notes)
            if hits is not None:
                ran["vector"] = hits
                ranking.take(hits)
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
            distances = plan.context
            if distances is None:
                # Only frames that mention an entity can be near one; none, and no query runs.
                mentioning = sorted({h.frame_id for lane_hits in ran.values()
                                     for h in lane_hits if h.mentions})
                # The query's entity names are looked for only then (after the lanes: not in
                # the way of their statements).
                distances = (self._graph(conn, mind.id, query_names(query), mentioning)
                             if mentioning else {})
        return ran, fusion, distances

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
        """The query vector (a :class:`PendingQueryVector` for an in-process model) and the
        embedder's model key, or (None, None) with the reason.

        A mind known (cached) to use another model is not embedded for: the vector could not be
        compared, and a provider call would be billed for nothing."""
        if "vector" not in plan.lanes:
            return None, None
        embedder = self._store.embedder
        if embedder is None:
            degraded.append("vector lane off: no embedder configured")
            return None, None
        if not query.strip():
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
            if embeds_beside_reads(embedder):
                try:
                    return PendingQueryVector(QUERY_THREAD.submit(embedder.embed_query, query)), key
                except RuntimeError:  # the interpreter is shutting down: no new threads
                    pass
            return list(embedder.embed_query(query)), key
        except Exception as exc:  # noqa: BLE001 - an outage must not take keyword search down
            _embedding_failed(degraded, exc)
            return None, None

    def _keyword_lane(self, conn: Connection, plan: SearchPlan, k: int, explain: dict[str, Any],
                      query: str) -> list[LaneHit] | None:
        adapter = self._store.adapter
        try:
            # A store with connections of its own recounts an expired N on COUNT_THREAD
            # (_recount_if_due); one inside a host's transaction counts in the statement.
            return adapter.keyword_search(conn, terms=plan.terms, where=plan.where, limit=k,
                                          expired_count=self._store.db.owns_connections)
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
                     degraded: list[str], *, alone: bool = False) -> _VectorLane:
        """The vector lane begun on ``conn`` (``alone``: a connection of its own, see
        :meth:`~waggle_store.dialects.base.SearchAdapter.start_vector_search`)."""
        if qvec is None or key is None:
            return _NO_LANE
        if not self._store.adapter.vector_backend_available(conn):
            degraded.append("vector lane off: no vector backend (see store.health())")
            return _NO_LANE
        # The cached model first; if the lane finds it replaced (a switch flipped the mind),
        # look the mind's active model up again.
        first = self._begin_vector(conn, mind, plan, k, qvec, key, degraded, cached=True,
                                   alone=alone)

        def finish() -> list[LaneHit] | None:
            started = first
            for cached in (True, False):
                if started is None:
                    return None
                found, pending = started
                try:
                    hits: list[LaneHit] | None = pending.result()
                except ModelNotActiveError:
                    hits = None
                except QueryNotEmbedded as exc:
                    _embedding_failed(degraded, exc.__cause__ or exc)
                    return None
                except sa_exc.DBAPIError as exc:
                    _recover(conn, exc)
                    log.warning("vector lane failed, searching keywords only: %s", exc.orig)
                    degraded.append(f"vector lane off: the vector index failed ({exc.orig})")
                    return None
                # No hits and the cache's model: no row carried the model check, so the mind
                # may have been switched since it was cached.
                if hits is not None and (hits or not cached or
                                         self._mind_model(conn, mind.id, cached=False) == found):
                    return settled(hits)
                if cached:
                    started = self._begin_vector(conn, mind, plan, k, qvec, key, degraded,
                                                 cached=False)
            degraded.append("vector lane off: the mind's embedding model changed during the "
                            "search")
            return None

        if first is None:
            return _VectorLane(finish, _NOT_BEGUN)
        # A second start, if any, is finished within finish(): only the first can be open.
        return _VectorLane(finish, first[1])

    def _begin_vector(self, conn: Connection, mind: MindContext, plan: SearchPlan, k: int,
                      qvec: Sequence[float], key: ModelKey, degraded: list[str], *, cached: bool,
                      alone: bool = False) -> tuple[tuple[int, ModelKey], PendingLane] | None:
        """The mind's model (None when it has no vectors or another model than the query's)
        and its lane started; an error starting it is raised by ``result()``."""
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
            return found, self._store.adapter.start_vector_search(
                conn, model_id=model_id, vector=qvec, where=plan.where, limit=k, alone=alone)
        except (ModelNotActiveError, sa_exc.DBAPIError, QueryNotEmbedded) as exc:
            return found, _failed(exc)

    def _saw_lane_order(self, mind_id: int, lane: PendingLane) -> None:
        """Count, once the keyword lane is done, whether the vector lane sent beside it is still
        awaited (its rows come last) or was read while the keyword lane ran (they came first).

        Why the order follows it: the lane whose statement takes longer should reach the server
        first, and which one that is depends on the mind (measured on 2 vCPUs: at 10k frames the
        vector statement takes ~1.7x the keyword one, and sending it first cut a search's p50
        by ~0.75 ms; at 100k the keyword statement takes ~2x the vector one, and sending the
        vector one first added ~1.2 ms: the server process it wakes takes the client's core
        before the keyword statement is out; ``benchmarks/README.md``)."""
        last = 1.0 if lane.awaited_socket() is not None else 0.0
        known = self._vector_ends_last.get(mind_id)
        self._vector_ends_last[mind_id] = (
            last if known is None else known + LANE_ORDER_WEIGHT * (last - known))

    def _recount_if_due(self, mind_ids: Sequence[int]) -> None:
        """Have the minds' frames counted on :data:`COUNT_THREAD` if the keyword lane used an
        expired count of them, and the frames holding each common term it used an expired
        count of (``term_counts``): the next searches use the new counts."""
        counts = self._store.adapter.frame_counts
        if counts.due(mind_ids):
            self._count_off_search(
                lambda conn: counts.recount(conn, mind_ids), lambda: counts.forget(mind_ids),
                f"recounting the frames of minds {list(mind_ids)}")
        terms = self._store.adapter.term_counts.due()
        if terms:
            self._count_off_search(*self._term_recount(terms))

    def _term_recount(self, terms: list[tuple[tuple[int, ...], str]]
                      ) -> tuple[Callable[[Connection], None], Callable[[], None], str]:
        """:meth:`_count_off_search`'s parts for the claimed (minds, term) counts: each term's
        frames counted in turn; a failure drops the counts not yet made."""
        counts, left = self._store.adapter.term_counts, list(terms)

        def count(conn: Connection) -> None:
            while left:
                minds, term = left[0]
                counts.recounted(minds, term,
                                 self._store.adapter.count_term_frames(conn, minds, term))
                left.pop(0)

        def forget() -> None:
            for minds, term in left:
                counts.forget(minds, term)

        return count, forget, f"counting the frames holding {[term for _, term in terms]!r}"

    def _count_off_search(self, count: Callable[[Connection], None], forget: Callable[[], None],
                          what: str) -> None:
        """``count`` on :data:`COUNT_THREAD`, on a connection of the store's own. A failure
        (the store closed meanwhile, the database gone), or no thread to run it on (the
        interpreter shutting down), calls ``forget``: the next search counts in its statement
        again, as without this thread."""

        def run() -> None:
            try:
                with self._store.read_connection() as conn:
                    count(conn)
            except Exception as exc:  # noqa: BLE001 - a worker thread: no caller to raise to
                forget()
                log.log(logging.DEBUG if self._store.db.closed else logging.WARNING,
                        "%s failed (the next search counts them): %s", what, exc)

        try:
            COUNT_THREAD.submit(run)
        except RuntimeError:  # the interpreter is shutting down: no new threads
            forget()

    def forget(self, mind_id: int) -> None:
        """Drop the cached model of a mind (after this process switched it), and its lane order
        (the new model's vector lane is timed anew)."""
        self._models.pop(mind_id, None)
        self._vector_ends_last.pop(mind_id, None)

    def _mind_model(self, conn: Connection, mind_id: int, *,
                    cached: bool = True) -> tuple[int, ModelKey] | None:
        if cached and mind_id in self._models:
            return self._models[mind_id]
        self._models.pop(mind_id, None)
        row = conn.execute(_MODEL_SQL, {"mind_id": mind_id}).first()
        if row is None:
            return None
        found = (int(row[0]), ModelKey(str(row[1]), str(row[2]), int(row[3])))
        self._models[mind_id] = found
        return found

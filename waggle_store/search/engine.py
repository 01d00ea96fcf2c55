"""HybridSearch (DESIGN §5): keyword and vector lanes, normalised RRF, relevance, explain.

One algorithm for both dialects: every piece of SQL that differs lives in the adapter; this module
validates input, embeds the query (outside any transaction: network calls never hold a database
lock), runs the lanes in one read transaction, fuses, scores and explains.

Degradation is explicit, never silent: a lane that cannot run (no embedder, no vector backend, no
vectors for the embedder's model yet, no keyword terms) is left out of the fusion and named in
``explain["degraded"]``; a keyword index that errors falls back to an escaped LIKE scan; an
embedder that fails at query time leaves the keyword results. Nothing here turns a backend
failure into an exception for the caller except a broken database connection.

``lanes=`` (an addition to the API, used by benchmarks and diagnostics) restricts the search to
``{"keyword"}`` or ``{"vector"}``; the default runs both.
"""

from __future__ import annotations

import dataclasses
import logging
import unicodedata
import weakref
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import (
    BigInteger,
    Connection,
    Integer,
    Select,
    String,
    bindparam,
    func,
    literal_column,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy import exc as sa_exc

from waggle_store.dialects.base import LaneFilter, LaneHit, ModelNotActiveError, SearchAdapter
from waggle_store.errors import InvalidInputError
from waggle_store.models import EntityMentionRow, EntityRow, FrameRow, RelationRow
from waggle_store.records import Frame, SearchResult
from waggle_store.search.fusion import LANE_CONFIDENCE, Fusion
from waggle_store.search.query import keyword_terms, like_patterns
from waggle_store.search.scoring import compute_relevance, get_profile, relevance_scorer
from waggle_store.search.vectors import model_key
from waggle_store.timeutil import optional_utc, utcnow

if TYPE_CHECKING:
    from waggle_store.store import Mind

__all__ = ["LANES", "MAX_LIMIT", "recall", "search"]

log = logging.getLogger(__name__)

LANES: Final = ("keyword", "vector")
MAX_LIMIT: Final = 1000
#: Each lane fetches this many times ``limit`` candidates for the fusion (DESIGN §5).
OVERFETCH: Final = 2
#: Graph hops counted by the contextual score (scoring gives 0 beyond 3).
MAX_GRAPH_DEPTH: Final = 3
#: Cosine distance at or above which a "nearest" vector shares nothing with the query
#: (similarity <= 0): such hits are noise, and would only push real matches down.
MAX_VECTOR_DISTANCE: Final = 1.0 - 1e-6
#: Longest entity name, in words, looked for in the query; and a bound on the query words used.
_MAX_NAME_WORDS: Final = 5
_MAX_QUERY_WORDS: Final = 200


@dataclasses.dataclass
class _Plan:
    terms: list[str]
    where: LaneFilter
    limit: int
    profile: str
    context: dict[int, int] | None
    lanes: frozenset[str]


def _validate(mind: Mind, query: Any, limit: Any, gop_id: Any, profile: Any, since: Any,
              until: Any, context: Any, lanes: Any) -> _Plan:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    if gop_id is not None and not isinstance(gop_id, str):
        raise InvalidInputError(f"gop_id must be a string or None, got {type(gop_id).__name__}")
    chosen = get_profile(profile).name
    since_utc = optional_utc(since, name="since")
    until_utc = optional_utc(until, name="until")
    if since_utc is not None and until_utc is not None and since_utc > until_utc:
        raise InvalidInputError(f"since ({since_utc.isoformat()}) is after until ({until_utc.isoformat()})")
    distances: dict[int, int] | None = None
    if context is not None:
        if not isinstance(context, Mapping):
            raise InvalidInputError("context must be a mapping {frame_id: graph distance} or None")
        distances = {}
        for key, value in context.items():
            if isinstance(key, bool) or isinstance(value, bool) or not isinstance(key, int) \
                    or not isinstance(value, int):
                raise InvalidInputError("context must map integer frame ids to integer distances")
            distances[key] = value
    if lanes is None:
        chosen_lanes = frozenset(LANES)
    else:
        if isinstance(lanes, str) or not isinstance(lanes, Collection):
            raise InvalidInputError(f"lanes must be a collection of {LANES}, got {lanes!r}")
        chosen_lanes = frozenset(lanes)
        if not chosen_lanes or not chosen_lanes <= set(LANES):
            raise InvalidInputError(f"lanes must be a non-empty subset of {LANES}, got {lanes!r}")
    return _Plan(
        terms=keyword_terms(query),
        where=LaneFilter((mind.id,), gop_id, since_utc, until_utc),
        limit=limit,
        profile=chosen,
        context=distances,
        lanes=chosen_lanes,
    )


def _embed_query(mind: Mind, query: str, plan: _Plan, degraded: list[str]) -> tuple[list[float] | None, Any]:
    """The query vector and the embedder's model key, or (None, None) with the reason recorded."""
    if "vector" not in plan.lanes:
        return None, None
    embedder = mind.store.embedder
    if embedder is None:
        degraded.append("vector lane off: no embedder configured")
        return None, None
    if not query.strip():
        degraded.append("vector lane off: empty query")
        return None, None
    try:
        vector = list(embedder.embed_query(query))
        return vector, model_key(embedder)
    except Exception as exc:  # a provider outage must not take keyword search down with it
        log.warning("query embedding failed, searching keywords only: %s", exc)
        degraded.append(f"vector lane off: the embedder failed: {type(exc).__name__}: {exc}")
        return None, None


def _keyword_lane(mind: Mind, session: Connection, plan: _Plan, k: int, explain: dict[str, Any],
                  query: str) -> list[LaneHit] | None:
    adapter = mind.store.adapter
    try:
        return adapter.keyword_search(session, terms=plan.terms, where=plan.where, limit=k)
    except sa_exc.DBAPIError as exc:
        session.rollback()  # Postgres aborts the transaction on error; start a fresh one
        log.warning("keyword index failed, using the LIKE fallback: %s", exc.orig)
        explain["degraded"].append(f"keyword index failed ({exc.orig}); LIKE fallback used")
        explain["keyword_backend"] = "like"
    try:
        return adapter.like_search(session, patterns=like_patterns(query), where=plan.where, limit=k)
    except sa_exc.DBAPIError as exc:
        session.rollback()
        explain["degraded"].append(f"keyword lane off: LIKE fallback failed ({exc.orig})")
        return None


def _vector_lane(mind: Mind, session: Connection, plan: _Plan, k: int, qvec: list[float] | None,
                 key: Any, degraded: list[str]) -> list[LaneHit] | None:
    if qvec is None:
        return None
    store = mind.store
    if not store.adapter.vector_backend_available(session):
        degraded.append("vector lane off: no vector backend (see store.health())")
        return None
    # The cached model id first; if the lane finds that model retired (another process
    # registered another), look the active one up again.
    for cached in (True, False):
        model_id = _model_id(session, store, key, cached=cached)
        if model_id is None:
            degraded.append(
                f"vector lane off: no active vectors for {key.provider}/{key.model}/{key.dimensions} "
                "(run store.reconcile())"
            )
            return None
        try:
            hits = store.adapter.vector_search(
                session, model_id=model_id, vector=qvec, where=plan.where, limit=k
            )
        except ModelNotActiveError:
            continue
        except sa_exc.DBAPIError as exc:
            session.rollback()
            log.warning("vector lane failed, searching keywords only: %s", exc.orig)
            degraded.append(f"vector lane off: the vector index failed ({exc.orig})")
            return None
        return [h for h in hits if h.score < MAX_VECTOR_DISTANCE]
    degraded.append("vector lane off: the embedding model was retired during the search")
    return None


def _query_names(query: str) -> list[str]:
    """Case-folded word n-grams of the query: the entity names it could be naming."""
    words: list[str] = []
    # Control/format characters (NUL above all, which Postgres refuses) never name an entity.
    clean = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in query[:20_000])
    for raw in clean.casefold().split()[:_MAX_QUERY_WORDS]:
        word = raw.strip(".,;:!?\"'()[]{}<>")
        if word.endswith("'s") or word.endswith("’s"):
            word = word[:-2]
        if word:
            words.append(word)
    names: dict[str, None] = {}
    for n in range(1, _MAX_NAME_WORDS + 1):
        for i in range(len(words) - n + 1):
            names[" ".join(words[i : i + n])] = None
    return list(names)


#: The id of an embedder's model if it is registered *and* active: search may only compare the
#: query with that model's vectors (see :func:`waggle_store.search.vectors.find_active_model`).
_MODEL_SQL: Final = text(
    "SELECT id FROM embedding_models WHERE provider = :provider AND model = :model"
    " AND dimensions = :dimensions AND status = 'active'"
)
#: Per store: model key -> id. A model's id never changes once registered, so the cache only
#: saves the lookup; whether the model is still *active* (another process may have registered
#: another one) is checked by the vector lane's own statement, at no extra round trip, and a
#: lane that finds it retired looks again (:func:`_vector_lane`).
_MODEL_IDS: Final[weakref.WeakKeyDictionary[Any, dict[Any, int]]] = weakref.WeakKeyDictionary()


def _model_id(session: Connection, store: Any, key: Any, *, cached: bool = True) -> int | None:
    known = _MODEL_IDS.setdefault(store, {})
    if cached and key in known:
        return known[key]
    known.pop(key, None)
    found = session.execute(
        _MODEL_SQL, {"provider": key.provider, "model": key.model, "dimensions": key.dimensions}
    ).scalar()
    if found is None:
        return None
    known[key] = int(found)
    return int(found)


#: Per dialect: the graph-distance statement (:func:`_graph_distances`), built once. The name and
#: frame lists are bound the way the adapter finds cheapest (Postgres: one array each, so the
#: statement text is fixed and psycopg prepares it; an expanded IN was re-rendered, re-parsed and
#: re-planned on every search).
_DISTANCES: dict[str, Select[Any]] = {}


def _distances_statement(adapter: SearchAdapter) -> Select[Any]:
    cached = _DISTANCES.get(adapter.dialect)
    if cached is not None:
        return cached
    relations, entities, mentions = RelationRow.__table__, EntityRow.__table__, EntityMentionRow.__table__
    mind = bindparam("mind_id", type_=BigInteger())
    active = (relations.c.mind_id == mind, relations.c.valid_to.is_(None))
    edges = union_all(
        select(relations.c.source_id.label("a"), relations.c.target_id.label("b")).where(*active),
        select(relations.c.target_id, relations.c.source_id).where(*active),
    ).cte("edges")
    walk = select(entities.c.id.label("entity_id"), literal_column("0").label("depth")).where(
        entities.c.mind_id == mind, entities.c.valid_to.is_(None),
        adapter.in_values(entities.c.name_key, "names", String()),
    ).cte("walk", recursive=True)
    walk = walk.union(
        select(edges.c.b, walk.c.depth + 1)
        .join_from(walk, edges, edges.c.a == walk.c.entity_id)
        .where(walk.c.depth < bindparam("max_depth", type_=Integer()))
    )
    statement: Select[Any] = (
        select(mentions.c.frame_id, func.min(walk.c.depth))
        .join_from(walk, mentions, mentions.c.entity_id == walk.c.entity_id)
        .where(adapter.in_values(mentions.c.frame_id, "frames", BigInteger()))
        .group_by(mentions.c.frame_id)
    )
    _DISTANCES[adapter.dialect] = statement
    return statement


def _graph_distances(session: Connection, adapter: SearchAdapter, mind_id: int, names: Sequence[str],
                     frame_ids: Sequence[int]) -> dict[int, int]:
    """Hops from any entity named in the query (``names``: :func:`_query_names`) to the nearest
    entity each frame mentions.

    Relations are walked in both directions (proximity is symmetric for ranking) and only while
    active (``valid_to IS NULL``), up to :data:`MAX_GRAPH_DEPTH`, in one recursive query.
    """
    if not names or not frame_ids:
        return {}
    rows = session.execute(
        _distances_statement(adapter),
        {"mind_id": mind_id, "names": list(names), "frames": list(frame_ids), "max_depth": MAX_GRAPH_DEPTH},
    ).all()
    return {int(r[0]): int(r[1]) for r in rows}


#: Positions in ``LaneHit.frame`` (the order of :class:`Frame`) that the relevance score reads.
_FIELDS: Final = [field.name for field in dataclasses.fields(Frame)]
_IMPORTANCE, _ACCESS_COUNT, _LAST_ACCESSED = (
    _FIELDS.index("importance"), _FIELDS.index("access_count"), _FIELDS.index("last_accessed")
)


def search(
    mind: Mind,
    query: str,
    *,
    limit: int = 20,
    gop_id: str | None = None,
    profile: str = "balanced",
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    context: Mapping[int, int] | None = None,
    lanes: Collection[str] | None = None,
) -> list[SearchResult]:
    """Hybrid search of one mind; see the module docstring and DESIGN §5."""
    plan = _validate(mind, query, limit, gop_id, profile, since, until, context, lanes)
    degraded: list[str] = []
    qvec, key = _embed_query(mind, query, plan, degraded)
    k = plan.limit * OVERFETCH
    meta: dict[str, Any] = {"degraded": degraded, "keyword_backend": mind.store.adapter.dialect}
    # Entity names are only looked up when the contextual score needs them.
    names = _query_names(query) if plan.context is None else []
    store = mind.store
    with store.read_connection() as session:
        ran: dict[str, list[LaneHit]] = {}
        if "keyword" in plan.lanes:
            if plan.terms:
                hits = _keyword_lane(mind, session, plan, k, meta, query)
                if hits is not None:
                    ran["keyword"] = hits
            else:
                degraded.append("keyword lane off: no search terms in the query")
        hits = _vector_lane(mind, session, plan, k, qvec, key, degraded)
        if hits is not None:
            ran["vector"] = hits
        # Every lane read its hits' frames (LaneHit.frame): no second statement fetches them.
        frames = {h.frame_id: h.frame for lane_hits in ran.values() for h in lane_hits}
        mentioning = {h.frame_id for lane_hits in ran.values() for h in lane_hits if h.mentions}
        # Confidence-weighted RRF (search/fusion.py): each lane's hits are weighted by that
        # lane's own raw scores (bm25 / idf sum relative to its best hit; cosine similarity
        # standing out from the lane's median), so a lane's clear best match is not outranked by
        # frames that merely appear in both lanes.
        fusion = Fusion(
            {lane: [h.frame_id for h in lane_hits] for lane, lane_hits in ran.items()},
            weights={
                lane: LANE_CONFIDENCE[lane]([h.score for h in lane_hits])
                for lane, lane_hits in ran.items()
            },
        )
        fused = fusion.scores
        if not fused:
            return []
        distances = plan.context
        if distances is None:
            # Only frames that mention an entity can be near one; none, and the query is skipped.
            distances = _graph_distances(session, store.adapter, mind.id, names, sorted(mentioning))
    now = utcnow()
    relevance_of = relevance_scorer(plan.profile, now)
    scored: list[tuple[float, int, float]] = []
    for frame_id, fused_score in fused.items():
        frame = frames[frame_id]
        relevance = relevance_of(frame[_LAST_ACCESSED], frame[_ACCESS_COUNT], frame[_IMPORTANCE],
                                 distances.get(frame_id))
        scored.append((fused_score * relevance, frame_id, relevance))
    # Stable sort: equal scores keep fusion order (keyword hits first), the seed's tie order.
    scored.sort(key=lambda item: item[0], reverse=True)
    raw_scores: dict[str, dict[int, float]] = {}
    for lane, lane_hits in ran.items():
        for h in lane_hits:  # the first (best-ranked) hit of a frame, as the fusion counts it
            raw_scores.setdefault(lane, {}).setdefault(h.frame_id, h.score)
    results: list[SearchResult] = []
    for final, frame_id, relevance in scored[: plan.limit]:
        detail = fusion.detail(frame_id)
        frame = frames[frame_id]
        distance = distances.get(frame_id)
        _, parts = compute_relevance(
            last_accessed=frame[_LAST_ACCESSED], access_count=frame[_ACCESS_COUNT],
            importance=frame[_IMPORTANCE], graph_distance=distance, profile=plan.profile, now=now,
        )
        explain = {
            "lanes": {
                lane: {
                    "rank": rank,
                    "score": raw_scores[lane][frame_id],
                    "weight": detail.weights[lane],
                    "contribution": detail.contributions[lane],
                }
                for lane, rank in detail.ranks.items()
            },
            "lanes_run": list(ran),
            "keyword_backend": meta["keyword_backend"] if "keyword" in ran else None,
            "rrf": detail.score,
            "rrf_raw": detail.raw,
            "relevance": relevance,
            "final": final,
            "profile": plan.profile,
            "graph_distance": distance,
            "subscores": parts,
            "degraded": list(degraded),
        }
        results.append(SearchResult(Frame(*frame), detail.score, relevance, final, explain))
    return results


def recall(mind: Mind, query: str, **options: Any) -> list[SearchResult]:
    """:func:`search`, then touch every returned frame in one UPDATE (access count, last access)."""
    results = search(mind, query, **options)
    if not results:
        return results
    now = utcnow()
    ids = [r.frame.id for r in results]
    with mind.store.write() as session:
        session.execute(
            update(FrameRow)
            .where(FrameRow.id.in_(ids), FrameRow.mind_id == mind.id)
            .values(access_count=FrameRow.access_count + 1, last_accessed=now)
            .execution_options(synchronize_session=False)
        )
    return [
        dataclasses.replace(
            r, frame=dataclasses.replace(r.frame, access_count=r.frame.access_count + 1, last_accessed=now)
        )
        for r in results
    ]

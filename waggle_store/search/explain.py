"""Ranking the fused candidates and explaining each result.

Relevance is computed for every candidate through the cheap :func:`relevance_scorer`; the full
breakdown (its sub-scores, the fusion's per-lane ranks, weights and contributions) only for the
page that is returned, so ``explain`` costs nothing for candidates the caller never sees.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any, Final

from waggle_store.dialects.base import LaneHit
from waggle_store.records import Frame, SearchResult, from_values
from waggle_store.search.expand import Expansion
from waggle_store.search.fusion import Fusion
from waggle_store.search.match import match_score, match_terms
from waggle_store.search.periods import Period, calendar_periods
from waggle_store.search.scoring import relevance_scorer

__all__ = ["Ranking", "rank_results"]

#: Positions in ``LaneHit.frame`` (the order of :class:`Frame`) that the relevance score reads.
_FIELDS: Final = [field.name for field in dataclasses.fields(Frame)]
_IMPORTANCE, _ACCESS_COUNT, _LAST_ACCESSED = (
    _FIELDS.index("importance"), _FIELDS.index("access_count"), _FIELDS.index("last_accessed")
)
_CONTENT: Final = _FIELDS.index("content")
_CREATED_AT: Final = _FIELDS.index("created_at")
#: The final score of a ``(final, frame_id, relevance)`` candidate, its sort key.
_FINAL: Final = itemgetter(0)


def rank_results(*, ran: Mapping[str, Sequence[LaneHit]], fusion: Fusion,
                 distances: Mapping[int, int], profile: str, limit: int, now: datetime,
                 keyword_backend: str | None, degraded: Sequence[str], query: str = "",
                 keyword: bool = False, terms: Sequence[str] | None = None,
                 periods: Sequence[Period] = ()) -> list[SearchResult]:
    """``final = rrf × relevance``, best first, the top ``limit`` with their explain and match
    score (``query``'s terms count when ``keyword``: the keyword lane was asked for; ``terms``:
    its keyword terms when the caller has them, see :func:`~.match.match_terms`). ``fusion``
    weighs each lane by :data:`~.fusion.LANE_CONFIDENCE`, as the search does: a frame's weight
    in the vector lane is its vector confidence, which the match score reads.

    ``periods``: the dates the query names (:func:`~.periods.named_periods`). A frame *of* one
    of them — created within it, or whose own words name a calendar date within it (a span it
    names, as "June 2023", must lie wholly within; not its "yesterday": see
    :func:`~.periods.calendar_periods`) — and found with some evidence (``final > 0``) ranks
    before every frame that is not; each group keeps the order above. The query said when: a
    frame of that day that matches some of its words is likelier the one asked for than a better
    match of another day, which neither lane can tell (a frame's words do not carry its date).
    Its own words count too, as a date in a question may be the date of what a frame tells
    ("What is planned for March 3?" asks for the frame written in February that says "the review
    is on March 3"). Nothing is dropped: frames of other days follow.
    """
    ranking = Ranking(profile=profile, now=now, query=query, keyword=keyword, terms=terms,
                      periods=periods)
    for lane_hits in ran.values():
        ranking.take(lane_hits)
    return ranking.results(ran=ran, fusion=fusion, distances=distances, limit=limit,
                           keyword_backend=keyword_backend, degraded=degraded)


class Ranking:
    """:func:`rank_results` in steps: :meth:`take` each lane's hits (each frame's relevance
    without a graph distance is computed then), then :meth:`results`. The same results as
    :func:`rank_results`, which is these steps in a row."""

    __slots__ = ("_folded", "_frames", "_periods", "_profile", "_relevance", "_relevance_of")

    def __init__(self, *, profile: str, now: datetime, query: str = "", keyword: bool = False,
                 terms: Sequence[str] | None = None, periods: Sequence[Period] = ()) -> None:
        self._profile = profile
        self._relevance_of = relevance_scorer(profile, now)
        self._folded = match_terms(query, keyword=keyword, terms=terms)
        self._periods = periods
        #: Each frame's row (the last lane's, as rank_results reads them) and its relevance with
        #: no graph distance.
        self._frames: dict[int, Sequence[Any]] = {}
        self._relevance: dict[int, float] = {}

    def take(self, hits: Sequence[LaneHit]) -> None:
        """One lane's hits: their frames, each one's relevance with no graph distance (again
        for a frame another lane returned as another row)."""
        frames, relevance, relevance_of = self._frames, self._relevance, self._relevance_of
        for hit in hits:
            frame = hit.frame
            known = frames.get(hit.frame_id)
            frames[hit.frame_id] = frame
            if known is None or known != frame:
                relevance[hit.frame_id] = relevance_of(
                    frame[_LAST_ACCESSED], frame[_ACCESS_COUNT], frame[_IMPORTANCE], None)

    def results(self, *, ran: Mapping[str, Sequence[LaneHit]], fusion: Fusion,
                distances: Mapping[int, int], limit: int, keyword_backend: str | None,
                degraded: Sequence[str], expansion: Expansion | None = None
                ) -> list[SearchResult]:
        """The page (see :func:`rank_results`): every lane of ``ran`` taken (and the hits of
        ``expansion``, :mod:`.expand`, which explains what it did to each result)."""
        frames, relevance_of, periods = self._frames, self._relevance_of, self._periods
        without_distance = self._relevance
        scored: list[tuple[float, int, float]] = []
        for frame_id, fused_score in fusion.scores.items():
            distance = distances.get(frame_id)
            if distance is None:
                relevance = without_distance[frame_id]
            else:
                frame = frames[frame_id]
                relevance = relevance_of(frame[_LAST_ACCESSED], frame[_ACCESS_COUNT],
                                         frame[_IMPORTANCE], distance)
            scored.append((fused_score * relevance, frame_id, relevance))
        # Stable sort: equal scores keep fusion order (keyword hits first), Waggle's tie order.
        scored.sort(key=_FINAL, reverse=True)
        within: set[int] = set()
        if periods:
            within = {frame_id for final, frame_id, _ in scored
                      if final > 0.0 and _of_periods(frames[frame_id], periods)}
            scored.sort(key=lambda item: item[1] in within, reverse=True)  # stable: order kept
        named = [period.text for period in periods]
        results: list[SearchResult] = []
        for final, frame_id, relevance in scored[:limit]:
            rrf_raw, lanes = fusion.lanes(frame_id)
            frame = frames[frame_id]
            # The frame's vector confidence is its weight in the fusion's vector lane, computed
            # there from the same hits (:func:`~.match.match_scores` computes it from the hits).
            vector = lanes.get("vector")
            match = match_score(self._folded, frame[_CONTENT],
                                vector[1] if vector is not None else 0.0)
            distance = distances.get(frame_id)
            parts = relevance_of.parts(frame[_LAST_ACCESSED], frame[_ACCESS_COUNT],
                                       frame[_IMPORTANCE], distance)
            rrf = fusion.scores[frame_id]
            explain: dict[str, Any] = {
                "lanes": {
                    # A lane's raw score of the frame: its hit at the rank the fusion counts
                    # (its first, best-ranked one).
                    lane: {"rank": rank, "score": ran[lane][rank].score, "weight": weight,
                           "contribution": contribution}
                    for lane, (rank, weight, contribution) in lanes.items()
                },
                "lanes_run": list(ran),
                "keyword_backend": keyword_backend if "keyword" in ran else None,
                "rrf": rrf,
                "rrf_raw": rrf_raw,
                "relevance": relevance,
                "final": final,
                "match": match,
                "profile": self._profile,
                "graph_distance": distance,
                # The dates the query names, and whether the frame is of one of them.
                "periods": list(named),
                "in_period": frame_id in within,
                "subscores": parts,
                "degraded": list(degraded),
                "expansion": None if expansion is None else expansion.explain(frame_id),
            }
            results.append(from_values(SearchResult, (from_values(Frame, frame), rrf, relevance,
                                                      final, explain, match)))
        return results


def _of_periods(frame: Sequence[Any], periods: Sequence[Period]) -> bool:
    """Whether the frame was created within one of ``periods`` or its words name a date within
    one (see :func:`rank_results`)."""
    created: datetime = frame[_CREATED_AT]
    if any(period.holds(created) for period in periods):
        return True
    told = calendar_periods(frame[_CONTENT])
    return any(period.contains(mention) for period in periods for mention in told)

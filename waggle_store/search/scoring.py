"""Relevance of a frame independent of the query: recency, popularity, graph proximity, importance.

Constants and profile weights are those of Waggle's original engine, so a ported agent ranks the
same way. What differs on purpose:

* Time is real: :func:`temporal_score` takes timezone-aware datetimes and compares instants. The
  original parsed SQLite timestamps as *local* time, so the score depended on the server's
  timezone. A naive datetime is taken to be UTC, which is how the store writes them.
* The temporal score keys on ``last_accessed`` (not ``created_at``): a frame an agent keeps
  recalling stays "recent", which is the point of ``recall()`` touching what it returns.
* An unknown profile is an :class:`InvalidInputError` naming the valid ones; the original
  crashed on undefined weights. An unknown importance is an error too, rather than
  a NaN score that silently sorts anywhere.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Final

from waggle_store.errors import InvalidInputError

__all__ = [
    "CONTEXTUAL_BY_DISTANCE",
    "HALF_LIFE_DAYS",
    "IMPORTANCE_MULTIPLIERS",
    "PROFILES",
    "RECENCY_BOOST_DAYS",
    "ScoringProfile",
    "compute_relevance",
    "contextual_score",
    "get_profile",
    "importance_score",
    "popularity_score",
    "temporal_score",
]

#: Anything accessed within this many days is fully recent (score 1.0).
RECENCY_BOOST_DAYS: Final = 7
#: After the boost window the score halves every this many days, counted from day 0 (as in Waggle).
HALF_LIFE_DAYS: Final = 30
_SECONDS_PER_DAY: Final = 86_400.0

#: Graph distance (hops between a query entity and an entity the frame mentions) → sub-score.
CONTEXTUAL_BY_DISTANCE: Final[Mapping[int, float]] = MappingProxyType(
    {0: 1.0, 1: 0.7, 2: 0.4, 3: 0.2}
)

#: Frame importance → multiplier-like sub-score.
IMPORTANCE_MULTIPLIERS: Final[Mapping[str, float]] = MappingProxyType(
    {"critical": 2.0, "important": 1.5, "normal": 1.0, "temporary": 0.7, "deprecated": 0.3}
)


@dataclass(frozen=True)
class ScoringProfile:
    """Weights of the four sub-scores; every built-in profile sums to 1.0."""

    name: str
    temporal: float
    popularity: float
    contextual: float
    importance: float


#: The four profiles, weights exactly as in Waggle's original engine.
PROFILES: Final[Mapping[str, ScoringProfile]] = MappingProxyType(
    {
        "balanced": ScoringProfile("balanced", 0.4, 0.2, 0.2, 0.2),
        "recent": ScoringProfile("recent", 0.6, 0.1, 0.2, 0.1),
        "important": ScoringProfile("important", 0.1, 0.1, 0.2, 0.6),
        "connected": ScoringProfile("connected", 0.1, 0.1, 0.6, 0.2),
    }
)


def get_profile(name: str) -> ScoringProfile:
    """The built-in profile called ``name``; an unknown name is the caller's error."""
    profile = PROFILES.get(name) if isinstance(name, str) else None
    if profile is None:
        valid = ", ".join(sorted(PROFILES))
        raise InvalidInputError(f"Unknown scoring profile {name!r}; valid profiles: {valid}")
    return profile


def _as_utc(when: datetime) -> datetime:
    """Naive values are UTC by the store's convention; aware ones are converted, not relabelled."""
    if when.tzinfo is UTC:  # what the store reads back (models/base.py): nothing to convert
        return when
    if when.tzinfo is None or when.tzinfo.utcoffset(when) is None:
        return when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def temporal_score(when: datetime, now: datetime) -> float:
    """1.0 within :data:`RECENCY_BOOST_DAYS`, then ``0.5 ** (days / HALF_LIFE_DAYS)``.

    The decay counts from day 0 (as Waggle's does), so day 8 drops to about 0.83 (not 1.0) and
    day 30 is exactly 0.5. A ``when`` in the future (clock skew between writers) is "now".
    """
    days = (_as_utc(now) - _as_utc(when)).total_seconds() / _SECONDS_PER_DAY
    if days <= RECENCY_BOOST_DAYS:
        return 1.0
    return float(0.5 ** (days / HALF_LIFE_DAYS))


def popularity_score(access_count: int) -> float:
    """``1 + 0.1 × log10(1 + n)``: grows slowly so a hot frame cannot drown the others.

    A negative count (never written by the store) is treated as 0 instead of failing on log10.
    """
    return 1.0 + math.log10(1 + max(0, access_count)) * 0.1


def contextual_score(distance: int | None) -> float:
    """Graph proximity: 0 hops → 1.0, 1 → 0.7, 2 → 0.4, 3 → 0.2; farther or unknown → 0."""
    if distance is None:
        return 0.0
    return CONTEXTUAL_BY_DISTANCE.get(distance, 0.0)


def importance_score(importance: str) -> float:
    """critical 2.0, important 1.5, normal 1.0, temporary 0.7, deprecated 0.3."""
    score = IMPORTANCE_MULTIPLIERS.get(importance) if isinstance(importance, str) else None
    if score is None:
        valid = ", ".join(IMPORTANCE_MULTIPLIERS)
        raise InvalidInputError(f"Unknown importance {importance!r}; valid values: {valid}")
    return score


def _weighted(weights: ScoringProfile, temporal: float, popularity: float, contextual: float,
              importance: float) -> float:
    """The relevance: the one place the four sub-scores are weighted and summed (in this order)."""
    return (temporal * weights.temporal + popularity * weights.popularity
            + contextual * weights.contextual + importance * weights.importance)


def _parts(weights: ScoringProfile, temporal: float, popularity: float, contextual: float,
           importance: float) -> dict[str, float]:
    """``explain``'s sub-scores: each under its name, each weight under ``<name>_weight``."""
    return {
        "temporal": temporal,
        "popularity": popularity,
        "contextual": contextual,
        "importance": importance,
        "temporal_weight": weights.temporal,
        "popularity_weight": weights.popularity,
        "contextual_weight": weights.contextual,
        "importance_weight": weights.importance,
    }


#: Memos of the pure sub-scores a search's ~80 candidates share a handful of values of (most never
#: accessed, most "normal", most without a graph distance); module-level (three memos wrapped per
#: search cost more than they saved) and bounded, as access counts are not.
_POPULARITY: Final = functools.lru_cache(maxsize=4096)(popularity_score)
_IMPORTANCE: Final = functools.lru_cache(maxsize=64)(importance_score)
_CONTEXTUAL: Final = functools.lru_cache(maxsize=64)(contextual_score)


class RelevanceScorer:
    """:func:`compute_relevance` for the many candidates of one search, against one ``now``: the
    same sub-scores and :func:`_weighted` sum (the same floats). Calling it gives the relevance
    alone; :meth:`parts` the breakdown that only the returned page's ``explain`` needs."""

    __slots__ = ("_boost_until", "_now", "weights")

    def __init__(self, profile: str | ScoringProfile, now: datetime) -> None:
        self.weights = profile if isinstance(profile, ScoringProfile) else get_profile(profile)
        self._now = _as_utc(now)
        #: A UTC time at or after this is within the recency boost: 1.0 without the arithmetic
        #: (``now - when <= RECENCY_BOOST_DAYS`` exactly as :func:`temporal_score` decides it).
        self._boost_until = self._now - timedelta(days=RECENCY_BOOST_DAYS)

    def _temporal(self, when: datetime) -> float:
        if when.tzinfo is UTC and when >= self._boost_until:
            return 1.0
        return temporal_score(when, self._now)

    def __call__(self, last_accessed: datetime, access_count: int, importance: str,
                 graph_distance: int | None) -> float:
        return _weighted(self.weights, self._temporal(last_accessed), _POPULARITY(access_count),
                         _CONTEXTUAL(graph_distance), _IMPORTANCE(importance))

    def parts(self, last_accessed: datetime, access_count: int, importance: str,
              graph_distance: int | None) -> dict[str, float]:
        """:func:`compute_relevance`'s ``parts``."""
        return _parts(self.weights, self._temporal(last_accessed),
                      _POPULARITY(access_count), _CONTEXTUAL(graph_distance),
                      _IMPORTANCE(importance))


def relevance_scorer(profile: str | ScoringProfile, now: datetime) -> RelevanceScorer:
    """A :class:`RelevanceScorer` for one search's candidates."""
    return RelevanceScorer(profile, now)


def compute_relevance(
    *,
    last_accessed: datetime,
    access_count: int,
    importance: str,
    graph_distance: int | None,
    profile: str | ScoringProfile,
    now: datetime,
) -> tuple[float, dict[str, float]]:
    """The weighted sum of the four sub-scores, and its parts for ``explain``.

    ``parts`` holds each sub-score under its name (``temporal``, ``popularity``, ``contextual``,
    ``importance``) and its weight under ``<name>_weight``. ``now`` is a parameter so one search
    scores every frame against the same instant.
    """
    weights = profile if isinstance(profile, ScoringProfile) else get_profile(profile)
    parts = _parts(weights, temporal_score(last_accessed, now), popularity_score(access_count),
                   contextual_score(graph_distance), importance_score(importance))
    relevance = _weighted(weights, parts["temporal"], parts["popularity"], parts["contextual"],
                          parts["importance"])
    return relevance, parts

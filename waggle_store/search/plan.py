"""A search request checked and turned into a plan: every argument validated before any lane runs.

Also the query's candidate entity names (:func:`query_names`), which the contextual score
looks up in the knowledge graph.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from waggle_store.dialects.base import LaneFilter
from waggle_store.errors import InvalidInputError
from waggle_store.search.periods import Period, named_periods
from waggle_store.search.query import keyword_terms
from waggle_store.search.scoring import get_profile
from waggle_store.search.where import plan_where
from waggle_store.textinput import check_identifier
from waggle_store.timeutil import optional_bound, utcnow

__all__ = ["LANES", "MAX_LIMIT", "SearchPlan", "plan_search", "query_names"]

LANES: Final = ("keyword", "vector")
MAX_LIMIT: Final = 1000
#: Longest entity name, in words, looked for in the query; and a bound on the query words used.
_MAX_NAME_WORDS: Final = 5
_MAX_QUERY_WORDS: Final = 200
#: sessions.gop_id is VARCHAR(255).
_MAX_GOP_ID: Final = 255


@dataclass
class SearchPlan:
    terms: list[str]
    where: LaneFilter
    limit: int
    profile: str
    context: dict[int, int] | None
    lanes: frozenset[str]
    #: The dates the query names ("on May 3, 2024", "last week"), relative ones as of planning.
    periods: list[Period]
    #: Whether the turns beside the best fused candidates join them (:mod:`.expand`).
    expand: bool = True


def plan_search(mind_id: int, query: Any, limit: Any, gop_id: Any, profile: Any, since: Any,
                until: Any, context: Any, lanes: Any, where: Any = None,
                expand: Any = True) -> SearchPlan:
    """Validate a search's arguments (InvalidInputError naming the bad one) and plan it."""
    if not isinstance(expand, bool):
        raise InvalidInputError(f"expand must be True or False, got {expand!r}")
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    if gop_id is not None:  # compared for equality: refused if no session id could hold it
        check_identifier(gop_id, name="gop_id", max_length=_MAX_GOP_ID)
    chosen = get_profile(profile).name
    since_utc = optional_bound(since, name="since")
    until_utc = optional_bound(until, name="until")
    if since_utc is not None and until_utc is not None and since_utc > until_utc:
        raise InvalidInputError(
            f"since ({since_utc.isoformat()}) is after until ({until_utc.isoformat()})")
    return SearchPlan(
        terms=keyword_terms(query),
        where=LaneFilter((mind_id,), gop_id, since_utc, until_utc, plan_where(where)),
        limit=limit,
        profile=chosen,
        context=_context(context),
        lanes=_lanes(lanes),
        periods=named_periods(query, utcnow()),
        expand=expand,
    )


def _context(context: Any) -> dict[int, int] | None:
    if context is None:
        return None
    if not isinstance(context, Mapping):
        raise InvalidInputError("context must be a mapping {frame_id: graph distance} or None")
    distances: dict[int, int] = {}
    for key, value in context.items():
        if isinstance(key, bool) or isinstance(value, bool) or not isinstance(key, int) \
                or not isinstance(value, int):
            raise InvalidInputError("context must map integer frame ids to integer distances")
        distances[key] = value
    return distances


def _lanes(lanes: Any) -> frozenset[str]:
    if lanes is None:
        return frozenset(LANES)
    if isinstance(lanes, str) or not isinstance(lanes, Collection):
        raise InvalidInputError(f"lanes must be a collection of {LANES}, got {lanes!r}")
    chosen = frozenset(lanes)
    if not chosen or not chosen <= set(LANES):
        raise InvalidInputError(f"lanes must be a non-empty subset of {LANES}, got {lanes!r}")
    return chosen


def query_names(query: str) -> list[str]:
    """Case-folded word n-grams of the query: the entity names it could be naming."""
    words: list[str] = []
    # Control/format characters (NUL above all, which Postgres refuses) never name an entity.
    clean = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in query[:20_000])
    for raw in clean.casefold().split()[:_MAX_QUERY_WORDS]:
        word = raw.strip(".,;:!?\"'()[]{}<>")
        if word.endswith(("'s", "’s")):
            word = word[:-2]
        if word:
            words.append(word)
    names: dict[str, None] = {}
    for n in range(1, _MAX_NAME_WORDS + 1):
        for i in range(len(words) - n + 1):
            names[" ".join(words[i : i + n])] = None
    return list(names)

"""The second pass for the part of the question the best hits leave unanswered.

A question that needs two memories ("What do Caroline and Melanie both like to paint?", "Where
did Jon go after he lost his job?") often has terms of one memory and terms of another, said in
different sessions. The first pass ranks the turns that match most of the question's terms at
the top, and those are mostly turns of one of the memories: the other's terms, which none of the
best hits contains, are the part of the question the search has not answered yet.

After the fusion, this step reads which of the query's keyword terms the :data:`TOP` best fused
candidates contain (:func:`~waggle_store.search.match.lexical_coverage`, the match score's own
term comparison). When some are covered and others are not, the keyword lane runs once more for
the uncovered terms alone (the adapter's ``keyword_search``, every filter of the search applied),
and each of its hits' fused score is raised to what a keyword hit of that pass would weigh,
scaled by the share of the query's terms it answers: ``share × confidence × k/(k + rank)`` times
the best fused score, with ``confidence`` the keyword lane's own (its idf sum relative to the
pass's best, squared, :func:`~waggle_store.search.fusion.keyword_confidence`) and ``share`` the
uncovered terms' share of the query's. One that ranks higher keeps its own score. No constant is
fitted to a data set.

Nothing runs when every term is covered (the best hits answer the whole question), when none is
(the first pass found nothing of it: a second pass over the same terms would find the same), or
when the keyword lane did not run.
"""

from __future__ import annotations

import dataclasses
import heapq
import re
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Final

from sqlalchemy import Connection

from waggle_store.dialects.base import LaneHit, SearchAdapter
from waggle_store.dialects.stop_words import only_stop_words
from waggle_store.records import Frame
from waggle_store.search.fusion import RRF_K, Fusion, keyword_confidence
from waggle_store.search.plan import SearchPlan

__all__ = ["PASS_LIMIT", "TOP", "Cover", "second_pass"]

#: How many of the best fused candidates are read for the terms they cover.
TOP: Final = 5
#: Most hits the second pass brings in.
PASS_LIMIT: Final = 10

_CONTENT: Final = [field.name for field in dataclasses.fields(Frame)].index("content")
_SCORE: Final = itemgetter(1)


def _stem(term: str) -> str:
    """A prefix standing for the term's word family ("camped" -> "camp", "participated" ->
    "participa"): the term case-folded, less up to three trailing letters, at least four kept."""
    folded = term.casefold()
    return folded[:max(4, len(folded) - 3)]


@dataclasses.dataclass
class Cover:
    """What :func:`second_pass` did: the terms it searched (none: it did not run) and the score
    it lifted each of its hits to (a hit no lane returned joins the candidates through ``hits``)."""

    uncovered: list[str] = dataclasses.field(default_factory=list)
    lifted: dict[int, float] = dataclasses.field(default_factory=dict)
    hits: list[LaneHit] = dataclasses.field(default_factory=list)


def second_pass(conn: Connection, adapter: SearchAdapter, plan: SearchPlan,
                ran: Mapping[str, Sequence[LaneHit]], fusion: Fusion) -> Cover:
    """Search the query's terms that the best candidates leave uncovered and lift what answers
    them in ``fusion`` (see the module docstring). One statement, or none."""
    found = Cover()
    import os
    if os.environ.get("WCOVER") == "0":
        return found
    if not plan.expand or "keyword" not in ran or len(plan.terms) < 2:
        return found
    best = [(frame_id, score) for frame_id, score
            in heapq.nlargest(TOP, fusion.scores.items(), key=_SCORE) if score > 0.0]
    if not best:
        return found
    rows = {hit.frame_id: hit.frame for hits in ran.values() for hit in hits}
    contents = [rows[frame_id][_CONTENT].casefold() for frame_id, _ in best]
    terms = [term for term in plan.terms if not only_stop_words(term)]
    uncovered = [term for term in terms
                 if not any(re.search(r"\b" + re.escape(_stem(term)), text) for text in contents)]
    if not uncovered or len(uncovered) == len(terms):
        return found
    found.uncovered = uncovered
    hits = adapter.keyword_search(conn, terms=uncovered, where=plan.where, limit=PASS_LIMIT)
    if not hits:
        return found
    share = len(uncovered) / len(terms)
    top = best[0][1]
    confidences = keyword_confidence([hit.score for hit in hits])
    for rank, (hit, confidence) in enumerate(zip(hits, confidences, strict=True)):
        score = min(1.0, top * share * confidence * RRF_K / (RRF_K + rank))
        if fusion.lift(hit.frame_id, score):
            found.lifted[hit.frame_id] = score
            if hit.frame_id not in rows:
                found.hits.append(hit)
    return found

"""Expansion by the structure of a conversation: the turns next to the best hits.

A memory is often one turn of a session, and what answers a question is often in a turn next to
the one that matches it: the reply that says what happened, or the turn a reply answers ("My
sister said we had to go" before "We took the kids to the dinosaur exhibit"). Neither lane sees
that structure (each scores one frame's own words or vector; the keyword index carries a turn's
preceding turn, never its following one), so after the fusion this step reads it:

The top :data:`SEEDS` fused candidates (the seeds) bring in the turns right before and after
each of them in its session (:func:`~waggle_store.dialects.neighbours.neighbour_hits`, every
filter of the search applied). Such a turn's fused score is raised to :data:`NEIGHBOUR_SHARE`
times the seed's (the sum of both seeds' for a turn between two); one that a lane ranked higher
keeps its own score. The share is the keyword lane's own weighting of a turn's neighbour (the
preceding turn's words count at :data:`~waggle_store.dialects.context_index.CONTEXT_WEIGHT` of a
turn's own) turned into a confidence the way the fusion turns a lane's strength into one
(squared, :data:`~waggle_store.search.fusion.CONFIDENCE_POWER`): nothing is fitted to a data
set. Scores stay in ``[0, 1]`` and ``final = rrf × relevance`` holds.

A seed that asks (its text ends with a question, :func:`asks`) hands the turn after it its whole
score (:data:`ANSWER_SHARE`): a question matches a query in the query's own words ("Do you play
any instruments?" for "What instruments does she play?"), and what it asks for is in the reply
("Yeah, I play clarinet!"), which shares none of them. The reply is as relevant as the question
that found it; the share is that identity, not a fitted value.

``explain["expansion"]`` says, for each result, the seeds it was lifted beside
(``neighbour_of``; None when it was not lifted), the seeds among them whose question it follows
(``answers``; None when none), and its fused score before the step (``rrf_before``; None when no
lane found it). ``mind.search(..., expand=False)`` leaves the step out
(``explain["expansion"]`` is then None).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, Final

from sqlalchemy import Connection

from waggle_store.dialects.base import LaneHit
from waggle_store.dialects.context_index import CONTEXT_WEIGHT
from waggle_store.dialects.neighbours import neighbour_hits
from waggle_store.records import Frame
from waggle_store.search.fusion import CONFIDENCE_POWER, Fusion
from waggle_store.search.plan import SearchPlan

__all__ = ["ANSWER_SHARE", "NEIGHBOUR_SHARE", "SEEDS", "Expansion", "asks", "expand"]

#: How many of the best fused candidates seed the expansion (half a default page).
SEEDS: Final = 10
#: A seed's neighbouring turn scores at least this share of the seed's fused score.
NEIGHBOUR_SHARE: Final = CONTEXT_WEIGHT ** CONFIDENCE_POWER
#: The turn after a seed that asks scores at least this share of the seed's fused score.
ANSWER_SHARE: Final = 1.0

_FIELDS: Final = [field.name for field in dataclasses.fields(Frame)]
_GOP, _T, _CONTENT = _FIELDS.index("gop_id"), _FIELDS.index("t"), _FIELDS.index("content")
#: A note closing a turn, in brackets or parentheses (a shared image's caption, a stage
#: direction), is not part of what the turn says: closing character -> opening one.
_NOTE_OPENS: Final = {"]": "[", ")": "("}
_SCORE: Final = itemgetter(1)


@dataclasses.dataclass
class Expansion:
    """What :func:`expand` did: the neighbours it lifted and each candidate's fused score before
    (nothing, and no explain, when the search left the step out: ``enabled`` False)."""

    enabled: bool = True
    #: Lifted neighbour's frame id -> the seeds beside it.
    lifted: dict[int, list[int]] = dataclasses.field(default_factory=dict)
    #: Lifted neighbour's frame id -> the seeds that ask and that it follows.
    answering: dict[int, list[int]] = dataclasses.field(default_factory=dict)
    #: Each candidate's fused score before the expansion (a neighbour no lane found has none).
    before: dict[int, float] = dataclasses.field(default_factory=dict)
    #: The rows of the neighbours no lane returned (they join the candidates through them).
    hits: list[LaneHit] = dataclasses.field(default_factory=list)

    def explain(self, frame_id: int) -> dict[str, Any] | None:
        """``explain["expansion"]`` of one result."""
        if not self.enabled:
            return None
        return {"neighbour_of": self.lifted.get(frame_id),
                "answers": self.answering.get(frame_id),
                "rrf_before": self.before.get(frame_id)}


def asks(content: str) -> bool:
    """Whether a turn ends with a question (a closing note in brackets or parentheses aside).
    Linear in the text's length (string scans, no pattern that could backtrack)."""
    text = content.rstrip()
    if text[-1:] in _NOTE_OPENS:
        text = text[:max(text.rfind(_NOTE_OPENS[text[-1]]), 0)].rstrip()
    return text.endswith("?")


def expand(conn: Connection, dialect: str, plan: SearchPlan,
           ran: Mapping[str, Sequence[LaneHit]], fusion: Fusion) -> Expansion:
    """Lift the seeds' neighbouring turns in ``fusion`` (see the module docstring; a neighbour
    no lane returned is added to it). One statement; none when the plan leaves the step out or
    no candidate has any evidence."""
    if not plan.expand:
        return Expansion(enabled=False)
    found = Expansion(before=dict(fusion.scores))
    # Stable: ties keep the fusion's order (keyword hits first).
    seeds = [(frame_id, score) for frame_id, score
             in heapq.nlargest(SEEDS, fusion.scores.items(), key=_SCORE) if score > 0.0]
    if not seeds:
        return found
    rows = {hit.frame_id: hit.frame for hits in ran.values() for hit in hits}
    # (session, t) -> (seed id, fused score, whether it asks)
    at: dict[tuple[str, int], tuple[int, float, bool]] = {}
    for frame_id, score in seeds:
        frame = rows[frame_id]
        at[(frame[_GOP], frame[_T])] = (frame_id, score, asks(frame[_CONTENT]))
    for hit in neighbour_hits(conn, dialect=dialect, seeds=list(at), where=plan.where):
        gop, t = hit.frame[_GOP], hit.frame[_T]
        before, after = at.get((gop, t - 1)), at.get((gop, t + 1))
        beside = [seed for seed in (before, after) if seed is not None]
        # Only the seed before this turn can be the question it replies to.
        answered = before if before is not None and before[2] else None
        lift = sum(seed[1] * (ANSWER_SHARE if seed is answered else NEIGHBOUR_SHARE)
                   for seed in beside)
        if fusion.lift(hit.frame_id, min(1.0, lift)):
            found.lifted[hit.frame_id] = [seed for seed, _, _ in beside]
            if answered is not None:
                found.answering[hit.frame_id] = [answered[0]]
            if hit.frame_id not in rows:
                found.hits.append(hit)
    return found

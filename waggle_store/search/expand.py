"""Expansion by the structure of a conversation: the session the top hits share, and the turns
next to them.

A memory is often one turn of a session, and what answers a question is spread over turns that
match it unevenly: the turn that names the thing, the reply that says what happened to it, a
later turn of the same talk. Neither lane sees that structure (each scores one frame's own words
or vector), so after the fusion this step reads it from the fused candidates:

* **Session share.** The top :data:`SEEDS` fused candidates (the seeds) are where the lanes'
  evidence concentrates; a session holding much of the seeds' summed score is likely the talk
  the question is about. Every candidate's fused score is multiplied by ``1 + share``, its
  session's share of that sum (0 for a session with no seed), over the largest such factor, so
  scores stay in ``[0, 1]`` and ``final = rrf × relevance`` still holds: in effect the
  candidates of other sessions fall behind those of the sessions the seeds share. The order of
  the candidates within one session is kept. Nothing is fitted: the share is the seeds' own
  distribution.
* **Neighbouring turns.** The turns right before and after each seed in its session
  (:func:`~waggle_store.dialects.neighbours.neighbour_hits`, the search's filters applied) join
  the candidates with a fused score of at least :data:`NEIGHBOUR_SHARE` times the seed's (the
  sum of both seeds' for a turn between two): a turn next to a strong hit is a likely part of
  the answer although it shares no word with the question ("They loved it!" after "I took the
  kids to the museum"). The share is the keyword lane's own weighting of a turn's neighbour
  (the preceding turn's words count at
  :data:`~waggle_store.dialects.context_index.CONTEXT_WEIGHT` of a turn's own), turned into a
  confidence the way the fusion turns a lane's strength into one (squared,
  :data:`~waggle_store.search.fusion.CONFIDENCE_POWER`). A neighbour that a lane ranked higher
  keeps its own score.

``explain["expansion"]`` says, for each result, its session, the session's share and factor,
the seeds a neighbour was lifted beside (``neighbour_of``, else None) and the fused score it had
before the step (``rrf_before``, None when no lane found it). ``mind.search(...,
expand=False)`` leaves the step out (``explain["expansion"]`` is then None).
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

__all__ = ["NEIGHBOUR_SHARE", "SEEDS", "Expansion", "expand"]

#: How many of the best fused candidates seed the expansion (half a default page).
SEEDS: Final = 10
#: A seed's neighbouring turn scores at least this share of the seed's fused score.
NEIGHBOUR_SHARE: Final = CONTEXT_WEIGHT ** CONFIDENCE_POWER

_FIELDS: Final = [field.name for field in dataclasses.fields(Frame)]
_GOP, _T = _FIELDS.index("gop_id"), _FIELDS.index("t")
_SCORE: Final = itemgetter(1)


@dataclasses.dataclass
class Expansion:
    """What :func:`expand` did: the seed sessions' shares, the neighbours it lifted and each
    candidate's fused score before (nothing, and no explain, when the search left the step out:
    ``enabled`` False)."""

    enabled: bool = True
    #: Seed session (``gop_id``) -> its share of the seeds' summed fused score.
    shares: dict[str, float] = dataclasses.field(default_factory=dict)
    #: The largest session factor, ``1 + max(shares)``: the divisor that keeps scores in [0, 1].
    top: float = 1.0
    #: Lifted neighbour's frame id -> the seeds beside it.
    lifted: dict[int, list[int]] = dataclasses.field(default_factory=dict)
    #: Each candidate's fused score before the expansion (a neighbour no lane found has none).
    before: dict[int, float] = dataclasses.field(default_factory=dict)
    #: The rows of the neighbours no lane returned (they join the candidates through them).
    hits: list[LaneHit] = dataclasses.field(default_factory=list)

    def factor(self, gop_id: str) -> float:
        """What a candidate of session ``gop_id`` has its score multiplied by."""
        return (1.0 + self.shares.get(gop_id, 0.0)) / self.top

    def explain(self, frame_id: int, frame: Sequence[Any]) -> dict[str, Any] | None:
        """``explain["expansion"]`` of one result."""
        if not self.enabled:
            return None
        gop = frame[_GOP]
        return {"session": gop, "session_share": self.shares.get(gop, 0.0),
                "factor": self.factor(gop), "neighbour_of": self.lifted.get(frame_id),
                "rrf_before": self.before.get(frame_id)}


def expand(conn: Connection, dialect: str, plan: SearchPlan,
           ran: Mapping[str, Sequence[LaneHit]], fusion: Fusion) -> Expansion:
    """Expand one search's fused candidates in ``fusion`` (see the module docstring): each
    seed's neighbouring turns lifted (a neighbour no lane returned added), then every score
    multiplied by its session's factor. One statement, for the neighbours; none when the plan
    leaves the step out."""
    if not plan.expand:
        return Expansion(enabled=False)
    sessions: dict[int, str] = {}
    at: dict[tuple[str, int], tuple[int, float]] = {}
    for hits in ran.values():
        for hit in hits:
            sessions[hit.frame_id] = hit.frame[_GOP]
    # Stable: ties keep the fusion's order (keyword hits first).
    seeds = [(frame_id, score) for frame_id, score
             in heapq.nlargest(SEEDS, fusion.scores.items(), key=_SCORE) if score > 0.0]
    found = Expansion(before=dict(fusion.scores))
    total = sum(score for _, score in seeds)
    if not seeds or total <= 0.0:
        return found
    rows = {hit.frame_id: hit.frame for hits in ran.values() for hit in hits}
    for frame_id, score in seeds:
        gop = sessions[frame_id]
        found.shares[gop] = found.shares.get(gop, 0.0) + score / total
        at[(gop, rows[frame_id][_T])] = (frame_id, score)
    for hit in neighbour_hits(conn, dialect=dialect, seeds=list(at), where=plan.where):
        gop, t = hit.frame[_GOP], hit.frame[_T]
        beside = [at[key] for key in ((gop, t - 1), (gop, t + 1)) if key in at]
        if fusion.lift(hit.frame_id, min(1.0, NEIGHBOUR_SHARE * sum(s for _, s in beside))):
            found.lifted[hit.frame_id] = [seed for seed, _ in beside]
            if hit.frame_id not in sessions:
                sessions[hit.frame_id] = gop
                found.hits.append(hit)
    found.top = 1.0 + max(found.shares.values())
    factor = found.factor
    fusion.scores = {frame_id: score * factor(sessions[frame_id])
                     for frame_id, score in fusion.scores.items()}
    return found

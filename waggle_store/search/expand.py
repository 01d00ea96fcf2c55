"""Expansion by the structure of a conversation: the session the top hits share, and the turns
next to them.

A memory is often one turn of a session, and what answers a question is spread over turns that
match it unevenly: the turn that names the thing, the reply that says what happened to it, a
later turn of the same talk. Neither lane sees that structure (each scores one frame's own words
or vector), so after the fusion this step reads it from the fused candidates:

* **Session share.** The top :data:`SEEDS` fused candidates (the seeds) are where the lanes'
  evidence concentrates; a session holding much of the seeds' summed score is likely the talk
  the question is about. Every candidate of a seed session has its final score multiplied by
  ``1 + share``, its session's share of that sum (``1.0`` for a candidate of a session with no
  seed). The order of the candidates within one session is kept. Nothing is fitted: the share
  is the seeds' own distribution.
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
before (``rrf_before``, None when no lane found it); ``mind.search(..., expand=False)`` leaves
the step out (``explain["expansion"]`` is then None).
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
    """What :func:`expand` found: the seed sessions' shares, the neighbours it lifted (nothing,
    and no explain, when the search left the step out: ``enabled`` False)."""

    enabled: bool = True

    #: Seed session (``gop_id``) -> its share of the seeds' summed fused score.
    shares: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Lifted frame id -> (the seeds beside it, its fused score before; None if it had none).
    lifted: dict[int, tuple[list[int], float | None]] = dataclasses.field(default_factory=dict)
    #: The neighbours' rows (those no lane returned join the candidates through them).
    hits: list[LaneHit] = dataclasses.field(default_factory=list)

    def factor(self, frame: Sequence[Any]) -> float:
        """The multiplier of a candidate's final score: ``1 + its session's share``."""
        return 1.0 + self.shares.get(frame[_GOP], 0.0)

    def explain(self, frame_id: int, frame: Sequence[Any]) -> dict[str, Any] | None:
        """``explain["expansion"]`` of one result."""
        if not self.enabled:
            return None
        seeds, before = self.lifted.get(frame_id, (None, None))
        share = self.shares.get(frame[_GOP], 0.0)
        return {"session": frame[_GOP], "session_share": share, "factor": 1.0 + share,
                "neighbour_of": seeds, "rrf_before": before}


def expand(conn: Connection, dialect: str, plan: SearchPlan,
           ran: Mapping[str, Sequence[LaneHit]], fusion: Fusion) -> Expansion:
    """The expansion of one search's fused candidates (see the module docstring): the seed
    sessions' shares, and each seed's neighbouring turns lifted in ``fusion`` (a neighbour no
    lane returned is added to it). One statement, for the neighbours; none when the plan
    leaves the step out."""
    if not plan.expand:
        return Expansion(enabled=False)
    rows: dict[int, Sequence[Any]] = {}
    for hits in ran.values():
        for hit in hits:
            rows.setdefault(hit.frame_id, hit.frame)
    # Stable: ties keep the fusion's order (keyword hits first).
    seeds = [(frame_id, score) for frame_id, score
             in heapq.nlargest(SEEDS, fusion.scores.items(), key=_SCORE) if score > 0.0]
    found = Expansion()
    total = sum(score for _, score in seeds)
    if not seeds or total <= 0.0:
        return found
    at: dict[tuple[str, int], tuple[int, float]] = {}
    for frame_id, score in seeds:
        frame = rows[frame_id]
        found.shares[frame[_GOP]] = found.shares.get(frame[_GOP], 0.0) + score / total
        at[(frame[_GOP], frame[_T])] = (frame_id, score)
    for hit in neighbour_hits(conn, dialect=dialect, seeds=list(at), where=plan.where):
        gop, t = hit.frame[_GOP], hit.frame[_T]
        beside = [at[key] for key in ((gop, t - 1), (gop, t + 1)) if key in at]
        before = fusion.scores.get(hit.frame_id)
        if fusion.lift(hit.frame_id, min(1.0, NEIGHBOUR_SHARE * sum(s for _, s in beside))):
            found.lifted[hit.frame_id] = ([seed for seed, _ in beside], before)
            if before is None:
                found.hits.append(hit)
    return found

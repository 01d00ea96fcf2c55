"""Reciprocal Rank Fusion of the search lanes, normalised so that 1.0 means "top everywhere".

The seed summed ``1/(k + rank)`` and used that raw number as the score; it tops out at about
0.033 for two lanes, which made every downstream threshold (0.1, 0.6, 0.7) unreachable
(reference §23.8). Here the raw sum is kept for ``explain`` and the score is divided by the best
sum possible with the lanes that ran, so it lies in ``[0, 1]`` and a frame ranked first in every
available lane scores exactly 1.0.

Which lanes count: every lane *passed in* counts, including one that ran and returned nothing
(the frame genuinely was not found there, so it should not score as if it were top of that
lane). A lane that could not run at all (no vector backend, no embedder, no keyword terms) must
not be passed in: it says nothing about the frame, and counting it would cap keyword-only
results at 0.5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from waggle_store.errors import InvalidInputError

__all__ = ["RRF_K", "FusedScore", "rrf_fuse"]

#: The RRF constant of the seed and of DESIGN §5; ranks are 0-based, so rank 0 adds 1/60.
RRF_K: Final = 60


@dataclass(frozen=True)
class FusedScore:
    """One frame's fusion result.

    ``score`` is the normalised RRF in ``[0, 1]`` (what ``SearchResult.rrf_score`` carries);
    ``raw`` is the seed-style unnormalised sum; ``ranks`` maps each lane that returned the frame
    to its 0-based rank there, for ``explain``. Lanes that did not return it are absent.
    """

    frame_id: int
    score: float
    raw: float
    ranks: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


def rrf_fuse(lanes: Mapping[str, Sequence[int]], *, k: int = RRF_K) -> dict[int, FusedScore]:
    """Fuse ranked id lists (best first) into normalised RRF scores.

    ``lanes`` maps a lane name to the ids it returned, best first; pass only lanes that were
    available (see the module docstring). The result is in first-seen order — the ids of the
    first lane, then ids seen only in later lanes, in their order — so passing the keyword lane
    first and sorting the result with a stable sort gives the seed's tie order. An id repeated
    within a lane keeps its best (first) rank. No lanes → ``{}``.
    """
    if k <= 0:
        raise InvalidInputError(f"RRF k must be a positive integer, got {k!r}")
    available = len(lanes)
    if available == 0:
        return {}
    ranks_by_id: dict[int, dict[str, int]] = {}
    for lane, ids in lanes.items():
        for rank, frame_id in enumerate(ids):
            lane_ranks = ranks_by_id.setdefault(frame_id, {})
            lane_ranks.setdefault(lane, rank)
    fused: dict[int, FusedScore] = {}
    for frame_id, lane_ranks in ranks_by_id.items():
        raw = sum(1.0 / (k + rank) for rank in lane_ranks.values())
        # k/(k+rank) is exactly 1.0 at rank 0, so "top of every lane" is exactly 1.0 with no
        # floating-point drift, which dividing raw by available/k would not guarantee.
        score = sum(k / (k + rank) for rank in lane_ranks.values()) / available
        fused[frame_id] = FusedScore(
            frame_id=frame_id,
            score=score,
            raw=raw,
            ranks=MappingProxyType(dict(lane_ranks)),
        )
    return fused

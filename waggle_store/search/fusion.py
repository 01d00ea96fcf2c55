"""Confidence-weighted Reciprocal Rank Fusion of the search lanes, normalised to ``[0, 1]``.

**Base: RRF, k = 60, 0-based ranks**. A frame at rank ``r`` of a lane gets
``k / (k + r)`` from that lane (1.0 at rank 0); the score is the sum over the lanes that ran,
normalised so that the top of every lane scores 1.0 (below). The plain sum of ``1/(k + rank)``
tops out at about 0.033 for two lanes, which would make every downstream threshold (0.1, 0.6,
0.7) unreachable; it is kept as ``raw`` for ``explain``.

**Confidence weights.** With k = 60 a lane's ranks are almost flat (rank 10 still gets 0.86), so
plain RRF ranks "in both lanes, anywhere in the top 40" above "the clear best match of one lane",
and loses to BM25 alone at k = 10 on conversation memories (the LoCoMo development set). Each
hit's term is therefore multiplied by a confidence in ``[0, 1]`` computed from *that lane's own
raw scores for this query* (no constant fitted to a data set, no comparison of one lane's scale
with another's):

* keyword: strength ``s / s_top``, the hit's idf sum (the one keyword formula of both dialects,
  ``dialects/keyword_rank.py``) relative to the best hit of the lane (magnitudes, so a
  negative score such as FTS5's raw bm25 would work as is). The sum has no
  upper bound and its scale changes with the corpus, so the lane's best hit is the reference: it
  always has strength 1. A hit matching only a common word (a speaker's name) next to hits that
  match the rare words of the query gets a small strength, although its rank may be close.
  A lane whose scores are all equal (the LIKE fallback gives 0.0) has strength 1 everywhere.
* vector: strength ``(sim - m) / (1 - m)`` clipped to ``[0, 1]``, with ``sim = 1 - cosine
  distance`` and ``m`` the median similarity of the lane's candidates (with one orthogonal
  pseudo-candidate at 0.0 so one or two hits still have a background). Cosine has a natural top
  (1: same direction as the query) but no natural zero: a real embedder gives unrelated text a
  similarity well above 0 (all-MiniLM-L6-v2: about 0.4 on conversation text). The strength is
  how far the hit stands out from what this query finds everywhere, as a share of the way to an
  exact match. A hit at or below the median adds nothing from the vector lane.
* the confidence is the strength **squared**. Any convex map makes one strong hit outweigh two
  middling ones (1² > 0.5² + 0.5²; a linear map would tie them), which is the failure of plain
  RRF to correct; the square is the simplest such map.

**What 1.0 means.** ``score`` lies in ``[0, 1]``: the frame's weighted sum divided by the best
weighted term each lane gave any frame (its rank-0 hit, as lanes are sorted best first), summed
over the lanes. It is 1.0 exactly for a frame at the top of every lane that ran, as in the
unweighted contract. A lane's share of the divisor is its own best confidence, so a lane that is
unsure of everything it found (a vector lane whose best hit barely stands out from its median)
counts for little, and a keyword top hit that lane did not find still scores close to 1.0; a lane
that ran and found nothing counts fully (1). The divisor is the same for every frame of one
search, so it changes scores, never the order. A frame whose every lane gave it confidence 0
scores 0.0 (it stays in the results, below every frame with evidence). Without ``weights`` (every
confidence 1) this is exactly the plain normalised RRF: ``Σ k/(k + rank) / lanes``.

Which lanes count: every lane *passed in* counts, including one that ran and returned nothing
(the frame genuinely was not found there, so it should not score as if it were top of that
lane). A lane that could not run at all (no vector backend, no embedder, no keyword terms) must
not be passed in: it says nothing about the frame, and counting it would cap keyword-only
results at 0.5.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from waggle_store.errors import InvalidInputError

__all__ = [
    "CONFIDENCE_POWER",
    "LANE_CONFIDENCE",
    "RRF_K",
    "FusedScore",
    "Fusion",
    "keyword_confidence",
    "rrf_fuse",
    "vector_confidence",
]

#: The RRF constant; ranks are 0-based, so rank 0 adds 1/60.
RRF_K: Final = 60
#: A hit's confidence is its lane strength raised to this power (see the module docstring).
CONFIDENCE_POWER: Final = 2


@dataclass(frozen=True)
class FusedScore:
    """One frame's fusion result.

    ``score`` is the normalised, confidence-weighted RRF in ``[0, 1]`` (what
    ``SearchResult.rrf_score`` carries); ``raw`` is the plain unweighted, unnormalised sum
    ``Σ 1/(k + rank)``. For each lane that returned the frame: ``ranks`` its 0-based rank there,
    ``weights`` the confidence applied to it, and ``contributions`` what that lane added to
    ``score`` (``weight × k/(k + rank)`` over the divisor; they sum to ``score``). Lanes that did
    not
    return the frame are absent.
    """

    frame_id: int
    score: float
    raw: float
    ranks: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    contributions: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


def _check_scores(scores: Sequence[float], what: str) -> list[float]:
    values = list(map(float, scores))
    if not all(map(math.isfinite, values)):  # (C-level map: this runs for every search's lanes)
        raise InvalidInputError(f"{what} must be finite numbers")
    return values


def keyword_confidence(scores: Sequence[float], *, power: int = CONFIDENCE_POWER) -> list[float]:
    """Confidence of each keyword hit from the lane's raw scores (the idf sum), in order.

    ``(|s| / max |s|) ** power``: the lane's best hit has 1.0. Signs are ignored (a lane whose
    better scores are more negative, as FTS5's bm25, reads the same). All scores zero (the LIKE
    fallback) → 1.0 for every hit: the lane gives no evidence beyond its order.
    """
    magnitudes = [abs(s) for s in _check_scores(scores, "keyword scores")]
    top = max(magnitudes, default=0.0)
    if top <= 0.0:
        return [1.0] * len(magnitudes)
    # (A conditional, not min(): a builtin's call per hit cost as much as the rest.)
    return [(m / top if m < top else 1.0) ** power for m in magnitudes]


def vector_confidence(distances: Sequence[float], *, power: int = CONFIDENCE_POWER) -> list[float]:
    """Confidence of each vector hit from the lane's cosine distances, in order.

    ``clip((sim - m) / (1 - m), 0, 1) ** power`` with ``sim = 1 - distance`` and ``m`` the median
    of the lane's similarities together with one pseudo-similarity of 0.0 (an orthogonal
    candidate, so a lane of one or two hits still has a background below them).
    """
    sims = [1.0 - d for d in _check_scores(distances, "vector distances")]
    if not sims:
        return []
    background = statistics.median([*sims, 0.0])
    if background >= 1.0:  # every candidate is an exact match: nothing stands out, nothing lost
        return [1.0] * len(sims)
    span = 1.0 - background  # (the same float in every term, computed once)
    confidences = []
    for s in sims:
        # Clipped to [0, 1] with conditionals, not min()/max(): a builtin's call per hit cost
        # as much as the rest.
        strength = (s - background) / span
        if strength <= 0.0:
            strength = 0.0
        elif strength > 1.0:
            strength = 1.0
        confidences.append(strength ** power)
    return confidences


#: How each lane turns its raw scores (as the dialect adapters return them) into confidences.
LANE_CONFIDENCE: Final[Mapping[str, Callable[[Sequence[float]], list[float]]]] = MappingProxyType(
    {"keyword": keyword_confidence, "vector": vector_confidence}
)


class Fusion:
    """The fused scores of one search, with the per-lane detail built only where it is read.

    ``scores`` maps every id to its normalised score, in first-seen order (see :func:`rrf_fuse`);
    :meth:`detail` builds the :class:`FusedScore` of one id. A search scores every candidate
    (dozens) but explains only the page it returns, and building the detail of every candidate
    was a measurable share of a search's time (``benchmarks/search_latency.py``).
    """

    __slots__ = ("_hits", "_k", "_total", "scores")

    def __init__(
        self,
        lanes: Mapping[str, Sequence[int]],
        *,
        k: int = RRF_K,
        weights: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        if k <= 0:
            raise InvalidInputError(f"RRF k must be a positive integer, got {k!r}")
        weights = weights or {}
        unknown = set(weights) - set(lanes)
        if unknown:
            raise InvalidInputError(
                f"weights given for lanes that were not passed: {sorted(unknown)}"
            )
        hits: dict[int, dict[str, tuple[int, float, float]]] = {}
        # Each frame's weighted sum, its lanes' terms added in lane order (as ``lanes`` lists).
        sums: dict[int, float] = {}
        # Each lane's best term over all frames (1.0 for a lane that ran and found nothing):
        # the divisor that makes "top of every lane" exactly 1.0.
        best: dict[str, float] = {}
        # Per lane, the frames whose term there is the lane's best.
        tops: list[set[int]] = []
        for lane, ids in lanes.items():
            lane_weights = weights.get(lane)
            if lane_weights is None:
                lane_weights = [1.0] * len(ids)
            elif len(lane_weights) != len(ids):
                raise InvalidInputError(
                    f"lane {lane!r}: {len(lane_weights)} weights for {len(ids)} ids"
                )
            top = 0.0 if ids else 1.0
            at_top: set[int] = set()
            # (Plain loops and lookups: this runs for every candidate of every search.)
            for rank, (frame_id, weight) in enumerate(zip(ids, lane_weights, strict=True)):
                w = float(weight)
                if not 0.0 <= w <= 1.0:  # also rejects NaN
                    raise InvalidInputError(f"lane {lane!r}: weight {weight!r} is not in [0, 1]")
                seen = hits.get(frame_id)
                if seen is not None and lane in seen:  # a repeated id keeps its best (first) rank
                    continue
                term = w * (k / (k + rank))
                if seen is None:
                    hits[frame_id] = {lane: (rank, w, term)}
                    sums[frame_id] = term
                else:
                    seen[lane] = (rank, w, term)
                    sums[frame_id] += term
                if term > top:
                    top, at_top = term, {frame_id}
                elif term == top:
                    at_top.add(frame_id)
            best[lane] = top
            tops.append(at_top)
        total = sum(best.values())
        scores: dict[int, float]
        if total <= 0:
            scores = dict.fromkeys(sums, 0.0)
        else:
            # A frame holding every lane's best term sums to exactly ``total`` (same floats, same
            # order is not guaranteed, hence the explicit set): exactly 1.0, no rounding drift.
            exact = set.intersection(*tops) if tops else set()
            scores = {frame_id: 1.0 if frame_id in exact or summed >= total else summed / total
                      for frame_id, summed in sums.items()}
        self._k, self._hits, self._total = k, hits, total
        self.scores = scores

    def lift(self, frame_id: int, score: float) -> bool:
        """Raise a frame's score to ``score`` (in ``[0, 1]``) if it is below it; whether it was.
        A frame no lane returned joins the scores (last in their order), with no lane parts
        (the search's expansion step, :mod:`.expand`)."""
        known = self.scores.get(frame_id)
        if known is not None and score <= known:
            return False
        self.scores[frame_id] = score
        return True

    def lanes(self, frame_id: int) -> tuple[float, dict[str, tuple[int, float, float]]]:
        """The parts of :meth:`detail` without building the record: ``raw``, and per lane that
        returned the frame (rank, weight, contribution). A search's explain reads them for each
        result of its page. A frame only lifted (:meth:`lift`) has none (raw 0.0); ``KeyError``
        for an id the fusion does not hold."""
        total, k = self._total, self._k
        raw = 0.0
        parts: dict[str, tuple[int, float, float]] = {}
        hits = self._hits.get(frame_id)
        if hits is None:
            if frame_id not in self.scores:
                raise KeyError(frame_id)
            return raw, parts
        for lane, (rank, w, t) in hits.items():  # one pass: explain's hot path
            raw += 1.0 / (k + rank)
            parts[lane] = (rank, w, t / total if total > 0 else 0.0)
        return raw, parts

    def detail(self, frame_id: int) -> FusedScore:
        """The :class:`FusedScore` of one fused id (``KeyError`` for an id no lane returned)."""
        raw, parts = self.lanes(frame_id)
        return FusedScore(
            frame_id=frame_id, score=self.scores[frame_id], raw=raw,
            ranks=MappingProxyType({lane: rank for lane, (rank, _, _) in parts.items()}),
            weights=MappingProxyType({lane: w for lane, (_, w, _) in parts.items()}),
            contributions=MappingProxyType({lane: c for lane, (_, _, c) in parts.items()}),
        )


def rrf_fuse(
    lanes: Mapping[str, Sequence[int]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, Sequence[float]] | None = None,
) -> dict[int, FusedScore]:
    """Fuse ranked id lists (best first) into normalised, confidence-weighted RRF scores.

    ``lanes`` maps a lane name to the ids it returned, best first; pass only lanes that were
    available (see the module docstring). ``weights`` optionally maps a lane name to one
    confidence in ``[0, 1]`` per id of that lane (e.g. from :data:`LANE_CONFIDENCE`); a lane
    without weights has confidence 1 everywhere, so ``weights=None`` is plain normalised RRF.

    The result is in first-seen order — the ids of the first lane, then ids seen only in later
    lanes, in their order — so passing the keyword lane first and sorting the result with a
    stable sort gives Waggle's tie order. An id repeated within a lane keeps its best (first)
    rank and that position's weight. No lanes → ``{}``. (:class:`Fusion` gives the same scores
    without building every detail.)
    """
    fusion = Fusion(lanes, k=k, weights=weights)
    return {frame_id: fusion.detail(frame_id) for frame_id in fusion.scores}

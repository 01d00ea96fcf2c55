"""Reciprocal Rank Fusion: 0-based ranks, k = 60, normalised over the available lanes.

The first half pins the unweighted contract (``weights=None``: plain normalised RRF), which the
confidence-weighted fusion reduces to; the second half pins the lane confidences and how
weighted fusion scores, normalises and orders.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waggle_store.errors import InvalidInputError
from waggle_store.search.fusion import (
    CONFIDENCE_POWER,
    LANE_CONFIDENCE,
    RRF_K,
    FusedScore,
    keyword_confidence,
    rrf_fuse,
    vector_confidence,
)


def test_k_is_sixty() -> None:
    assert RRF_K == 60


def test_top_of_both_lanes_scores_exactly_one() -> None:
    fused = rrf_fuse({"keyword": [7, 8], "vector": [7, 9]})
    assert fused[7].score == 1.0
    # Waggle's raw RRF sum (0.033333 here: 1/60 + 1/60) is kept for explain.
    assert fused[7].raw == pytest.approx(2 / 60)
    assert fused[7].raw == pytest.approx(0.033333, abs=1e-6)
    assert dict(fused[7].ranks) == {"keyword": 0, "vector": 0}


def test_top_of_one_of_two_lanes_scores_one_half() -> None:
    fused = rrf_fuse({"keyword": [1], "vector": [2]})
    assert fused[1].score == 0.5
    assert fused[2].score == 0.5
    assert fused[1].raw == pytest.approx(0.016667, abs=1e-6)
    assert dict(fused[1].ranks) == {"keyword": 0}
    assert dict(fused[2].ranks) == {"vector": 0}


def test_ranks_are_zero_based() -> None:
    fused = rrf_fuse({"keyword": [10, 11, 12]})
    assert fused[10].raw == pytest.approx(1 / 60)
    assert fused[11].raw == pytest.approx(1 / 61)
    assert fused[12].raw == pytest.approx(1 / 62)
    assert fused[11].score == pytest.approx(60 / 61)
    assert fused[12].ranks["keyword"] == 2


def test_sum_over_lanes_containing_the_id() -> None:
    fused = rrf_fuse({"keyword": [1, 2, 3], "vector": [3, 1]})
    assert fused[1].raw == pytest.approx(1 / 60 + 1 / 61)
    assert fused[3].raw == pytest.approx(1 / 62 + 1 / 60)
    assert fused[2].raw == pytest.approx(1 / 61)
    assert fused[1].score == pytest.approx((1 / 60 + 1 / 61) / (2 / 60))


def test_an_empty_lane_that_ran_still_counts() -> None:
    # The vector lane ran and found nothing: a keyword-top frame is top of one of two lanes.
    fused = rrf_fuse({"keyword": [5], "vector": []})
    assert fused[5].score == 0.5


def test_an_unavailable_lane_is_left_out_so_keyword_only_can_reach_one() -> None:
    fused = rrf_fuse({"keyword": [5, 6]})
    assert fused[5].score == 1.0


def test_no_lanes_or_no_ids_gives_nothing() -> None:
    assert rrf_fuse({}) == {}
    assert rrf_fuse({"keyword": [], "vector": []}) == {}


def test_tie_order_is_keyword_ids_then_vector_only_ids() -> None:
    fused = rrf_fuse({"keyword": [3, 1], "vector": [9, 1, 4, 3]})
    assert list(fused) == [3, 1, 9, 4]
    # 3 and 9 tie (each top of one lane): a stable sort by score keeps keyword's id first.
    tied = rrf_fuse({"keyword": [3], "vector": [9]})
    ordered = sorted(tied.values(), key=lambda f: f.score, reverse=True)
    assert [f.frame_id for f in ordered] == [3, 9]


def test_a_duplicate_id_in_one_lane_keeps_its_best_rank() -> None:
    fused = rrf_fuse({"keyword": [4, 5, 4]})
    assert fused[4].ranks["keyword"] == 0
    assert fused[4].raw == pytest.approx(1 / 60)


def test_custom_k_and_invalid_k() -> None:
    fused = rrf_fuse({"keyword": [1, 2]}, k=1)
    assert fused[2].raw == pytest.approx(1 / 2)
    assert fused[2].score == pytest.approx(0.5)
    with pytest.raises(InvalidInputError):
        rrf_fuse({"keyword": [1]}, k=0)


def test_fused_score_is_frozen() -> None:
    fused = rrf_fuse({"keyword": [1]})[1]
    assert isinstance(fused, FusedScore)
    with pytest.raises(AttributeError):
        fused.score = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        fused.ranks["keyword"] = 3  # type: ignore[index]


lane_ids = st.lists(st.integers(min_value=1, max_value=50), max_size=30)


@given(st.dictionaries(st.sampled_from(["keyword", "vector", "chunk"]), lane_ids, max_size=3))
def test_scores_lie_in_unit_interval_and_match_the_raw_sum(lanes: dict[str, list[int]]) -> None:
    fused = rrf_fuse(lanes)
    expected_ids = {i for ids in lanes.values() for i in ids}
    assert set(fused) == expected_ids
    for frame_id, result in fused.items():
        assert result.frame_id == frame_id
        assert 0.0 < result.score <= 1.0
        assert result.score == pytest.approx(result.raw / (len(lanes) / RRF_K))
        assert set(result.weights) == set(result.ranks)
        assert all(w == 1.0 for w in result.weights.values())
        assert sum(result.contributions.values()) == pytest.approx(result.score)
        for lane, rank in result.ranks.items():
            assert lanes[lane].index(frame_id) == rank


# -- confidence-weighted fusion ------------------------------------------------------------------


def test_confidence_is_the_square_of_the_strength() -> None:
    assert CONFIDENCE_POWER == 2
    assert set(LANE_CONFIDENCE) == {"keyword", "vector"}


def test_keyword_confidence_is_relative_to_the_best_hit() -> None:
    # FTS5 bm25 is negative (more negative is better); ts_rank_cd is positive: magnitudes count.
    assert keyword_confidence([-8.0, -4.0, -2.0]) == [1.0, 0.25, 0.0625]
    assert keyword_confidence([0.4, 0.2]) == [1.0, 0.25]
    assert keyword_confidence([-8.0, -4.0], power=1) == [1.0, 0.5]
    # The LIKE fallback scores every hit 0.0: no evidence beyond the order, so nothing is damped.
    assert keyword_confidence([0.0, 0.0, 0.0]) == [1.0, 1.0, 1.0]
    assert keyword_confidence([]) == []
    with pytest.raises(InvalidInputError):
        keyword_confidence([float("nan")])


def test_vector_confidence_stands_out_from_the_lanes_median() -> None:
    # similarities 0.9, 0.6, 0.5, 0.5, 0.4 and the orthogonal pseudo-candidate 0.0: median 0.5.
    distances = [0.1, 0.4, 0.5, 0.5, 0.6]
    conf = vector_confidence(distances)
    assert conf[0] == pytest.approx(((0.9 - 0.5) / 0.5) ** 2)
    assert conf[1] == pytest.approx(((0.6 - 0.5) / 0.5) ** 2)
    assert conf[2:] == [0.0, 0.0, 0.0]  # at or below the background: no vector evidence
    assert vector_confidence(distances, power=1)[0] == pytest.approx(0.8)
    # An exact match (distance 0) is full confidence whatever the background.
    assert vector_confidence([0.0, 0.5, 0.5])[0] == 1.0
    assert vector_confidence([]) == []


def test_vector_confidence_of_a_lone_hit_uses_the_orthogonal_background() -> None:
    # One hit at similarity 0.6: background median(0.6, 0.0) = 0.3, strength 0.3 / 0.7.
    assert vector_confidence([0.4]) == [pytest.approx((0.3 / 0.7) ** 2)]
    assert vector_confidence([0.0, 0.0]) == [1.0, 1.0]  # all exact: nothing stands out


def test_vector_confidence_is_in_the_unit_interval_and_follows_the_order() -> None:
    distances = [0.05, 0.2, 0.2, 0.35, 0.7, 0.99]
    conf = vector_confidence(distances)
    assert all(0.0 <= c <= 1.0 for c in conf)
    assert conf == sorted(conf, reverse=True)


def test_top_of_every_lane_still_scores_exactly_one_with_weights() -> None:
    lanes = {"keyword": [7, 8, 9], "vector": [7, 9, 8]}
    weights = {"keyword": keyword_confidence([-6.0, -3.0, -1.0]),
               "vector": vector_confidence([0.3, 0.5, 0.6])}
    fused = rrf_fuse(lanes, weights=weights)
    assert fused[7].score == 1.0
    assert dict(fused[7].weights) == {"keyword": 1.0, "vector": weights["vector"][0]}
    assert fused[7].raw == pytest.approx(2 / 60)  # Waggle's raw sum stays unweighted
    for f in fused.values():
        assert 0.0 <= f.score <= 1.0
        assert sum(f.contributions.values()) == pytest.approx(f.score)


def test_one_strong_hit_beats_two_middling_ones() -> None:
    # Frame 1 is keyword's clear best match and vector did not find it; frame 2 is middling in
    # both lanes. Plain RRF puts 2 first (in both lanes); confidence weighting puts 1 first.
    lanes = {"keyword": [1, 2, 3, 4], "vector": [5, 2, 6, 7]}
    plain = rrf_fuse(lanes)
    assert plain[2].score > plain[1].score
    weights = {"keyword": keyword_confidence([-10.0, -5.0, -4.0, -3.0]),
               "vector": vector_confidence([0.45, 0.5, 0.55, 0.6])}
    weighted = rrf_fuse(lanes, weights=weights)
    assert weighted[1].score > weighted[2].score


def test_a_weak_lane_counts_little_in_the_normalisation() -> None:
    # Vector's best hit barely stands out: a keyword top it did not find still scores near 1.
    weights = {"keyword": [1.0, 0.5], "vector": [0.1, 0.05]}
    fused = rrf_fuse({"keyword": [1, 2], "vector": [3, 4]}, weights=weights)
    assert fused[1].score == pytest.approx(1 / 1.1)
    assert fused[3].score == pytest.approx(0.1 / 1.1)
    # A lane that ran and found nothing counts fully, as without weights.
    assert rrf_fuse({"keyword": [1], "vector": []}, weights={"keyword": [1.0]})[1].score == 0.5


def test_weights_of_one_are_plain_rrf_and_zero_weights_score_zero() -> None:
    lanes = {"keyword": [1, 2, 3], "vector": [3, 1]}
    plain = rrf_fuse(lanes)
    ones = rrf_fuse(lanes, weights={"keyword": [1.0] * 3, "vector": [1.0] * 2})
    assert {i: f.score for i, f in plain.items()} == {i: f.score for i, f in ones.items()}
    zero = rrf_fuse({"keyword": [1], "vector": [2]}, weights={"vector": [0.0]})
    assert zero[1].score == 1.0  # the vector lane's best term is 0: it adds nothing anywhere
    assert zero[2].score == 0.0
    assert dict(zero[2].contributions) == {"vector": 0.0}
    assert rrf_fuse({"vector": [1, 2]}, weights={"vector": [0.0, 0.0]})[1].score == 0.0


def test_a_duplicate_keeps_the_weight_of_its_first_position() -> None:
    fused = rrf_fuse({"keyword": [4, 5, 4]}, weights={"keyword": [0.5, 1.0, 0.9]})
    assert fused[4].weights["keyword"] == 0.5
    assert fused[4].ranks["keyword"] == 0


def test_invalid_weights_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="weights for"):
        rrf_fuse({"keyword": [1, 2]}, weights={"keyword": [1.0]})
    with pytest.raises(InvalidInputError, match="not in"):
        rrf_fuse({"keyword": [1]}, weights={"keyword": [1.5]})
    with pytest.raises(InvalidInputError, match="not in"):
        rrf_fuse({"keyword": [1]}, weights={"keyword": [float("nan")]})
    with pytest.raises(InvalidInputError, match="not passed"):
        rrf_fuse({"keyword": [1]}, weights={"vector": [1.0]})


weighted_lane = st.lists(
    st.tuples(st.integers(min_value=1, max_value=50), st.floats(min_value=0.0, max_value=1.0)),
    max_size=30,
)


@given(st.dictionaries(st.sampled_from(["keyword", "vector", "chunk"]), weighted_lane, max_size=3))
def test_weighted_scores_lie_in_unit_interval_and_sum_their_contributions(
    lanes: dict[str, list[tuple[int, float]]],
) -> None:
    fused = rrf_fuse(
        {lane: [i for i, _ in hits] for lane, hits in lanes.items()},
        weights={lane: [w for _, w in hits] for lane, hits in lanes.items()},
    )
    for result in fused.values():
        assert 0.0 <= result.score <= 1.0
        assert sum(result.contributions.values()) == pytest.approx(result.score)
        for lane, rank in result.ranks.items():
            assert lanes[lane][rank][0] == result.frame_id
            assert result.weights[lane] == lanes[lane][rank][1]


def _reference_scores(lanes: dict[str, list[tuple[int, float]]], k: int) -> dict[int, float]:
    """The documented score, computed the plain way: per frame the sum of its lanes' terms
    (its first position in each lane, lanes in the order given) over the sum of every lane's
    best term (1.0 for an empty lane); exactly 1.0 for a frame at the top of every lane."""
    terms: dict[int, dict[str, float]] = {}
    best: dict[str, float] = {}
    for lane, hits in lanes.items():
        best[lane] = 0.0 if hits else 1.0
        for rank, (frame_id, weight) in enumerate(hits):
            if lane not in terms.setdefault(frame_id, {}):
                terms[frame_id][lane] = weight * (k / (k + rank))
                best[lane] = max(best[lane], terms[frame_id][lane])
    total = sum(best.values())
    scores = {}
    for frame_id, of_frame in terms.items():
        if total <= 0:
            scores[frame_id] = 0.0
        elif len(of_frame) == len(best) and all(of_frame[lane] == best[lane] for lane in best):
            scores[frame_id] = 1.0
        else:
            summed = 0.0
            for term in of_frame.values():
                summed += term
            scores[frame_id] = min(1.0, summed / total)
    return scores


# Few distinct weights and ids: ties at a lane's top, and frames in several lanes, are common.
tied_lane = st.lists(st.tuples(st.integers(min_value=1, max_value=8),
                               st.sampled_from([0.0, 0.25, 0.5, 1.0])), max_size=12)


@given(st.dictionaries(st.sampled_from(["keyword", "vector", "chunk"]), tied_lane, max_size=3),
       st.sampled_from([1, 3, RRF_K]))
def test_scores_are_the_documented_sum_exactly(lanes: dict[str, list[tuple[int, float]]],
                                               k: int) -> None:
    """Float for float and in first-seen order, as the plain computation gives them (the
    fusion sums as it goes and finds the frames at every lane's top through sets)."""
    fused = rrf_fuse({lane: [i for i, _ in hits] for lane, hits in lanes.items()}, k=k,
                     weights={lane: [w for _, w in hits] for lane, hits in lanes.items()})
    expected = _reference_scores(lanes, k)
    assert list(fused) == list(expected)
    assert [result.score for result in fused.values()] == list(expected.values())


def test_vector_lane_distances_tie_below_float32_noise() -> None:
    """The same sentence said on three days is equally near the query in exact arithmetic; the
    engines' float32 sums differ by ~1e-8. Quantised, the hits tie and go by frame id, whatever
    order and noise the backend returned them in; hits sharing nothing with the query drop."""
    from waggle_store.dialects.base import LaneHit
    from waggle_store.search.engine import settled

    noisy = [LaneHit(44, 0.2672612528, ()), LaneHit(4, 0.2672612369, ()),
             LaneHit(24, 0.2672612448, ()), LaneHit(7, 0.1, ()), LaneHit(9, 1.0, ())]
    hits = settled(noisy)
    assert [h.frame_id for h in hits] == [7, 4, 24, 44]
    assert hits[1].score == hits[2].score == hits[3].score
    # ...and so the lane's confidence treats them alike (the median test no longer splits them).
    weights = vector_confidence([h.score for h in hits])
    assert weights[1] == weights[2] == weights[3]


def test_settled_keeps_every_lane_hit_field() -> None:
    """``settled`` copies a LaneHit field by field (``dataclasses.replace`` is 4x slower): a
    field added to LaneHit must be added there too, or it silently goes missing."""
    import dataclasses

    from waggle_store.dialects.base import LaneHit
    from waggle_store.search.engine import settled

    assert [f.name for f in dataclasses.fields(LaneHit)] == ["frame_id", "score", "frame",
                                                              "mentions"], "update settled()"
    hit = LaneHit(7, 0.1234567, ("frame",), mentions=True)
    (kept,) = settled([hit])
    assert kept == dataclasses.replace(hit, score=0.12346)

"""Reciprocal Rank Fusion: 0-based ranks, k = 60, normalised over the available lanes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waggle_store.errors import InvalidInputError
from waggle_store.search.fusion import RRF_K, FusedScore, rrf_fuse


def test_k_is_sixty() -> None:
    assert RRF_K == 60


def test_top_of_both_lanes_scores_exactly_one() -> None:
    fused = rrf_fuse({"keyword": [7, 8], "vector": [7, 9]})
    assert fused[7].score == 1.0
    # The seed's raw value (reference §7: 0.033333) is kept for explain.
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
        for lane, rank in result.ranks.items():
            assert lanes[lane].index(frame_id) == rank

"""Scoring: Waggle's scoring tests and the scoring parts of its search tests, ported.

Waggle's temporal tests built timestamps relative to "now"; here ``now`` is a fixed UTC instant
so the expectations are exact and never depend on the machine's clock or timezone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from waggle_store.errors import InvalidInputError
from waggle_store.search.scoring import (
    HALF_LIFE_DAYS,
    PROFILES,
    RECENCY_BOOST_DAYS,
    ScoringProfile,
    compute_relevance,
    contextual_score,
    get_profile,
    importance_score,
    popularity_score,
    relevance_scorer,
    temporal_score,
)

NOW = datetime(2026, 5, 13, 12, 0, tzinfo=UTC)


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


# --- constants and profiles ---------------------------------------------------------------------


def test_constants_are_waggles() -> None:
    assert RECENCY_BOOST_DAYS == 7
    assert HALF_LIFE_DAYS == 30


@pytest.mark.parametrize(
    ("name", "weights"),
    [
        ("balanced", (0.4, 0.2, 0.2, 0.2)),
        ("recent", (0.6, 0.1, 0.2, 0.1)),
        ("important", (0.1, 0.1, 0.2, 0.6)),
        ("connected", (0.1, 0.1, 0.6, 0.2)),
    ],
)
def test_profile_weights_are_the_seeds(name: str, weights: tuple[float, ...]) -> None:
    profile = get_profile(name)
    assert profile.name == name
    assert (profile.temporal, profile.popularity, profile.contextual, profile.importance) == weights


def test_exactly_four_profiles_each_summing_to_one() -> None:
    assert set(PROFILES) == {"balanced", "recent", "important", "connected"}
    for profile in PROFILES.values():
        total = profile.temporal + profile.popularity + profile.contextual + profile.importance
        assert round(total, 5) == 1.0


def test_balanced_weighs_temporal_at_least_as_much_as_anything_else() -> None:
    balanced = get_profile("balanced")
    assert balanced.temporal == 0.4
    assert balanced.temporal >= max(balanced.popularity, balanced.contextual, balanced.importance)


def test_unknown_profile_is_invalid_input_listing_the_valid_ones() -> None:
    with pytest.raises(InvalidInputError) as excinfo:
        get_profile("fastest")
    message = str(excinfo.value)
    assert "fastest" in message
    for name in ("balanced", "recent", "important", "connected"):
        assert name in message


def test_unknown_profile_via_compute_relevance_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError):
        compute_relevance(
            last_accessed=NOW,
            access_count=0,
            importance="normal",
            graph_distance=None,
            profile="Balanced",  # case matters, as in Waggle's map lookup
            now=NOW,
        )


# --- temporal -----------------------------------------------------------------------------------


def test_temporal_now_and_within_boost_window_is_one() -> None:
    assert temporal_score(NOW, NOW) == 1.0
    assert temporal_score(days_ago(3), NOW) == 1.0
    assert temporal_score(days_ago(5), NOW) == 1.0
    assert temporal_score(days_ago(7), NOW) == 1.0


def test_temporal_decay_counts_from_day_zero() -> None:
    # As in Waggle: the boost window ends at day 7, but the decay is not shifted by it.
    assert temporal_score(days_ago(8), NOW) == pytest.approx(0.5 ** (8 / 30))
    assert temporal_score(days_ago(8), NOW) == pytest.approx(0.831, abs=1e-3)


def test_temporal_thirty_days_is_one_half() -> None:
    score = temporal_score(days_ago(30), NOW)
    assert 0.48 < score < 0.52
    assert score == pytest.approx(0.5)


def test_temporal_thirty_seven_days() -> None:
    score = temporal_score(days_ago(37), NOW)
    assert 0.3 < score < 0.6
    assert score == pytest.approx(0.4253, abs=1e-4)


def test_temporal_now_beats_ninety_days_and_two_years_is_negligible() -> None:
    assert temporal_score(NOW, NOW) > temporal_score(days_ago(90), NOW)
    assert temporal_score(days_ago(730), NOW) < 0.01


def test_temporal_future_timestamp_counts_as_now() -> None:
    assert temporal_score(NOW + timedelta(hours=2), NOW) == 1.0


def test_temporal_compares_instants_not_wall_clocks() -> None:
    # 30 days ago, written in UTC+02:00: the same instant, so the same score.
    plus_two = timezone(timedelta(hours=2))
    assert temporal_score(days_ago(30).astimezone(plus_two), NOW) == pytest.approx(0.5)
    assert temporal_score(days_ago(30), NOW.astimezone(plus_two)) == pytest.approx(0.5)


def test_temporal_naive_datetimes_are_utc() -> None:
    naive = days_ago(30).replace(tzinfo=None)
    assert temporal_score(naive, NOW) == pytest.approx(0.5)
    assert temporal_score(naive, NOW.replace(tzinfo=None)) == pytest.approx(0.5)


# --- popularity ---------------------------------------------------------------------------------


def test_popularity_values() -> None:
    assert popularity_score(0) == 1.0
    assert popularity_score(9) == pytest.approx(1.1)
    assert popularity_score(99) == pytest.approx(1.2)
    assert popularity_score(1000) == pytest.approx(1.3, abs=1e-4)


def test_popularity_grows_slowly() -> None:
    assert popularity_score(10) > 1.0
    assert popularity_score(1000) > popularity_score(10)
    assert popularity_score(1000) / popularity_score(10) < 2


def test_popularity_negative_count_is_zero() -> None:
    assert popularity_score(-5) == 1.0


# --- contextual ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("distance", "expected"),
    [(0, 1.0), (1, 0.7), (2, 0.4), (3, 0.2), (4, 0.0), (99, 0.0), (-1, 0.0), (None, 0.0)],
)
def test_contextual_by_graph_distance(distance: int | None, expected: float) -> None:
    assert contextual_score(distance) == expected


# --- importance ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("importance", "expected"),
    [
        ("critical", 2.0),
        ("important", 1.5),
        ("normal", 1.0),
        ("temporary", 0.7),
        ("deprecated", 0.3),
    ],
)
def test_importance_multipliers(importance: str, expected: float) -> None:
    assert importance_score(importance) == expected


def test_unknown_importance_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="urgent"):
        importance_score("urgent")


# --- compute_relevance --------------------------------------------------------------------------


def relevance(
    *,
    last_accessed: datetime = NOW,
    access_count: int = 0,
    importance: str = "normal",
    graph_distance: int | None = None,
    profile: str | ScoringProfile = "balanced",
) -> float:
    score, _ = compute_relevance(
        last_accessed=last_accessed,
        access_count=access_count,
        importance=importance,
        graph_distance=graph_distance,
        profile=profile,
        now=NOW,
    )
    return score


def test_balanced_now_unaccessed_normal_is_point_eight() -> None:
    assert relevance() == pytest.approx(0.8)


def test_important_frame_with_accesses_is_positive() -> None:
    assert relevance(importance="important", access_count=5) > 0


def test_important_profile_favours_a_critical_frame() -> None:
    assert relevance(importance="critical", profile="important") > relevance(
        importance="critical", profile="balanced"
    )


def test_connected_profile_favours_an_old_frame_at_distance_zero() -> None:
    old = days_ago(365)
    assert relevance(last_accessed=old, graph_distance=0, profile="connected") > relevance(
        last_accessed=old, graph_distance=0, profile="balanced"
    )


def test_relevance_parts_explain_the_score() -> None:
    score, parts = compute_relevance(
        last_accessed=days_ago(30),
        access_count=9,
        importance="critical",
        graph_distance=1,
        profile="recent",
        now=NOW,
    )
    assert parts == pytest.approx(
        {
            "temporal": 0.5,
            "popularity": 1.1,
            "contextual": 0.7,
            "importance": 2.0,
            "temporal_weight": 0.6,
            "popularity_weight": 0.1,
            "contextual_weight": 0.2,
            "importance_weight": 0.1,
        }
    )
    assert score == pytest.approx(0.5 * 0.6 + 1.1 * 0.1 + 0.7 * 0.2 + 2.0 * 0.1)


def test_compute_relevance_accepts_a_profile_object() -> None:
    custom = ScoringProfile("only-importance", 0.0, 0.0, 0.0, 1.0)
    assert relevance(importance="deprecated", profile=custom) == pytest.approx(0.3)


def test_relevance_scorer_gives_compute_relevances_exact_float() -> None:
    """The search ranks every candidate with relevance_scorer and explains the page with
    compute_relevance: both must give the same number, bit for bit."""
    now = NOW
    near_boost = [now - timedelta(days=RECENCY_BOOST_DAYS) + timedelta(microseconds=us)
                  for us in (-1, 0, 1)]  # the scorer's shortcut decides these without arithmetic
    berlin = timezone(timedelta(hours=2))
    whens = [now - timedelta(days=days) for days in (-1, 0, 3.5, 8, 30, 400)] + near_boost + [
        (now - timedelta(days=3)).astimezone(berlin), (now - timedelta(days=9)).astimezone(berlin),
        (now - timedelta(days=2)).replace(tzinfo=None)]  # aware non-UTC and naive times too
    cases = [
        (last, count, importance, distance)
        for last in whens
        for count in (0, 7, 10_000)
        for importance in ("critical", "normal", "deprecated")
        for distance in (None, 0, 2, 5)
    ]
    for name in PROFILES:
        score = relevance_scorer(name, now)
        for last, count, importance, distance in cases:
            expected, parts = compute_relevance(last_accessed=last, access_count=count,
                                                importance=importance, graph_distance=distance,
                                                profile=name, now=now)
            assert score(last, count, importance, distance) == expected
            assert score.parts(last, count, importance, distance) == parts
    # 7 days and 1 µs ago decays; exactly 7 days ago and later is within the boost.
    assert temporal_score(near_boost[0], now) < 1.0
    assert [temporal_score(w, now) for w in near_boost[1:]] == [1.0, 1.0]

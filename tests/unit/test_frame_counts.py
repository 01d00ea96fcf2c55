"""The keyword lane's cached frame counts (idf's N): when one is reused, due for a recount, dropped.
(The counts as searches use them, on both dialects: tests/integration/test_search_lanes.py.)"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from waggle_store.dialects import keyword_rank
from waggle_store.dialects.keyword_rank import FRAME_COUNT_EXACT_BELOW, FRAME_COUNT_TTL, FrameCounts

MINDS = (1, 2)
LARGE = FRAME_COUNT_EXACT_BELOW + 10


class Clock:
    """``time.monotonic`` of keyword_rank, moved by hand."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        # The module's own name only: the real time.monotonic stays everyone else's.
        monkeypatch.setattr(keyword_rank, "time", SimpleNamespace(monotonic=lambda: self.now))


def test_a_small_count_is_never_kept_and_a_large_one_is_kept_for_its_ttl(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(monkeypatch)
    counts = FrameCounts()
    counts.counted(MINDS, FRAME_COUNT_EXACT_BELOW - 1)
    assert counts.reusable(MINDS, expired=True) is None
    counts.counted(MINDS, LARGE)
    assert counts.reusable(MINDS) == LARGE
    assert counts.reusable((1,)) is None  # another set of minds
    clock.now += FRAME_COUNT_TTL
    assert counts.reusable(MINDS) is None  # expired ...
    assert counts.reusable(MINDS, expired=True) == LARGE  # ... unless an expired one will do
    params: dict[str, object] = {}
    assert counts.total_sql(MINDS, "f.mind_id IN (1, 2)", params, "max") == (
        f"(SELECT count(*) FROM {keyword_rank.T_FRAMES} f WHERE f.mind_id IN (1, 2))", True)
    assert counts.total_sql(MINDS, "-", params, "max", expired=True) == ("max(:n, count(*))",
                                                                         False)
    assert params == {"n": LARGE}
    counts.counted(MINDS, 3)  # the minds shrank below the threshold: count in every statement
    assert counts.reusable(MINDS, expired=True) is None


def test_an_expired_count_is_due_once_until_recounted(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    counts = FrameCounts()
    assert not counts.due(MINDS)  # never counted: the statement counts
    counts.counted(MINDS, LARGE)
    assert not counts.due(MINDS)  # fresh
    clock.now += FRAME_COUNT_TTL
    assert counts.due(MINDS)  # claimed by this caller ...
    assert not counts.due(MINDS)  # ... so no other search recounts it meanwhile
    clock.now += 1
    counts.counted(MINDS, LARGE + 5)  # the recount
    assert counts.reusable(MINDS) == LARGE + 5
    assert not counts.due(MINDS)
    clock.now += FRAME_COUNT_TTL
    assert counts.due(MINDS)
    counts.forget(MINDS)  # the recount failed
    assert counts.reusable(MINDS, expired=True) is None
    assert not counts.due(MINDS)


def test_a_recount_claimed_long_ago_or_by_another_process_is_claimed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A recount that never ended (a hung connection) must not keep the count stale for good,
    nor one claimed by the parent of a forked child (whose thread did not come along)."""
    clock = Clock(monkeypatch)
    counts = FrameCounts()
    counts.counted(MINDS, LARGE)
    clock.now += FRAME_COUNT_TTL
    assert counts.due(MINDS)
    clock.now += FRAME_COUNT_TTL - 1
    assert not counts.due(MINDS)
    clock.now += 1
    assert counts.due(MINDS)  # the claim is as old as a TTL: claimed again
    counts._recounting[MINDS] = (os.getpid() + 1, clock.now)  # claimed in another process
    assert counts.due(MINDS)
    assert counts._recounting[MINDS][0] == os.getpid()

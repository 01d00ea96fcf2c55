"""The keyword lane's cached counts (idf's N, common terms' df): when one is reused, when not.
(The counts as searches use them, on both dialects: tests/integration/test_search_lanes.py.)"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from waggle_store.dialects import keyword_rank
from waggle_store.dialects.keyword_rank import (
    FRAME_COUNT_EXACT_BELOW,
    FRAME_COUNT_TTL,
    FrameCounts,
    TermCounts,
)

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
    assert counts.reusable(MINDS) is None
    counts.counted(MINDS, LARGE)
    assert counts.reusable(MINDS) == LARGE
    assert counts.reusable((1,)) is None  # another set of minds
    clock.now += FRAME_COUNT_TTL - 1
    params: dict[str, object] = {}
    assert counts.total_sql(MINDS, "-", params, "max") == ("max(:n, count(*))", False)
    assert params == {"n": LARGE}
    clock.now += 1
    assert counts.reusable(MINDS) is None  # expired: the statement counts ...
    params = {}
    assert counts.total_sql(MINDS, "f.mind_id IN (1, 2)", params, "max") == (
        f"(SELECT count(*) FROM {keyword_rank.T_FRAMES} f WHERE f.mind_id IN (1, 2))", True)
    assert params == {}
    counts.counted(MINDS, LARGE + 5)  # ... and its count is kept for the next TTL
    clock.now += FRAME_COUNT_TTL - 1
    assert counts.reusable(MINDS) == LARGE + 5
    counts.counted(MINDS, 3)  # the minds shrank below the threshold: count in every statement
    assert counts.reusable(MINDS) is None


def test_a_common_terms_df_is_used_while_fresh_and_replaced_by_the_next_full_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(monkeypatch)
    counts = TermCounts()
    n = 20_000
    # "kestrel" common (1/4 of the frames), "harbour" not (1/100), "lantern" taken from here.
    counts.counted(MINDS, ["kestrel", "harbour", "lantern"], [5000, 200, 9000], {2: 9000}, n)
    assert counts.common(MINDS, ["harbour", "kestrel", "lantern"]) == {1: 5000}
    assert counts.common((1,), ["kestrel"]) == {}  # another set of minds
    clock.now += FRAME_COUNT_TTL
    assert counts.common(MINDS, ["kestrel"]) == {}  # expired: the statement counts it in full
    counts.counted(MINDS, ["kestrel"], [5100], {}, n + 100)
    assert counts.common(MINDS, ["kestrel"]) == {0: 5100}
    counts.counted(MINDS, ["kestrel"], [900], {}, n)  # no longer common: forgotten
    assert counts.common(MINDS, ["kestrel"]) == {}

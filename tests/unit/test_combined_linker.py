"""MemoryLinker over a fake mind, thresholding the normalised score."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.linker import CANDIDATES, MemoryLink, MemoryLinker
from waggle_store.records import Frame, SearchResult

NOW = datetime(2026, 5, 13, 12, 0, tzinfo=UTC)


def hit(frame_id: int, content: str, final: float, *, rrf: float = 1.0) -> SearchResult:
    frame = Frame(
        frame_id, "I", "gop-1", frame_id, None, content, "normal", "user_stated", 0, NOW, NOW
    )
    return SearchResult(frame, rrf, final / rrf if rrf else 0.0, final, {})


@dataclass
class FakeMind:
    results: list[SearchResult]
    calls: list[tuple[str, int]] = field(default_factory=list)

    def search(self, query: str, *, limit: int) -> list[SearchResult]:
        self.calls.append((query, limit))
        return self.results[:limit]


def test_default_threshold_keeps_both_and_searches_a_wide_page() -> None:
    mind = FakeMind([hit(1, "TS types", 0.4, rrf=0.45), hit(2, "TS generics", 0.2, rrf=0.25)])
    links = MemoryLinker(mind).find_related("TypeScript types")
    # A wide page: links are chosen by match score, not by the backend's narrow top 5.
    assert mind.calls == [("TypeScript types", CANDIDATES)]
    assert links == [
        MemoryLink(frame_id=1, content="TS types", score=0.45, final_score=0.4),
        MemoryLink(frame_id=2, content="TS generics", score=0.25, final_score=0.2),
    ]


def test_threshold_drops_weak_results() -> None:
    mind = FakeMind([hit(1, "a", 0.05, rrf=0.08), hit(2, "b", 0.02, rrf=0.03)])
    assert MemoryLinker(mind, threshold=0.3).find_related("q") == []


def test_threshold_reads_rrf_score_not_final_score() -> None:
    # A strong match in an old, unimportant frame: final_score is low, rrf_score is high.
    # A critical frame ranked low: final_score is above 1, rrf_score small.
    old_match = hit(1, "old but on topic", 0.05, rrf=0.9)
    critical_far = hit(2, "critical, off topic", 1.2, rrf=0.6)
    mind = FakeMind([critical_far, old_match])
    assert [link.frame_id for link in MemoryLinker(mind, threshold=0.7).find_related("q")] == [1]


def test_threshold_is_inclusive() -> None:
    mind = FakeMind([hit(1, "a", 0.1, rrf=0.1)])
    assert len(MemoryLinker(mind).find_related("q")) == 1


def test_self_is_excluded_and_one_more_is_fetched() -> None:
    mind = FakeMind([hit(i, f"frame {i}", 0.8, rrf=0.9) for i in range(1, 10)])
    links = MemoryLinker(mind).find_related("q", limit=3, exclude_frame_id=1)
    assert mind.calls == [("q", CANDIDATES + 1)]
    assert [link.frame_id for link in links] == [2, 3, 4]


def test_limit_is_respected() -> None:
    mind = FakeMind([hit(i, f"frame {i}", 0.8, rrf=0.9) for i in range(1, 10)])
    assert len(MemoryLinker(mind).find_related("q", limit=2)) == 2


def test_nan_scores_never_link() -> None:
    mind = FakeMind([hit(1, "a", float("nan"), rrf=float("nan"))])
    assert MemoryLinker(mind, threshold=0.0).find_related("q") == []


def test_blank_content_links_nothing_without_searching() -> None:
    mind = FakeMind([hit(1, "a", 0.9)])
    assert MemoryLinker(mind).find_related("   ") == []
    assert mind.calls == []


@pytest.mark.parametrize("threshold", [-0.1, 1.5, float("nan"), float("inf"), True, "0.1"])
def test_bad_threshold_is_rejected(threshold: Any) -> None:
    with pytest.raises(InvalidInputError, match="threshold"):
        MemoryLinker(FakeMind([]), threshold=threshold)


@pytest.mark.parametrize("limit", [0, -3, False, 1.0])
def test_bad_limit_is_rejected(limit: Any) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        MemoryLinker(FakeMind([])).find_related("q", limit=limit)


def test_match_score_decides_and_ties_go_to_the_older_frame() -> None:
    """The match score (same on every backend) is read when present, not rrf_score; equal
    scores are ordered by frame id, not by the backend's ranking."""
    results = [
        dataclasses.replace(hit(3, "c", 0.9, rrf=0.9), match_score=0.05),  # strong rrf, no match
        dataclasses.replace(hit(2, "b", 0.1, rrf=0.1), match_score=0.4),
        dataclasses.replace(hit(1, "a", 0.1, rrf=0.1), match_score=0.4),
    ]
    links = MemoryLinker(FakeMind(results)).find_related("q")
    assert [(link.frame_id, link.score) for link in links] == [(1, 0.4), (2, 0.4)]

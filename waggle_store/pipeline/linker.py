"""MemoryLinker: which existing frames a new memory is related to (reference §15).

The seed kept search results whose raw ``finalScore`` reached 0.1, a score that could never
exceed about 0.054, so it never linked anything (§23.8). Here the threshold is applied to the
*normalised* fusion score, ``SearchResult.rrf_score``, which lies in [0, 1] and is 1.0 for a frame
at the top of every search lane. That score measures how well a frame matches the content; the
relevance factors folded into ``final_score`` (recency, popularity, importance) say how useful a
frame is right now, which is not what "related" means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from waggle_store.errors import InvalidInputError
from waggle_store.records import SearchResult

DEFAULT_THRESHOLD = 0.1
DEFAULT_LIMIT = 5


class LinkSearch(Protocol):
    """Anything that searches one mind: a ``Mind``, or a fake in tests."""

    def search(self, query: str, *, limit: int) -> Sequence[SearchResult]: ...


@dataclass(frozen=True)
class MemoryLink:
    """A related frame: ``score`` is the normalised rrf_score the threshold was applied to."""

    frame_id: int
    content: str
    score: float
    final_score: float


class MemoryLinker:
    """Finds frames related to a piece of content by searching the mind with it."""

    def __init__(self, mind: LinkSearch, *, threshold: float = DEFAULT_THRESHOLD) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise InvalidInputError(f"threshold must be a number in [0, 1], got {threshold!r}")
        if not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
            raise InvalidInputError(
                f"threshold must be in [0, 1] (it is compared with the normalised rrf_score), "
                f"got {threshold!r}"
            )
        self._mind = mind
        self.threshold = float(threshold)

    def find_related(
        self,
        content: str,
        *,
        limit: int = DEFAULT_LIMIT,
        exclude_frame_id: int | None = None,
    ) -> list[MemoryLink]:
        """Up to ``limit`` frames whose rrf_score reaches the threshold, in the mind's order.

        ``exclude_frame_id`` is the frame the content was just stored as: it matches itself best,
        so one extra result is fetched to keep ``limit`` meaningful once it is dropped.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
        if not content.strip():
            return []
        fetch = limit + 1 if exclude_frame_id is not None else limit
        links: list[MemoryLink] = []
        for result in self._mind.search(content, limit=fetch):
            if result.frame.id == exclude_frame_id:
                continue
            # A NaN score fails this comparison too, so a broken score never links.
            if not result.rrf_score >= self.threshold:
                continue
            links.append(
                MemoryLink(
                    frame_id=result.frame.id,
                    content=result.frame.content,
                    score=result.rrf_score,
                    final_score=result.final_score,
                )
            )
            if len(links) == limit:
                break
        return links


__all__ = ["DEFAULT_LIMIT", "DEFAULT_THRESHOLD", "LinkSearch", "MemoryLink", "MemoryLinker"]

"""MemoryLinker: which existing frames a new memory is related to.

A threshold on a raw fused score links nothing (Waggle's 0.1 on a score that never exceeds
about 0.054). Here the threshold is applied to
``SearchResult.match_score`` (:mod:`waggle_store.search.match`), in [0, 1]: the share of the
content's terms a frame contains and how clearly the vector lane found it. That score measures
how well a frame matches the content; the relevance factors folded into ``final_score``
(recency, popularity, importance) say how useful a frame is right now, which is not what
"related" means.

Why not the fused ``rrf_score``: it weighs keyword hits by the backend's own raw scores and
ranks, so the same data would link differently on SQLite and Postgres. For the same reason the
linker reads a wide page (:data:`CANDIDATES`), not just the top ``limit``: which frames make a
narrow page depends on the backend's ranking; the links are the
best ``limit`` by match score among all candidates that reach the threshold. A result without a
match score (a fake mind in tests) is judged by its ``rrf_score``.
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
#: The page the linker reads (at least): links are chosen by match score within it.
CANDIDATES = 25


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
        """Up to ``limit`` frames whose match score reaches the threshold, best first (ties:
        oldest frame first).

        ``exclude_frame_id`` is the frame the content was just stored as: it matches itself best,
        so one extra result is fetched to keep ``limit`` meaningful once it is dropped.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
        if not content.strip():
            return []
        fetch = max(limit, CANDIDATES) + (1 if exclude_frame_id is not None else 0)
        links: list[MemoryLink] = []
        for result in self._mind.search(content, limit=fetch):
            if result.frame.id == exclude_frame_id:
                continue
            score = result.rrf_score if result.match_score is None else result.match_score
            # A NaN score fails this comparison too, so a broken score never links.
            if not score >= self.threshold:
                continue
            links.append(MemoryLink(frame_id=result.frame.id, content=result.frame.content,
                                    score=score, final_score=result.final_score))
        # Ties by frame id (the order frames were written), not by the backend's ranking.
        links.sort(key=lambda link: (-link.score, link.frame_id))
        return links[:limit]


__all__ = ["CANDIDATES", "DEFAULT_LIMIT", "DEFAULT_THRESHOLD", "LinkSearch", "MemoryLink",
           "MemoryLinker"]

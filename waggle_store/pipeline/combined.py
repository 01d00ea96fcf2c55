"""CombinedRetrieval: workspace memory + personal memory + an optional external search.

The external source is an enterprise document search (such as KVARK) or anything shaped like it:
an object with ``search(query, limit) -> list[ExternalDocument]``. It is only asked when local
memory does not already cover the query, and when it fails the local results still come back,
with the failure in ``external_error``.

**Which score the thresholds read.** A memory result's ``CombinedResult.score`` is its
``match_score × relevance_score`` capped to [0, 1] (``metadata`` keeps ``match_score``,
``final_score``, ``rrf_score`` and ``relevance_score``). The coverage gate (3 results at >= 0.7)
and the conflict gate (>= 0.6) compare that score.

Why ``match_score`` (:mod:`waggle_store.search.match`: query-term coverage computed in Python
and the vector lane's confidence) and not ``rrf_score``: the fused score weighs keyword hits by
the backend's raw keyword scores (idf sums over each backend's tokenizer) and ranks, so the same
data would call the external source on SQLite and skip it on Postgres; and
``rrf_score`` saturates (a frame in the top ~25 of every lane scores >= 0.7). Why times
relevance: a stale or deprecated memory must not count as coverage and suppress the external
lookup. Why capped: the relevance factor reaches ~2 for critical memories, while external scores
and the thresholds live in [0, 1]. With the balanced profile a fresh, normal-importance frame
has relevance 0.8, so it counts as "strong" for coverage when it holds nearly every query term
and the vector lane clearly found it too.
A result without a match score (a fake mind in tests) is judged by its capped ``final_score``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, Final, Protocol

from waggle_store.errors import InvalidInputError, scrub_secrets
from waggle_store.knowledge.polarity import polarity
from waggle_store.records import (
    CombinedResult,
    CombinedRetrievalResult,
    ExternalDocument,
    SearchResult,
)

logger = logging.getLogger(__name__)

SCOPES: Final = ("all", "workspace", "personal")
LOCAL_COVERAGE_MIN_COUNT: Final = 3
LOCAL_COVERAGE_SCORE_THRESHOLD: Final = 0.7
CONFLICT_SCORE_THRESHOLD: Final = 0.6
CONFLICT_TOP_N: Final = 3
WORKSPACE_AHEAD_NOTE: Final = (
    "Workspace memory contains affirmative language (approved/selected/active) while enterprise "
    "documents contain contradictory language (rejected/cancelled/deprecated). These sources may "
    "be out of sync."
)
EXTERNAL_AHEAD_NOTE: Final = (
    "Enterprise documents contain affirmative language while workspace memory contains "
    "contradictory language. The enterprise source may be more current."
)
WORKSPACE_ATTRIBUTION: Final = "[workspace memory]"
PERSONAL_ATTRIBUTION: Final = "[personal memory]"


class MemorySearch(Protocol):
    """One mind's search: a ``Mind``, or a fake in tests."""

    def search(self, query: str, *, limit: int, profile: str) -> Sequence[SearchResult]: ...


class ExternalSearch(Protocol):
    """An external document search (a KVARK-like client)."""

    def search(self, query: str, limit: int) -> Sequence[ExternalDocument]: ...


def memory_score(result: SearchResult) -> float:
    """The [0, 1] score the gates read: match × relevance, capped (see the module docstring)."""
    score = (result.final_score if result.match_score is None
             else result.match_score * result.relevance_score)
    if math.isnan(score):
        return 0.0
    return min(max(score, 0.0), 1.0)


def map_memory_result(result: SearchResult, source: str) -> CombinedResult:
    frame = result.frame
    metadata: dict[str, Any] = {
        "frame_id": frame.id,
        "frame_type": frame.frame_type,
        "importance": frame.importance,
        "gop_id": frame.gop_id,
        "rrf_score": result.rrf_score,
        "relevance_score": result.relevance_score,
        "final_score": result.final_score,
        "match_score": result.match_score,
    }
    attribution = WORKSPACE_ATTRIBUTION if source == "workspace" else PERSONAL_ATTRIBUTION
    return CombinedResult(frame.content, source, attribution, memory_score(result), metadata)


def external_attribution(document: ExternalDocument, label: str = "external") -> str:
    """``[<label>: <type>: <title>]``, or ``[<label>: <title>]`` without a type.

    A document without a title is named by its id, so that the tag still points somewhere.
    """
    parts = [label]
    if document.document_type:
        parts.append(document.document_type)
    parts.append(document.title or document.document_id)
    return "[" + ": ".join(parts) + "]"


def map_external_result(document: ExternalDocument, label: str = "external") -> CombinedResult:
    metadata: dict[str, Any] = {
        "document_id": document.document_id,
        "document_type": document.document_type,
        "title": document.title,
    }
    return CombinedResult(
        document.content,
        "external",
        external_attribution(document, label),
        float(document.score),
        metadata,
    )


def has_sufficient_local_coverage(results: Sequence[CombinedResult]) -> bool:
    """At least 3 local results score >= 0.7: the external source would add little."""
    strong = [r for r in results if r.score >= LOCAL_COVERAGE_SCORE_THRESHOLD]
    return len(strong) >= LOCAL_COVERAGE_MIN_COUNT


def should_query_external(
    external_available: bool, scope: str, local_results: Sequence[CombinedResult]
) -> bool:
    """Only scope "all" reaches outside local memory, and only when memory falls short."""
    if not external_available or scope != "all":
        return False
    return not has_sufficient_local_coverage(local_results)


def detect_conflict(
    workspace: Sequence[CombinedResult], external: Sequence[CombinedResult]
) -> str | None:
    """A note when the strong workspace and external results state opposite statuses.

    Conservative: only results scoring >= 0.6 take part, only the first 3 of
    each side are read, and a side speaks only if its status words all point one way.
    """
    strong_ws = [r.content for r in workspace if r.score >= CONFLICT_SCORE_THRESHOLD]
    strong_ext = [r.content for r in external if r.score >= CONFLICT_SCORE_THRESHOLD]
    if not strong_ws or not strong_ext:
        return None
    ws_side = polarity(strong_ws[:CONFLICT_TOP_N])
    ext_side = polarity(strong_ext[:CONFLICT_TOP_N])
    if ws_side == "positive" and ext_side == "negative":
        return WORKSPACE_AHEAD_NOTE
    if ws_side == "negative" and ext_side == "positive":
        return EXTERNAL_AHEAD_NOTE
    return None


def _error_message(exc: Exception) -> str:
    message = str(exc).strip()
    return message or f"Unknown external error ({type(exc).__name__})"


class CombinedRetrieval:
    """Searches a workspace mind, a personal mind and, when needed, an external source."""

    def __init__(
        self,
        workspace: MemorySearch | None = None,
        personal: MemorySearch | None = None,
        external: ExternalSearch | None = None,
        *,
        external_label: str = "external",
    ) -> None:
        """``external_label`` opens external attribution tags; "KVARK" gives KVARK's own tags."""
        self._workspace = workspace
        self._personal = personal
        self._external = external
        self._external_label = external_label

    def search(
        self, query: str, *, limit: int = 10, profile: str = "balanced", scope: str = "all"
    ) -> CombinedRetrievalResult:
        """Each side searched with the same ``limit`` and ``profile``; results keep its order.

        ``scope``: "all" (both minds, and the external source if local coverage is weak),
        "workspace" or "personal" (that mind only; the external source is never asked).
        """
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
        if scope not in SCOPES:
            raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)}; got {scope!r}")

        workspace = self._search_mind(self._workspace, "workspace", query, limit, profile, scope)
        personal = self._search_mind(self._personal, "personal", query, limit, profile, scope)
        available = self._external is not None

        if not should_query_external(available, scope, [*workspace, *personal]):
            return CombinedRetrievalResult(
                workspace_results=workspace,
                personal_results=personal,
                external_results=[],
                external_available=available,
                external_skipped=available,
                external_error=None,
                has_conflict=False,
                conflict_note=None,
            )

        external, error = self._search_external(query, limit)
        note = detect_conflict(workspace, external)
        return CombinedRetrievalResult(
            workspace_results=workspace,
            personal_results=personal,
            external_results=external,
            external_available=True,
            external_skipped=False,
            external_error=error,
            has_conflict=note is not None,
            conflict_note=note,
        )

    @staticmethod
    def _search_mind(
        mind: MemorySearch | None,
        source: str,
        query: str,
        limit: int,
        profile: str,
        scope: str,
    ) -> list[CombinedResult]:
        if mind is None or scope not in ("all", source):
            return []
        results = mind.search(query, limit=limit, profile=profile)
        return [map_memory_result(r, source) for r in results]

    def _search_external(self, query: str, limit: int) -> tuple[list[CombinedResult], str | None]:
        """The external results, or none and the error: its failure must not lose local ones."""
        assert self._external is not None
        try:
            documents = self._external.search(query, limit)
            return [map_external_result(d, self._external_label) for d in documents], None
        except Exception as exc:  # any client failure is reported, never raised
            # The query is the user's text: at DEBUG only, never at WARNING; the error text is
            # scrubbed of credentials (a client's URL may carry them).
            logger.warning("external search failed: %s", scrub_secrets(f"{type(exc).__name__}: "
                                                                       f"{exc}"))
            logger.debug("external search failed for %r", query, exc_info=True)
            return [], _error_message(exc)


__all__ = [
    "CONFLICT_SCORE_THRESHOLD",
    "LOCAL_COVERAGE_MIN_COUNT",
    "LOCAL_COVERAGE_SCORE_THRESHOLD",
    "SCOPES",
    "CombinedRetrieval",
    "ExternalSearch",
    "MemorySearch",
    "detect_conflict",
    "external_attribution",
    "has_sufficient_local_coverage",
    "map_external_result",
    "map_memory_result",
    "memory_score",
    "should_query_external",
]

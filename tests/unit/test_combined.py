"""CombinedRetrieval over fake minds and fake external clients.

The fakes stand in for ``Mind`` and Waggle's KVARK client; the real-database tests live in
tests/integration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.combined import (
    CombinedRetrieval,
    has_sufficient_local_coverage,
    map_external_result,
    map_memory_result,
    memory_score,
    should_query_external,
)
from waggle_store.records import (
    CombinedResult,
    ExternalDocument,
    Frame,
    SearchResult,
)

NOW = datetime(2026, 5, 13, 12, 0, tzinfo=UTC)


def frame(frame_id: int, content: str, *, importance: str = "normal") -> Frame:
    return Frame(
        id=frame_id,
        frame_type="I",
        gop_id="gop-1",
        t=frame_id,
        base_frame_id=None,
        content=content,
        importance=importance,
        source="user_stated",
        access_count=0,
        created_at=NOW,
        last_accessed=NOW,
    )


def hit(frame_id: int, content: str, final: float, *, rrf: float = 1.0) -> SearchResult:
    relevance = final / rrf if rrf else 0.0
    return SearchResult(frame(frame_id, content), rrf, relevance, final, {})


@dataclass
class FakeMind:
    results: list[SearchResult] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def search(self, query: str, *, limit: int, profile: str) -> list[SearchResult]:
        self.calls.append((query, {"limit": limit, "profile": profile}))
        return self.results[:limit]


@dataclass
class FakeExternal:
    documents: list[ExternalDocument] = field(default_factory=list)
    error: Exception | None = None
    calls: list[tuple[str, int]] = field(default_factory=list)

    def search(self, query: str, limit: int) -> list[ExternalDocument]:
        self.calls.append((query, limit))
        if self.error is not None:
            raise self.error
        return self.documents[:limit]


STATUS_DOC = ExternalDocument("Status: on track", "doc-1", 0.8, "Project Status Update", "pdf")
BUDGET_DOC = ExternalDocument("Q1 spend is 40k", "doc-2", 0.5, "Q1 Budget", "spreadsheet")


def weak_mind() -> FakeMind:
    return FakeMind([hit(1, "project kickoff notes", 0.4), hit(2, "project retro", 0.3)])


def strong_mind() -> FakeMind:
    return FakeMind([hit(i, f"project note {i}", 0.9) for i in range(1, 4)])


# ---------------------------------------------------------------- mapping


def test_memory_mapping_and_attribution() -> None:
    result = hit(7, "we chose Postgres", 0.45, rrf=0.9)
    workspace = map_memory_result(result, "workspace")
    personal = map_memory_result(result, "personal")
    assert workspace.attribution == "[workspace memory]"
    assert personal.attribution == "[personal memory]"
    assert (workspace.content, workspace.source, workspace.score) == (
        "we chose Postgres",
        "workspace",
        0.45,
    )
    assert workspace.metadata["frame_id"] == 7
    assert workspace.metadata["frame_type"] == "I"
    assert workspace.metadata["importance"] == "normal"
    assert workspace.metadata["rrf_score"] == 0.9
    assert workspace.metadata["final_score"] == 0.45


@pytest.mark.parametrize(
    ("final", "expected"), [(1.6, 1.0), (0.7, 0.7), (-0.1, 0.0), (float("nan"), 0.0)]
)
def test_memory_score_is_final_score_capped_to_unit_range(final: float, expected: float) -> None:
    assert memory_score(hit(1, "x", final)) == expected


def test_external_attribution() -> None:
    assert map_external_result(STATUS_DOC).attribution == "[external: pdf: Project Status Update]"
    assert map_external_result(STATUS_DOC, "KVARK").attribution == (
        "[KVARK: pdf: Project Status Update]"
    )
    untyped = ExternalDocument("text", "doc-9", 0.5, "Minutes")
    assert map_external_result(untyped).attribution == "[external: Minutes]"
    untitled = ExternalDocument("text", "doc-9", 0.5)
    assert map_external_result(untitled).attribution == "[external: doc-9]"
    mapped = map_external_result(STATUS_DOC)
    assert mapped.source == "external"
    assert mapped.score == 0.8
    assert mapped.metadata == {
        "document_id": "doc-1",
        "document_type": "pdf",
        "title": "Project Status Update",
    }


# ---------------------------------------------------------------- coverage gate


def scored(*scores: float) -> list[CombinedResult]:
    return [CombinedResult("x", "workspace", "[workspace memory]", s, {}) for s in scores]


@pytest.mark.parametrize(
    ("scores", "covered"),
    [((0.9, 0.8, 0.7), True), ((0.9, 0.8, 0.5), False), ((), False), ((0.7, 0.7, 0.69), False)],
)
def test_coverage(scores: tuple[float, ...], covered: bool) -> None:
    assert has_sufficient_local_coverage(scored(*scores)) is covered


def test_should_query_external() -> None:
    weak, strong = scored(0.5), scored(0.9, 0.9, 0.9)
    assert should_query_external(False, "all", weak) is False
    assert should_query_external(True, "personal", weak) is False
    assert should_query_external(True, "workspace", weak) is False
    assert should_query_external(True, "all", strong) is False
    assert should_query_external(True, "all", weak) is True


def test_strong_local_results_skip_the_external_client() -> None:
    external = FakeExternal([STATUS_DOC])
    result = CombinedRetrieval(workspace=strong_mind(), external=external).search("project")
    assert external.calls == []
    assert result.external_available is True
    assert result.external_skipped is True
    assert result.external_results == []
    assert len(result.workspace_results) == 3


def test_coverage_counts_workspace_and_personal_together() -> None:
    workspace = FakeMind([hit(1, "a", 0.9), hit(2, "b", 0.9)])
    personal = FakeMind([hit(3, "c", 0.95)])
    external = FakeExternal([STATUS_DOC])
    CombinedRetrieval(workspace=workspace, personal=personal, external=external).search("q")
    assert external.calls == []


def test_critical_memories_capped_still_count_as_strong() -> None:
    external = FakeExternal([STATUS_DOC])
    mind = FakeMind([hit(i, "critical note", 1.7) for i in range(3)])
    result = CombinedRetrieval(workspace=mind, external=external).search("q")
    assert external.calls == []
    assert [r.score for r in result.workspace_results] == [1.0, 1.0, 1.0]


def test_weak_local_results_call_the_external_client() -> None:
    external = FakeExternal([STATUS_DOC, BUDGET_DOC])
    retrieval = CombinedRetrieval(workspace=weak_mind(), external=external, external_label="KVARK")
    result = retrieval.search("project")
    assert external.calls == [("project", 10)]
    assert [r.attribution for r in result.external_results] == [
        "[KVARK: pdf: Project Status Update]",
        "[KVARK: spreadsheet: Q1 Budget]",
    ]
    assert result.external_available is True
    assert result.external_skipped is False
    assert result.external_error is None
    assert len(result.workspace_results) == 2


def test_external_with_no_results_is_not_an_error() -> None:
    result = CombinedRetrieval(workspace=weak_mind(), external=FakeExternal()).search("q")
    assert result.external_results == []
    assert result.external_error is None
    assert result.external_skipped is False


def test_no_external_client() -> None:
    result = CombinedRetrieval(workspace=weak_mind()).search("q")
    assert result.external_available is False
    assert result.external_skipped is False
    assert result.external_error is None
    assert result.has_conflict is False
    assert result.conflict_note is None


# ---------------------------------------------------------------- failures


def test_failing_client_gives_external_error_and_keeps_local_results(
    caplog: pytest.LogCaptureFixture,
) -> None:
    external = FakeExternal(error=ConnectionError("KVARK is down"))
    personal = FakeMind([hit(9, "personal note", 0.2)])
    result = CombinedRetrieval(workspace=weak_mind(), personal=personal, external=external).search(
        "project"
    )
    assert result.external_error == "KVARK is down"
    assert result.external_results == []
    assert [r.content for r in result.workspace_results] == [
        "project kickoff notes",
        "project retro",
    ]
    assert [r.content for r in result.personal_results] == ["personal note"]
    assert result.external_available is True
    assert result.external_skipped is False
    assert "KVARK is down" in caplog.text  # the failure is recorded, not swallowed


def test_failure_without_a_message_still_says_something() -> None:
    external = FakeExternal(error=RuntimeError())
    result = CombinedRetrieval(workspace=weak_mind(), external=external).search("q")
    assert result.external_error == "Unknown external error (RuntimeError)"


def test_client_returning_garbage_is_a_failing_client() -> None:
    class Broken:
        def search(self, query: str, limit: int) -> Sequence[ExternalDocument]:
            return [object()]  # type: ignore[list-item]

    result = CombinedRetrieval(workspace=weak_mind(), external=Broken()).search("q")
    assert result.external_error is not None
    assert len(result.workspace_results) == 2


def test_local_failures_are_not_swallowed() -> None:
    class Exploding:
        def search(self, query: str, *, limit: int, profile: str) -> list[SearchResult]:
            raise InvalidInputError("unknown profile 'nope'")

    with pytest.raises(InvalidInputError):
        CombinedRetrieval(workspace=Exploding()).search("q", profile="nope")


# ---------------------------------------------------------------- scope, limit, profile


def test_scope_personal_skips_workspace_and_external() -> None:
    workspace, personal, external = weak_mind(), FakeMind([hit(5, "p", 0.2)]), FakeExternal()
    retrieval = CombinedRetrieval(workspace=workspace, personal=personal, external=external)
    result = retrieval.search("q", scope="personal")
    assert workspace.calls == []
    assert external.calls == []
    assert len(result.personal_results) == 1
    assert result.workspace_results == []
    assert result.external_skipped is True


def test_scope_workspace_skips_personal_and_external() -> None:
    workspace, personal, external = weak_mind(), FakeMind([hit(5, "p", 0.2)]), FakeExternal()
    retrieval = CombinedRetrieval(workspace=workspace, personal=personal, external=external)
    result = retrieval.search("q", scope="workspace")
    assert personal.calls == []
    assert external.calls == []
    assert len(result.workspace_results) == 2
    assert result.personal_results == []
    assert result.external_skipped is True


def test_no_workspace_mind() -> None:
    external = FakeExternal([STATUS_DOC, BUDGET_DOC])
    personal = FakeMind([hit(5, "p", 0.2)])
    result = CombinedRetrieval(personal=personal, external=external).search("q")
    assert (len(result.personal_results), len(result.external_results)) == (1, 2)


@pytest.mark.parametrize("scope", ["everything", "external", "", "ALL"])
def test_unknown_scope_is_rejected(scope: str) -> None:
    with pytest.raises(InvalidInputError, match="scope"):
        CombinedRetrieval(workspace=weak_mind()).search("q", scope=scope)


@pytest.mark.parametrize("limit", [0, -1, True, 2.5])
def test_bad_limit_is_rejected(limit: Any) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        CombinedRetrieval(workspace=weak_mind()).search("q", limit=limit)


def test_limit_and_profile_pass_through() -> None:
    workspace, personal, external = weak_mind(), weak_mind(), FakeExternal()
    retrieval = CombinedRetrieval(workspace=workspace, personal=personal, external=external)
    retrieval.search("q", limit=7, profile="recent")
    assert workspace.calls == [("q", {"limit": 7, "profile": "recent"})]
    assert personal.calls == [("q", {"limit": 7, "profile": "recent"})]
    assert external.calls == [("q", 7)]


def test_defaults_are_limit_10_and_balanced() -> None:
    workspace = weak_mind()
    CombinedRetrieval(workspace=workspace).search("q")
    assert workspace.calls == [("q", {"limit": 10, "profile": "balanced"})]

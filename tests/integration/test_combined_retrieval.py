"""CombinedRetrieval over real minds on both dialects, with an in-test external client."""

from __future__ import annotations

import pytest

import waggle_store as ws


class RecordingClient:
    """An external search (the shape of Waggle's KVARK client) that records its calls."""

    def __init__(self, documents: list[ws.ExternalDocument] | None = None,
                 error: Exception | None = None) -> None:
        self.documents = documents or []
        self.error = error
        self.calls: list[tuple[str, int]] = []

    def search(self, query: str, limit: int) -> list[ws.ExternalDocument]:
        self.calls.append((query, limit))
        if self.error is not None:
            raise self.error
        return self.documents[:limit]


def _fill(mind: ws.Mind, texts: list[str]) -> None:
    result = mind.cognify_batch(texts)
    assert result.failures == []


def test_coverage_gate_skips_external_when_local_memory_suffices(store: ws.Store) -> None:
    workspace, personal = store.mind("ws"), store.mind("me", kind="personal")
    _fill(
        workspace,
        [
            f"The quarterly budget review for team {n} is done."
            for n in ("red", "blue", "green", "gold")
        ],
    )
    client = RecordingClient([ws.ExternalDocument("budget policy", "doc-1", 0.9)])
    result = ws.CombinedRetrieval(workspace, personal, client).search("quarterly budget review")
    assert len(result.workspace_results) >= 3
    assert result.external_skipped is True
    assert client.calls == []
    assert all(
        r.attribution == "[workspace memory]" and r.source == "workspace"
        for r in result.workspace_results
    )


def test_external_is_asked_when_local_memory_is_thin(store: ws.Store) -> None:
    workspace = store.mind("ws")
    _fill(workspace, ["Lunch was pizza on Tuesday."])
    client = RecordingClient(
        [
            ws.ExternalDocument(
                "The vendor contract renews in March.",
                "doc-7",
                0.8,
                title="Vendor contract",
                document_type="pdf",
            )
        ]
    )
    result = ws.CombinedRetrieval(workspace, None, client).search(
        "vendor contract renewal", limit=5
    )
    assert client.calls == [("vendor contract renewal", 5)]
    assert result.external_skipped is False
    assert result.external_available is True
    assert [r.content for r in result.external_results] == ["The vendor contract renews in March."]
    assert result.external_results[0].source == "external"


def test_failing_external_keeps_local_results(store: ws.Store) -> None:
    workspace = store.mind("ws")
    _fill(workspace, ["The migration to PostgreSQL finished on Friday."])
    client = RecordingClient(error=ConnectionError("enterprise search is down"))
    result = ws.CombinedRetrieval(workspace, None, client).search("PostgreSQL migration status")
    assert client.calls, "the thin local result should have asked the external source"
    assert result.external_error is not None
    assert "down" in result.external_error
    assert result.external_results == []
    assert [r.content for r in result.workspace_results] == [
        "The migration to PostgreSQL finished on Friday."
    ]


def test_conflict_between_workspace_and_external(store: ws.Store) -> None:
    workspace = store.mind("ws")
    _fill(workspace, ["The plan was approved."])
    client = RecordingClient([ws.ExternalDocument("The plan was rejected.", "doc-2", 0.9)])
    result = ws.CombinedRetrieval(workspace, None, client).search("plan approved")
    assert result.has_conflict is True
    assert result.conflict_note


def test_inactive_is_not_read_as_active(store: ws.Store) -> None:
    workspace = store.mind("ws")
    _fill(workspace, ["The integration is inactive."])
    client = RecordingClient([ws.ExternalDocument("The integration was cancelled.", "doc-3", 0.9)])
    result = ws.CombinedRetrieval(workspace, None, client).search("integration inactive")
    assert client.calls
    assert result.has_conflict is False


def test_scopes_and_isolation(store: ws.Store) -> None:
    workspace, personal = store.mind("ws"), store.mind("me", kind="personal")
    _fill(workspace, ["Workspace note: the Apollo roadmap is public."])
    _fill(personal, ["Personal note: the Apollo roadmap worries me."])
    both = ws.CombinedRetrieval(workspace, personal).search("Apollo roadmap")
    assert [r.content for r in both.workspace_results] == [
        "Workspace note: the Apollo roadmap is public."
    ]
    assert [r.content for r in both.personal_results] == [
        "Personal note: the Apollo roadmap worries me."
    ]
    only = ws.CombinedRetrieval(workspace, personal).search("Apollo roadmap", scope="personal")
    assert only.workspace_results == []
    assert len(only.personal_results) == 1
    with pytest.raises(ws.InvalidInputError):
        ws.CombinedRetrieval(workspace, personal).search("x", scope="team")

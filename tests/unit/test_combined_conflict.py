"""Conflict detection between workspace memory and external documents, with polarity read from
whole words (Waggle matched substrings: "inactive" read as "active")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from waggle_store.knowledge.polarity import polarity, status_words
from waggle_store.pipeline.combined import (
    EXTERNAL_AHEAD_NOTE,
    WORKSPACE_AHEAD_NOTE,
    CombinedRetrieval,
    detect_conflict,
)
from waggle_store.records import CombinedResult, ExternalDocument, Frame, SearchResult

NOW = datetime(2026, 5, 13, 12, 0, tzinfo=UTC)


def hit(frame_id: int, content: str, final: float) -> SearchResult:
    frame = Frame(
        frame_id, "I", "gop-1", frame_id, None, content, "normal", "user_stated", 0, NOW, NOW
    )
    return SearchResult(frame, 1.0, final, final, {})


@dataclass
class FakeMind:
    results: list[SearchResult]

    def search(self, query: str, *, limit: int, profile: str) -> list[SearchResult]:
        return self.results[:limit]


@dataclass
class FakeExternal:
    documents: list[ExternalDocument]

    def search(self, query: str, limit: int) -> list[ExternalDocument]:
        return self.documents[:limit]


def ws(content: str, score: float = 0.9) -> CombinedResult:
    return CombinedResult(content, "workspace", "[workspace memory]", score, {})


def ext(content: str, score: float = 0.85) -> CombinedResult:
    return CombinedResult(content, "external", "[external: Doc]", score, {})


# ------------------------------------------------------------- detect_conflict (Waggle's cases)


def test_one_side_missing_gives_none() -> None:
    assert detect_conflict([ws("approved")], []) is None
    assert detect_conflict([], [ext("rejected")]) is None


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("the plan was approved", "the plan is confirmed"),
        ("the plan was rejected", "the plan was cancelled"),
        ("we met on tuesday", "notes from tuesday"),
    ],
)
def test_same_or_no_polarity_gives_none(left: str, right: str) -> None:
    assert detect_conflict([ws(left)], [ext(right)]) is None


def test_workspace_affirms_external_contradicts() -> None:
    note = detect_conflict(
        [ws("We decided to use the new API and approved the integration", 0.9)],
        [ext("API integration has been cancelled due to security review", 0.85)],
    )
    assert note == WORKSPACE_AHEAD_NOTE
    assert note is not None
    for phrase in ("affirmative language", "contradictory language", "out of sync"):
        assert phrase in note


def test_workspace_contradicts_external_affirms() -> None:
    note = detect_conflict(
        [ws("The vendor was rejected")], [ext("Vendor approved and contract confirmed")]
    )
    assert note == EXTERNAL_AHEAD_NOTE
    assert note is not None
    assert "enterprise source may be more current" in note


def test_weak_scores_do_not_take_part() -> None:
    assert detect_conflict([ws("approved", 0.4)], [ext("rejected", 0.5)]) is None
    assert detect_conflict([ws("approved", 0.6)], [ext("rejected", 0.6)]) is not None


def test_mixed_workspace_side_is_neutral() -> None:
    assert detect_conflict([ws("approved then rejected")], [ext("cancelled")]) is None


def test_only_the_top_three_of_each_side_are_read() -> None:
    workspace = [ws("approved"), ws("approved"), ws("approved"), ws("rejected")]
    assert detect_conflict(workspace, [ext("cancelled")]) == WORKSPACE_AHEAD_NOTE


# ---------------------------------------------------------------- whole words, negation


@pytest.mark.parametrize(
    "text",
    [
        "the service is inactive",
        "the proposal is unapproved",
        "the team is still undecided",
        "preselected options were shown",
        "reactivation pending",
    ],
)
def test_substrings_are_not_status_words(text: str) -> None:
    assert polarity([text]) == "neutral"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the plan was approved", "positive"),
        ("The Plan Was APPROVED.", "positive"),
        ("the plan was rejected", "negative"),
        ("the plan was not approved", "negative"),
        ("the plan has not yet been approved", "negative"),
        ("the plan wasn't approved", "negative"),
        ("the feature is no longer active", "negative"),
        ("the launch was never cancelled", "positive"),
        # A negation in an earlier clause does not reach the status word.
        ("not sure why, but it was approved", "positive"),
    ],
)
def test_polarity(text: str, expected: str) -> None:
    assert polarity([text]) == expected


def test_status_words_reports_both_sides() -> None:
    assert status_words("approved, then revoked") == (True, True)
    assert status_words("nothing to see") == (False, False)


# ---------------------------------------------------------------- through CombinedRetrieval


def search_with(workspace_text: str, external_text: str) -> tuple[bool, str | None]:
    workspace = FakeMind([hit(1, workspace_text, 0.9)])
    external = FakeExternal([ExternalDocument(external_text, "doc-1", 0.85, "Plan")])
    result = CombinedRetrieval(workspace=workspace, external=external).search("plan")
    return result.has_conflict, result.conflict_note


def test_approved_against_rejected_is_flagged() -> None:
    flagged, note = search_with("the plan was approved", "the plan was rejected")
    assert flagged is True
    assert note == WORKSPACE_AHEAD_NOTE


def test_inactive_is_not_read_as_active() -> None:
    # Waggle: "inactive" contained "active", so this pair was reported as a conflict.
    flagged, note = search_with("the service is inactive", "the service was suspended")
    assert (flagged, note) == (False, None)


def test_both_affirmative_is_not_flagged() -> None:
    assert search_with("active and healthy", "confirmed active") == (False, None)


def test_selected_and_approved_against_cancelled() -> None:
    flagged, note = search_with("selected and approved", "cancelled")
    assert flagged is True
    assert note is not None
    assert "out of sync" in note


def test_no_client_never_flags() -> None:
    workspace = FakeMind([hit(1, "approved", 0.9)])
    assert CombinedRetrieval(workspace=workspace).search("q").has_conflict is False


def test_personal_memory_does_not_take_part() -> None:
    @dataclass
    class Only:
        result: SearchResult

        def search(self, query: str, *, limit: int, profile: str) -> list[SearchResult]:
            return [self.result]

    external = FakeExternal([ExternalDocument("the plan was rejected", "d", 0.9)])
    result = CombinedRetrieval(
        personal=Only(hit(1, "the plan was approved", 0.9)), external=external
    ).search("plan")
    assert result.has_conflict is False

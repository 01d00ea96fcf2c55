"""Sessions (Waggle's session cases), adapted: one active auto session per project."""

from __future__ import annotations

import re

import pytest

import waggle_store as ws

GOP_RE = re.compile(r"^session:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z:[0-9a-z]{6}$")


def test_ensure_active_creates_once(mind: ws.Mind) -> None:
    first = mind.sessions.ensure_active()
    assert GOP_RE.match(first.gop_id)
    assert (first.status, first.project_id, first.ended_at) == ("active", None, None)
    assert mind.sessions.ensure_active() == first
    assert mind.sessions.ensure_active() == first
    assert len(mind.sessions.list(status="active")) == 1


def test_ensure_active_is_per_project(mind: ws.Mind) -> None:
    none = mind.sessions.ensure_active()
    mine = mind.sessions.ensure_active("my-project")
    assert mine.project_id == "my-project"
    assert mine.gop_id != none.gop_id
    assert mind.sessions.ensure_active("my-project") == mine
    assert mind.sessions.ensure_active(None) == none


def test_after_close_ensure_active_creates_a_new_session(mind: ws.Mind) -> None:
    first = mind.sessions.ensure_active()
    closed = mind.sessions.close(first.gop_id, "Session complete")
    assert (closed.status, closed.summary) == ("closed", "Session complete")
    assert closed.ended_at is not None
    second = mind.sessions.ensure_active()
    assert second.gop_id != first.gop_id
    assert second.status == "active"


def test_named_sessions_are_never_returned_by_ensure_active(mind: ws.Mind) -> None:
    harvest = mind.sessions.ensure("harvest:chatgpt", summary="long-lived harvest session")
    day = mind.sessions.ensure("mcp:2026-05-13")
    auto = mind.sessions.ensure_active()
    assert auto.gop_id not in (harvest.gop_id, day.gop_id)
    assert GOP_RE.match(auto.gop_id)
    assert mind.sessions.ensure_active() == auto


def test_ensure_is_idempotent_and_keeps_summary(mind: ws.Mind) -> None:
    first = mind.sessions.ensure("harvest", summary="long-lived harvest session")
    again = mind.sessions.ensure("harvest", summary="something else", project_id="p")
    assert again == first
    assert again.summary == "long-lived harvest session"


def test_create_starts_a_new_auto_session(mind: ws.Mind) -> None:
    a = mind.sessions.create("project-x")
    b = mind.sessions.create("project-x")
    assert a.gop_id != b.gop_id
    assert b.ended_at is None
    assert b.status == "active"
    # ensure_active returns the newer one; the older was closed when b started.
    assert mind.sessions.ensure_active("project-x") == b
    assert mind.sessions.get(a.gop_id).status == "closed"
    assert mind.sessions.get(a.gop_id).ended_at is not None


def test_list_by_project_newest_first(mind: ws.Mind) -> None:
    a1 = mind.sessions.create("project:a")
    a2 = mind.sessions.create("project:a")
    b = mind.sessions.create("project:b")
    assert [s.gop_id for s in mind.sessions.list(project_id="project:a")] == [a2.gop_id, a1.gop_id]
    assert [s.gop_id for s in mind.sessions.list(project_id="project:b")] == [b.gop_id]
    assert len(mind.sessions.list(status="active")) == 2
    mind.sessions.close(b.gop_id)
    assert [s.gop_id for s in mind.sessions.list(status="active")] == [a2.gop_id]
    assert [s.gop_id for s in mind.sessions.list()] == [b.gop_id, a2.gop_id, a1.gop_id]


def test_close_without_summary_keeps_it(mind: ws.Mind) -> None:
    mind.sessions.ensure("h", summary="keep me")
    assert mind.sessions.close("h").summary == "keep me"
    assert mind.sessions.close("h", "replaced").summary == "replaced"
    archived = mind.sessions.archive("h")
    assert (archived.status, archived.summary) == ("archived", "replaced")
    assert archived.ended_at is not None


def test_unknown_session(mind: ws.Mind) -> None:
    assert mind.sessions.get("nope") is None
    for call in (lambda: mind.sessions.close("nope"), lambda: mind.sessions.archive("nope")):
        with pytest.raises(ws.NotFoundError):
            call()


@pytest.mark.parametrize(
    "bad",
    [
        lambda m: m.sessions.ensure(""),
        lambda m: m.sessions.ensure("a\x00"),
        lambda m: m.sessions.ensure_active(""),
        lambda m: m.sessions.ensure_active(7),
        lambda m: m.sessions.list(status="open"),
        lambda m: m.sessions.ensure("x" * 300),
    ],
)
def test_bad_session_input(mind: ws.Mind, bad) -> None:
    with pytest.raises(ws.InvalidInputError):
        bad(mind)
    assert mind.sessions.list() == []

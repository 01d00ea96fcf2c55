"""mind.awareness: update, update_metadata, by_status and active(limit=). SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import waggle_store as ws


def test_update_changes_only_what_is_given(mind: ws.Mind) -> None:
    a = mind.awareness
    later = datetime.now(UTC) + timedelta(hours=1)
    item = a.add("task", "write the report", priority=1, expires_at=later)
    moved = a.update(item.id, content="write the final report", priority=5)
    assert (moved.content, moved.priority, moved.category) == ("write the final report", 5, "task")
    assert moved.expires_at == later  # left out: kept
    flagged = a.update(item.id, category="flag", expires_at=None)
    assert (flagged.category, flagged.expires_at) == ("flag", None)  # None: cleared
    assert a.get(item.id) == flagged
    with pytest.raises(ws.NotFoundError):
        a.update(987654, content="nothing")
    with pytest.raises(ws.InvalidInputError):
        a.update(item.id, category="nonsense", content="not stored either")
    assert a.get(item.id) == flagged


def test_update_metadata_merges_shallowly(mind: ws.Mind) -> None:
    a = mind.awareness
    item = a.add("pending", "review PR", metadata={"status": "open", "tags": ["x"], "n": 1})
    merged = a.update_metadata(item.id, {"status": "blocked", "tags": ["y"], "by": "ann"})
    assert merged.metadata == {"status": "blocked", "tags": ["y"], "n": 1, "by": "ann"}
    with pytest.raises(ws.NotFoundError):
        a.update_metadata(987654, {"status": "x"})


def test_by_status_has_no_cap_and_skips_expired(mind: ws.Mind) -> None:
    a = mind.awareness
    ids = [a.add("task", f"task {i}", priority=i % 3, metadata={"status": "open"}).id
           for i in range(14)]
    a.add("task", "done one", metadata={"status": "done"})
    a.add("task", "no status")
    a.add("task", "expired open", metadata={"status": "open"},
          expires_at=datetime.now(UTC) - timedelta(seconds=1))
    got = a.by_status("open")
    assert sorted(i.id for i in got) == sorted(ids)
    assert [i.priority for i in got] == sorted((i.priority for i in got), reverse=True)
    assert [i.content for i in a.by_status("done")] == ["done one"]
    assert a.by_status("missing") == []


def test_active_takes_a_limit(mind: ws.Mind) -> None:
    a = mind.awareness
    for i in range(13):
        a.add("task", f"task {i}")
    assert len(a.active()) == 10
    assert len(a.active(limit=12)) == 12
    assert len(a.active("task", limit=50)) == 13
    with pytest.raises(ws.InvalidInputError):
        a.active(limit=0)

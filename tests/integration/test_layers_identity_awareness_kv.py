"""Layers 0 and 1 (identity, awareness) and the per-mind KV, on sqlite and postgres."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

import waggle_store as ws

# -- identity -------------------------------------------------------------------------------------


def test_identity_lifecycle(mind: ws.Mind) -> None:
    assert mind.identity.get() is None
    with pytest.raises(ws.NotFoundError):
        mind.identity.update(role="x")
    created = mind.identity.set(name="Hive", role="Memory Agent", department="R&D")
    assert (created.name, created.role, created.department) == ("Hive", "Memory Agent", "R&D")
    assert created.created_at == created.updated_at
    assert mind.identity.get() == created

    time.sleep(0.01)
    updated = mind.identity.update(role="Archivist", department="Ops")
    assert (updated.name, updated.role, updated.department) == ("Hive", "Archivist", "Ops")
    assert updated.updated_at > created.updated_at
    assert updated.created_at == created.created_at

    assert mind.identity.update() == updated  # nothing to change: unchanged, updated_at too
    assert mind.identity.update(role=None) == updated  # None means "leave as is"


def test_identity_set_replaces_but_keeps_created_at(mind: ws.Mind) -> None:
    first = mind.identity.set(name="Hive", role="r", capabilities="c")
    second = mind.identity.set(name="Bee")
    assert (second.name, second.role, second.capabilities) == ("Bee", "", "")
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at


@pytest.mark.parametrize("fields", [{"bogus": "x"}, {"id": 2}, {"role": "ok", "mind_id": 5},
                                    {"name": ""}, {"role": 3}, {"role": "a\x00"}])
def test_identity_update_refuses_unknown_or_bad_fields(mind: ws.Mind, fields: dict) -> None:
    before = mind.identity.set(name="Hive", role="keep")
    with pytest.raises(ws.InvalidInputError):
        mind.identity.update(**fields)
    assert mind.identity.get() == before


def test_identity_context_labels(mind: ws.Mind) -> None:
    mind.identity.set(name="Hive", role="Memory Agent", personality="terse",
                      system_prompt="Respond concisely.")
    context = mind.identity.to_context()
    for line in ("Name: Hive", "Role: Memory Agent", "Personality: terse",
                 "System Prompt: Respond concisely."):
        assert line in context
    assert "Department:" not in context
    assert "Capabilities:" not in context
    assert -(-len(context) // 4) < 500


# -- awareness ------------------------------------------------------------------------------------


def test_awareness_add_defaults_each_category(mind: ws.Mind) -> None:
    for category in ("task", "action", "pending", "flag"):
        item = mind.awareness.add(category, f"a {category}")
        assert item.category == category
        assert (item.priority, item.expires_at, item.metadata) == (0, None, {})
    with pytest.raises(ws.InvalidInputError):
        mind.awareness.add("note", "not a category")
    assert len(mind.awareness.active()) == 4


def test_awareness_order_cap_and_category(mind: ws.Mind) -> None:
    for priority in range(15):
        mind.awareness.add("task", f"t{priority}", priority=priority)
    active = mind.awareness.active()
    assert len(active) == 10
    assert (active[0].priority, active[-1].priority) == (14, 5)
    mind.awareness.add("flag", "urgent", priority=100)
    assert mind.awareness.active()[0].content == "urgent"
    assert len(mind.awareness.active("task")) == 10
    assert [i.content for i in mind.awareness.active("flag")] == ["urgent"]


def test_awareness_equal_priority_newest_first(mind: ws.Mind) -> None:
    a = mind.awareness.add("task", "older")
    b = mind.awareness.add("task", "newer")
    assert [i.id for i in mind.awareness.active()] == [b.id, a.id]


def test_awareness_expiry_compares_real_times(mind: ws.Mind) -> None:
    now = datetime.now(UTC)
    mind.awareness.add("task", "expired", expires_at=now - timedelta(minutes=1))
    mind.awareness.add("task", "alive", expires_at=now + timedelta(minutes=1))
    # The same instant written in another zone: a string comparison would get this wrong.
    mind.awareness.add("task", "alive-in-tokyo",
                       expires_at=(now + timedelta(minutes=1)).astimezone().isoformat())
    mind.awareness.add("flag", "expired-iso", expires_at="2020-01-01T00:00:00Z")
    mind.awareness.add("flag", "no-expiry")
    assert {i.content for i in mind.awareness.active()} == {"alive", "alive-in-tokyo", "no-expiry"}
    assert {i.content for i in mind.awareness.active("flag")} == {"no-expiry"}


@pytest.mark.parametrize("expires", ["2020-01-01T00:00:00", datetime(2030, 1, 1), "soon", 5])
def test_awareness_refuses_bad_expiry(mind: ws.Mind, expires: object) -> None:
    with pytest.raises(ws.InvalidInputError):
        mind.awareness.add("task", "x", expires_at=expires)  # type: ignore[arg-type]
    assert mind.awareness.active() == []


def test_awareness_metadata_remove_clear(mind: ws.Mind) -> None:
    a = mind.awareness.add("task", "a", metadata={"status": "done", "n": [1, 2]})
    b = mind.awareness.add("task", "b")
    c = mind.awareness.add("flag", "c")
    assert mind.awareness.get(a.id).metadata == {"status": "done", "n": [1, 2]}
    mind.awareness.remove(b.id)
    with pytest.raises(ws.NotFoundError):
        mind.awareness.remove(b.id)
    assert {i.id for i in mind.awareness.active()} == {a.id, c.id}
    assert mind.awareness.clear("flag") == 1
    assert mind.awareness.clear() == 1
    assert mind.awareness.clear() == 0
    with pytest.raises(ws.InvalidInputError):
        mind.awareness.clear("nope")


def test_awareness_context(mind: ws.Mind) -> None:
    assert mind.awareness.to_context() == "No active awareness items."
    mind.awareness.add("task", "T1", priority=1)
    mind.awareness.add("task", "T2")
    mind.awareness.add("flag", "F1")
    context = mind.awareness.to_context()
    assert context == "Active Tasks:\n- T1\n- T2\n\nContext Flags:\n- F1"


# -- kv -------------------------------------------------------------------------------------------


def test_kv_roundtrip(mind: ws.Mind) -> None:
    assert mind.kv.get("missing") is None
    assert mind.kv.get("missing", "fallback") == "fallback"
    mind.kv.set("prefs", {"theme": "dark", "sizes": [1, 2.5], "on": True})
    mind.kv.set("nothing", None)
    mind.kv.set("count", 1)
    mind.kv.set("count", 2)
    assert mind.kv.get("prefs") == {"theme": "dark", "sizes": [1, 2.5], "on": True}
    assert mind.kv.get("nothing", "fallback") is None  # a stored null is not "missing"
    assert mind.kv.items() == [("count", 2), ("nothing", None),
                               ("prefs", {"theme": "dark", "sizes": [1, 2.5], "on": True})]
    assert mind.kv.delete("count") is True
    assert mind.kv.delete("count") is False
    assert [k for k, _ in mind.kv.items()] == ["nothing", "prefs"]


@pytest.mark.parametrize(("key", "value"), [("", 1), ("k" * 501, 1), ("k", float("nan")),
                                            ("k", {"a": object()}), (3, 1)])
def test_kv_refuses_bad_input(mind: ws.Mind, key: object, value: object) -> None:
    with pytest.raises(ws.InvalidInputError):
        mind.kv.set(key, value)  # type: ignore[arg-type]
    assert mind.kv.items() == []

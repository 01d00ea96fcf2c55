"""Knowledge in recorded time: entity versions, history, the graph as of a recorded or valid time,
and paged entity listing. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

import waggle_store as ws


def _tick() -> datetime:
    """A time strictly between the writes before and after it (clocks tick in microseconds)."""
    time.sleep(0.002)
    now = datetime.now(UTC)
    time.sleep(0.002)
    return now


def test_update_entity_keeps_the_old_version_readable(mind: ws.Mind) -> None:
    k = mind.knowledge
    acme = k.create_entity("organization", "Acme", {"city": "Paris"})
    before = _tick()
    renamed = k.update_entity(acme.id, name="Acme Corp", properties={"city": "Berlin"})
    between = _tick()
    retyped = k.update_entity(acme.id, entity_type="company")

    assert (renamed.id, retyped.entity_type, retyped.name) == (acme.id, "company", "Acme Corp")
    history = k.history(acme.id)
    assert [(v.version, v.name, v.entity_type, v.properties) for v in history] == [
        (1, "Acme", "organization", {"city": "Paris"}),
        (2, "Acme Corp", "organization", {"city": "Berlin"}),
        (3, "Acme Corp", "company", {"city": "Berlin"}),
    ]
    assert history[0].recorded_to == history[1].recorded_from
    assert history[-1].recorded_to is None
    assert all(isinstance(v, ws.EntityVersion) for v in history)

    then = k.entities_as_of(recorded=before)
    assert [(e.id, e.name, e.properties) for e in then] == [(acme.id, "Acme", {"city": "Paris"})]
    assert [(e.name, e.entity_type) for e in k.entities_as_of(recorded=between)] == [
        ("Acme Corp", "organization")]
    assert [(e.name, e.entity_type) for e in k.entities_as_of()] == [("Acme Corp", "company")]
    assert k.get_entity(acme.id) == retyped  # the current state is where it always was


def test_history_of_an_unknown_entity_is_not_found(mind: ws.Mind) -> None:
    with pytest.raises(ws.NotFoundError):
        mind.knowledge.history(424242)


def test_retirement_is_recorded_as_a_version(mind: ws.Mind) -> None:
    k = mind.knowledge
    alice = k.create_entity("person", "Alice Jones")
    acme = k.create_entity("organization", "Acme Corp")
    edge = k.create_relation(alice.id, acme.id, "works_at")
    before = _tick()
    k.retire_entity(alice.id)

    # Now: Alice and the edge are over; as recorded before, both were open.
    assert k.get_entity(alice.id).valid_to is not None
    then = {e.id: e for e in k.entities_as_of(recorded=before)}
    assert then[alice.id].valid_to is None
    [old_edge] = k.relations_as_of(recorded=before)
    assert (old_edge.id, old_edge.valid_to) == (edge.id, None)
    [now_edge] = k.relations_as_of()
    assert now_edge.valid_to is not None
    # Valid time: the edge was true before the retirement, not after it.
    assert [r.id for r in k.relations_as_of(valid=before)] == [edge.id]
    assert k.relations_as_of(valid=datetime.now(UTC)) == []
    # Both axes: as recorded now, what was true before.
    assert [e.id for e in k.entities_as_of(recorded=datetime.now(UTC), valid=before)] == [
        acme.id, alice.id]
    assert [v.version for v in k.history(alice.id)] == [1, 2]


def test_retire_relation_keeps_its_open_state_in_recorded_time(mind: ws.Mind) -> None:
    k = mind.knowledge
    a, b = k.create_entity("person", "Ann Lee"), k.create_entity("person", "Ben Ode")
    edge = k.create_relation(a.id, b.id, "knows")
    before = _tick()
    k.retire_relation(edge.id)
    assert k.relations_as_of(recorded=before)[0].valid_to is None
    assert k.get_relation(edge.id).valid_to is not None


def test_entities_are_paged_in_name_order(mind: ws.Mind) -> None:
    k = mind.knowledge
    for name in ("Delta", "Alpha", "Charlie", "Bravo", "Echo"):
        k.create_entity("thing" if name != "Echo" else "other", name)
    gone = k.create_entity("thing", "Aardvark")
    k.retire_entity(gone.id)
    first = k.entities(limit=2)
    rest = k.entities(limit=10, offset=2)
    assert [e.name for e in first + rest] == ["Alpha", "Bravo", "Charlie", "Delta", "Echo"]
    assert [e.name for e in k.entities(entity_type="other")] == ["Echo"]
    with pytest.raises(ws.InvalidInputError):
        k.entities(offset=-1)

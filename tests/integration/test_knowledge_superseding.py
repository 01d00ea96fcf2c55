"""Exclusive relation types: a new fact ends the old one; history keeps it. SQLite and
PostgreSQL."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import waggle_store as ws


def _tick() -> datetime:
    time.sleep(0.002)
    now = datetime.now(UTC)
    time.sleep(0.002)
    return now


def _names(mind: ws.Mind, relations: list[ws.Relation]) -> list[tuple[str, str, str]]:
    k = mind.knowledge
    out = []
    for r in relations:
        source, target = k.get_entity(r.source_id), k.get_entity(r.target_id)
        assert source is not None
        assert target is not None
        out.append((source.name, r.relation_type, target.name))
    return out


def test_a_new_employer_ends_the_old_one_through_cognify(mind: ws.Mind) -> None:
    k = mind.knowledge
    mind.cognify("Alice works at Acme.")
    before = _tick()
    mind.cognify("Alice now works at Globex; she left Acme.")

    alice = k.resolve("alice")
    assert alice is not None
    assert _names(mind, k.relations_from(alice.id, "works_at")) == [
        ("Alice", "works_at", "Globex")]
    # What was true before the change: Acme.
    assert _names(mind, [r for r in k.relations_as_of(valid=before)
                         if r.relation_type == "works_at"]) == [("Alice", "works_at", "Acme")]
    # What the store knew before the change: Acme, still open.
    [then] = [r for r in k.relations_as_of(recorded=before) if r.relation_type == "works_at"]
    assert then.valid_to is None
    # History: the Acme edge is ended, not deleted; its end is Globex's start.
    every = [r for r in k.relations_as_of() if r.relation_type == "works_at"]
    acme, globex = sorted(every, key=lambda r: r.id)
    assert acme.valid_to == globex.valid_from
    assert globex.valid_to is None
    # The walk answers the current fact.
    assert [e.name for e in k.traverse(alice.id, "works_at")] == ["Globex"]


def test_set_exclusive_per_mind(store: ws.Store) -> None:
    plain, strict = store.mind("plain").knowledge, store.mind("strict").knowledge
    for k in (plain, strict):
        ann = k.create_entity("person", "Ann Lee")
        one, two = k.create_entity("project", "Apollo"), k.create_entity("project", "Gemini")
        if k is strict:
            k.set_exclusive("leads")
            k.set_exclusive("works_at", exclusive=False)
        k.create_relation(ann.id, one.id, "leads")
        k.create_relation(ann.id, two.id, "leads")
        k.create_relation(ann.id, one.id, "works_at")
        k.create_relation(ann.id, two.id, "works_at")
        leads = [r.target_id for r in k.relations_from(ann.id, "leads")]
        works = [r.target_id for r in k.relations_from(ann.id, "works_at")]
        if k is strict:
            assert (leads, works) == ([two.id], [one.id, two.id])
        else:
            assert (leads, works) == ([one.id, two.id], [two.id])


def test_other_sources_keep_their_exclusive_relations(mind: ws.Mind) -> None:
    k = mind.knowledge
    ann, ben = k.create_entity("person", "Ann Lee"), k.create_entity("person", "Ben Ode")
    acme = k.create_entity("organization", "Acme Corp")
    k.create_relation(ann.id, acme.id, "works_at")
    k.create_relation(ben.id, acme.id, "works_at")
    assert len(k.relations_to(acme.id, "works_at")) == 2

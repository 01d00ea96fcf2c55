"""The knowledge repositories' cognify helpers (entity upserts, ensured relations, mentions,
names found in a text, the graph lock), on both dialects."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

import waggle_store as ws
from tests.integration.knowledge_helpers import count_statements, kg
from waggle_store.models import EntityRow


def test_upsert_entity_has_no_window(store: ws.Store, mind: ws.Mind) -> None:
    """With 500+ entities of a type, Waggle re-created names past its 500-row window."""
    with store.write() as session:
        for i in range(600):
            kg(session, mind.id).entities.create("concept", f"Phase {i:03d}")
        zeta = kg(session, mind.id).entities.create("concept", "Zeta Phase")
    assert "Zeta Phase" not in {
        e.name for e in mind.knowledge.entities_by_type("concept")
    }  # past 500

    with store.write() as session:
        row, created = kg(session, mind.id).entities.upsert("concept", "  ZETA   phase ")
        assert (row.id, created) == (zeta.id, False)
        again, created = kg(session, mind.id).entities.upsert("concept", "Phase 599")
        assert not created
        assert again.name == "Phase 599"
        other_type, created = kg(session, mind.id).entities.upsert("project", "Zeta Phase")
        assert created
        assert other_type.id != zeta.id
    assert mind.knowledge.entity_type_counts() == {"concept": 601, "project": 1}

    mind.knowledge.retire_entity(zeta.id)
    with store.write() as session:
        fresh, created = kg(session, mind.id).entities.upsert("concept", "Zeta Phase", {"v": 2})
    assert created
    assert fresh.id != zeta.id
    assert fresh.properties == {"v": 2}


def test_upsert_entity_matches_unicode_case_insensitively(store: ws.Store, mind: ws.Mind) -> None:
    with store.write() as session:
        first, created = kg(session, mind.id).entities.upsert("place", "Zürich")
        assert created
        same, created = kg(session, mind.id).entities.upsert("place", "ZÜRICH")
        assert (same.id, created) == (first.id, False)
        # NFKC: a decomposed "u + combining diaeresis" is the same name.
        same, created = kg(session, mind.id).entities.upsert("place", "zu\u0308rich")
        assert (same.id, created) == (first.id, False)


def test_ensure_relation_one_edge_per_unordered_pair(store: ws.Store, mind: ws.Mind) -> None:
    k = mind.knowledge
    a, b, c = (k.create_entity("tech", n) for n in ("Python", "SQLite", "Postgres"))
    with store.write() as session:
        ab, created = kg(session, mind.id).relations.ensure(
            a.id,
            b.id,
            "co_occurs_with",
            0.8,
            unordered=True,
            properties={"source": "cognify"},
        )
        assert created
        ba, created = kg(session, mind.id).relations.ensure(
            b.id, a.id, "co_occurs_with", 0.8, unordered=True
        )
        assert (ba.id, created) == (ab.id, False)
        _, created = kg(session, mind.id).relations.ensure(
            a.id, c.id, "co_occurs_with", 0.8, unordered=True
        )
        assert created
        # Directed types: B→A is a different edge from A→B, and each exists once.
        _, created = kg(session, mind.id).relations.ensure(a.id, b.id, "depends_on", 0.9)
        assert created
        _, created = kg(session, mind.id).relations.ensure(b.id, a.id, "depends_on", 0.9)
        assert created
        _, created = kg(session, mind.id).relations.ensure(b.id, a.id, "depends_on", 0.9)
        assert not created
    co = k.relations_from(a.id, "co_occurs_with") + k.relations_from(b.id, "co_occurs_with")
    assert len(co) == 2
    assert co[0].confidence == 0.8
    assert co[0].properties == {"source": "cognify"}

    k.retire_relation(ab.id)  # a retired edge does not count: the pair gets a new one
    with store.write() as session:
        _, created = kg(session, mind.id).relations.ensure(
            b.id, a.id, "co_occurs_with", 0.8, unordered=True
        )
        assert created


def test_ensure_relation_checks_ends_and_mind(store: ws.Store) -> None:
    one, two = store.mind("one"), store.mind("two")
    a = one.knowledge.create_entity("tech", "A")
    b = two.knowledge.create_entity("tech", "B")
    with pytest.raises(ws.NotFoundError), store.write() as session:
        kg(session, one.id).relations.ensure(a.id, b.id, "co_occurs_with", 0.8, unordered=True)
    with pytest.raises(ws.InvalidInputError), store.write() as session:
        kg(session, one.id).relations.ensure(a.id, a.id, "uses", 2.0)


def test_add_mention_is_idempotent(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure_active().gop_id
    frame = mind.frames.create_i(gop, "Alice leads Apollo")
    alice = mind.knowledge.create_entity("person", "Alice")
    with store.write() as session:
        assert kg(session, mind.id).mentions.add(alice.id, frame.id) is True
        assert kg(session, mind.id).mentions.add(alice.id, frame.id) is False
    with store.write() as session:
        assert kg(session, mind.id).mentions.add(alice.id, frame.id) is False
        by_frame = kg(session, mind.id).mentions.entity_ids_by_frame([frame.id, 999])
        assert by_frame == {frame.id: [alice.id]}
    with pytest.raises(ws.NotFoundError), store.write() as session:
        kg(session, mind.id).mentions.add(alice.id, 999_999)


def test_mentions_are_read_within_the_mind(store: ws.Store) -> None:
    """entity_mentions has no mind_id: reads reach the mind through the entity."""
    one, two = store.mind("one"), store.mind("two")
    frame = one.frames.create_i(one.sessions.ensure_active().gop_id, "Alice met Bob")
    alice = one.knowledge.create_entity("person", "Alice")
    bob = two.knowledge.create_entity("person", "Bob")
    with store.write() as session:
        assert kg(session, one.id).mentions.add_many(frame.id, [alice.id, alice.id]) == 1
        assert kg(session, one.id).mentions.add_many(frame.id, [alice.id]) == 0
        kg(session, two.id).mentions.add(bob.id, frame.id)  # the caller vouches for the ids
    with store.read() as session:
        in_one = kg(session, one.id).mentions.entity_ids_by_frame([frame.id])
        in_two = kg(session, two.id).mentions.entity_ids_by_frame([frame.id])
    assert in_one == {frame.id: [alice.id]}
    assert in_two == {frame.id: [bob.id]}


def test_entity_ids_named_in_whole_words(store: ws.Store, mind: ws.Mind) -> None:
    k = mind.knowledge
    sarah = k.create_entity("person", "Sarah Chen")
    apollo = k.create_entity("project", "Project Apollo")
    node = k.create_entity("tech", "node.js")
    cpp = k.create_entity("tech", "C++")
    al = k.create_entity("person", "Al")
    zurich = k.create_entity("place", "Zürich")
    gone = k.create_entity("person", "Gone Person")
    k.retire_entity(gone.id)
    other = store.mind("other").knowledge.create_entity("person", "Sarah Chen")

    def named(text: str) -> list[int]:
        with store.read() as session:
            return kg(session, mind.id).entities.named_in(text)

    text = "Yesterday PROJECT APOLLO was led by sarah   chen, using Node.js and C++ in ZÜRICH."
    assert named(text) == [apollo.id, sarah.id, node.id, cpp.id, zurich.id]  # text order
    assert named("Also, Alfred and Sarah Chenoweth came along") == []  # whole words only
    assert named("Al came too") == [al.id]
    assert named("Gone Person") == []  # retired
    assert other.id not in named("Sarah Chen")
    assert named("") == []
    assert named("!!! ...") == []
    with pytest.raises(ws.InvalidInputError):
        named(None)  # type: ignore[arg-type]


def test_entity_ids_named_in_long_text_and_many_entities(store: ws.Store, mind: ws.Mind) -> None:
    with store.write() as session:
        for i in range(700):
            kg(session, mind.id).entities.create(f"type{i % 7}", f"Entity Number {i}")
    text = " ".join(f"word{i}" for i in range(3000)) + " and entity number 642 here"
    with store.read() as session:
        ids = kg(session, mind.id).entities.named_in(text)
        (name,) = session.scalars(
            sa.select(EntityRow.name).where(EntityRow.id.in_(ids))
        ).all()
    assert name == "Entity Number 642"


def test_concurrent_upserts_create_one_entity(store: ws.Store, mind: ws.Mind) -> None:
    """Two writers upserting the same name: the second waits for the first and reuses its row."""
    import threading
    import time

    first_wrote = threading.Event()
    results: dict[str, tuple[int, bool]] = {}
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with store.write() as session:
                row, created = kg(session, mind.id).entities.upsert("person", "Race Winner")
                results["first"] = (row.id, created)
                first_wrote.set()
                time.sleep(0.5)  # hold the transaction open while the second one tries
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread below
            errors.append(exc)
            first_wrote.set()

    def second() -> None:
        first_wrote.wait(10)
        try:
            with store.write() as session:
                row, created = kg(session, mind.id).entities.upsert("person", "race winner")
                results["second"] = (row.id, created)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert results["first"][1] is True
    assert results["second"] == (results["first"][0], False)
    assert mind.knowledge.entity_type_counts() == {"person": 1}


def test_retire_entity_inside_a_unit_of_work_updates_loaded_relations(
    store: ws.Store, mind: ws.Mind
) -> None:
    """The cognify path shares one session: edge rows it already holds must see the retirement."""
    with store.write() as session:
        a, _ = kg(session, mind.id).entities.upsert("tech", "A")
        b, _ = kg(session, mind.id).entities.upsert("tech", "B")
        edge, _ = kg(session, mind.id).relations.ensure(a.id, b.id, "uses", 0.9)
        assert kg(session, mind.id).entities.retire(b.id) is True
        assert kg(session, mind.id).entities.retire(b.id) is False
        assert edge.valid_to is not None
        again, created = kg(session, mind.id).relations.ensure(a.id, a.id, "uses", 0.9)
        assert created
        assert again.id != edge.id
        with pytest.raises(ws.InvalidInputError):
            kg(session, mind.id).relations.of_entity(a.id, direction="sideways")


def test_graph_lock_is_retaken_after_a_rolled_back_savepoint(
    store: ws.Store, mind: ws.Mind
) -> None:
    """Postgres loses a row lock taken in a savepoint that rolls back; the next upsert relocks.
    SQLite sends no lock statement at all (BEGIN IMMEDIATE serialises its writers)."""

    class Abort(Exception):
        pass

    with store.write() as session:
        with count_statements(store) as seen:
            # The raise must come from inside the savepoint, after the upsert took its lock.
            with pytest.raises(Abort), session.begin_nested():  # noqa: PT012
                kg(session, mind.id).entities.upsert("person", "A")
                raise Abort
            kg(session, mind.id).entities.upsert("person", "B")
            kg(session, mind.id).entities.upsert("person", "C")  # lock held at top level now
        # Schema-qualified as the store's engine renders it (main. on SQLite, the schema on PG).
        locks = [s for s in seen if re.search(r"FROM (\S+\.)?waggle_minds\b", s)]
    assert len(locks) == (2 if store.engine.dialect.name == "postgresql" else 0)
    assert mind.knowledge.entity_type_counts() == {"person": 2}

"""mind.knowledge: entities, relations, bitemporal validity, isolation (the validation schema is
in test_knowledge_schema.py).

Every test runs on SQLite and PostgreSQL; validity times compare as instants, whatever their
written form.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

import waggle_store as ws

# -- entities ---------------------------------------------------------------------------------


def test_entity_crud_round_trip(mind: ws.Mind) -> None:
    k = mind.knowledge
    alice = k.create_entity("person", "Alice", {"email": "alice@example.com", "tags": ["a", 1]})
    got = k.get_entity(alice.id)
    assert got == alice
    assert got.properties == {"email": "alice@example.com", "tags": ["a", 1]}
    assert got.valid_to is None
    assert got.valid_from.tzinfo is not None

    renamed = k.update_entity(alice.id, name="Alice B", properties={"role": "cto"})
    assert (renamed.name, renamed.properties) == (
        "Alice B",
        {"role": "cto"},
    )  # replaced, not merged
    assert renamed.recorded_at >= alice.recorded_at

    k.retire_entity(alice.id)
    retired = k.get_entity(alice.id)
    assert retired is not None
    assert retired.valid_to is not None
    k.retire_entity(alice.id)  # retiring twice is a no-op
    assert k.get_entity(alice.id) == retired
    with pytest.raises(ws.InvalidInputError, match="retired"):
        k.update_entity(alice.id, name="Zombie")


def test_entities_by_type_and_counts(mind: ws.Mind) -> None:
    k = mind.knowledge
    alice = k.create_entity("person", "Alice")
    k.create_entity("person", "Bob")
    k.create_entity("org", "Acme")
    assert [e.name for e in k.entities_by_type("person")] == ["Alice", "Bob"]
    k.retire_entity(alice.id)
    assert [e.name for e in k.entities_by_type("person")] == ["Bob"]

    k.create_entity("person", "Carol")
    assert k.entity_count() == 3
    assert k.entity_type_counts() == {"person": 2, "org": 1}
    assert list(k.entity_type_counts()) == ["person", "org"]  # most common first


def test_search_entities_matches_substrings_active_only(mind: ws.Mind) -> None:
    k = mind.knowledge
    for name in ("Alice", "Alice Cooper", "Bob"):
        k.create_entity("person", name)
    assert [e.name for e in k.search_entities("Alice")] == ["Alice", "Alice Cooper"]
    k.create_entity("person", "Alicia")
    assert [e.name for e in k.search_entities("Ali", limit=2)] == ["Alice", "Alice Cooper"]
    bob = k.search_entities("bob")[0]
    k.retire_entity(bob.id)
    assert k.search_entities("bob") == []


def test_search_entities_is_case_insensitive_on_both_dialects(mind: ws.Mind) -> None:
    k = mind.knowledge
    k.create_entity("person", "Alice")
    k.create_entity("place", "École Normale")
    k.create_entity("place", "Straße")
    assert [e.name for e in k.search_entities("ALICE")] == ["Alice"]
    assert [e.name for e in k.search_entities("école")] == ["École Normale"]
    assert [e.name for e in k.search_entities("ÉCOLE")] == ["École Normale"]
    assert [e.name for e in k.search_entities("STRASSE")] == ["Straße"]


def test_search_entities_escapes_like_metacharacters(mind: ws.Mind) -> None:
    k = mind.knowledge
    for name in ("100% pure", "100 percent", "a_b", "axb", "back\\slash", "backslashes"):
        k.create_entity("thing", name)
    assert [e.name for e in k.search_entities("%")] == ["100% pure"]
    assert [e.name for e in k.search_entities("0%")] == ["100% pure"]
    assert [e.name for e in k.search_entities("_")] == ["a_b"]
    assert [e.name for e in k.search_entities("a_b")] == ["a_b"]
    assert [e.name for e in k.search_entities("\\")] == ["back\\slash"]
    assert [e.name for e in k.search_entities("k\\s")] == ["back\\slash"]
    assert k.search_entities("'; DROP TABLE waggle_knowledge_entities; --") == []
    assert len(k.search_entities("")) == 6


@pytest.mark.parametrize(
    ("entity_type", "name", "properties"),
    [
        ("", "x", None),
        ("   ", "x", None),
        ("person", "", None),
        ("person", "nul\x00byte", None),
        ("person\x00", "x", None),
        ("p" * 101, "x", None),
        ("person", "n" * 501, None),
        ("person", "x", ["not", "a", "dict"]),
        ("person", "x", {"nan": float("nan")}),
        ("person", "x", {"obj": object()}),
        ("person", "x", {1: "int key"}),
        (None, "x", None),
    ],
)
def test_create_entity_rejects_bad_input(
    mind: ws.Mind, entity_type: object, name: str, properties: object
) -> None:
    with pytest.raises(ws.InvalidInputError):
        mind.knowledge.create_entity(entity_type, name, properties)  # type: ignore[arg-type]
    assert mind.knowledge.entity_count() == 0


def test_times_must_be_aware(mind: ws.Mind) -> None:
    with pytest.raises(ws.InvalidInputError, match="timezone-aware"):
        mind.knowledge.create_entity("person", "x", valid_from=datetime(2025, 1, 1))
    with pytest.raises(ws.InvalidInputError):
        mind.knowledge.entities_valid_at(datetime(2025, 1, 1))
    with pytest.raises(ws.InvalidInputError):
        mind.knowledge.entities_valid_at("2025-01-01 10:00:00")  # no zone, not ISO-8601 with T
    with pytest.raises(ws.InvalidInputError, match="after valid_from"):
        mind.knowledge.create_entity(
            "person", "x", valid_from="2025-01-02T00:00:00Z", valid_to="2025-01-01T00:00:00Z"
        )


# -- bitemporal validity ------------------------------------------------------------------------


def test_retire_and_recreate_leaves_one_active(mind: ws.Mind) -> None:
    k = mind.knowledge
    old = k.create_entity("person", "Alice")
    k.retire_entity(old.id)
    new = k.create_entity("person", "Alice")
    assert [e.id for e in k.entities_by_type("person")] == [new.id]


def test_entities_valid_at_now_and_after_retirement(mind: ws.Mind) -> None:
    k = mind.knowledge
    fresh = k.create_entity("person", "Fresh")
    gone = k.create_entity("person", "Gone")
    assert {e.id for e in k.entities_valid_at(datetime.now(UTC))} == {fresh.id, gone.id}
    k.retire_entity(gone.id)
    later = datetime.now(UTC) + timedelta(seconds=60)
    assert [e.id for e in k.entities_valid_at(later)] == [fresh.id]
    # The point of bitemporality: a retired entity is still returned for a time it was valid.
    retired = k.get_entity(gone.id)
    assert retired is not None
    assert retired.valid_to is not None
    assert gone.id in {
        e.id for e in k.entities_valid_at(retired.valid_to - timedelta(microseconds=1))
    }
    assert gone.id not in {
        e.id for e in k.entities_valid_at(retired.valid_to)
    }  # valid_to exclusive


def test_entities_valid_at_explicit_windows(mind: ws.Mind) -> None:
    k = mind.knowledge
    k.create_entity(
        "fact", "Old", valid_from="2020-01-01T00:00:00Z", valid_to="2023-01-01T00:00:00Z"
    )
    k.create_entity("fact", "Current", valid_from="2020-01-01T00:00:00Z")
    k.create_entity(
        "fact", "Alpha", valid_from="2026-01-01T00:00:00Z", valid_to="2026-02-01T00:00:00Z"
    )
    k.create_entity("fact", "Beta", valid_from="2026-02-01T00:00:00Z")
    k.create_entity(
        "fact", "Expired", valid_from="2019-01-01T00:00:00Z", valid_to="2020-01-01T00:00:00Z"
    )
    k.create_entity("fact", "Future", valid_from="2030-01-01T00:00:00Z")

    def names(when: str) -> set[str]:
        return {e.name for e in k.entities_valid_at(when)}

    assert names("2022-06-01T00:00:00Z") == {"Old", "Current"}
    assert names("2025-06-01T00:00:00Z") == {"Current"}
    assert names("2026-01-15T00:00:00Z") == {"Current", "Alpha"}
    assert names("2026-02-15T00:00:00Z") == {"Current", "Beta"}
    assert "Expired" not in names("2026-06-01T00:00:00Z")
    assert "Future" not in names("2026-06-01T00:00:00Z")
    assert "Future" in names("2030-01-01T00:00:00Z")


def test_entities_valid_at_compares_times_on_the_same_day(mind: ws.Mind) -> None:
    """Waggle string-compared 'YYYY-MM-DD HH:MM:SS' with '…T…Z', so on one day the
    answer depended on ' ' < 'T', not on the time."""
    k = mind.knowledge
    late_start = k.create_entity("fact", "starts 23:00", valid_from="2026-03-10T23:00:00Z")
    late_end = k.create_entity(
        "fact",
        "ends 23:00",
        valid_from="2026-03-01T00:00:00Z",
        valid_to=datetime(2026, 3, 10, 23, 0, tzinfo=UTC),
    )

    def ids(when: datetime | str) -> set[int]:
        return {e.id for e in k.entities_valid_at(when)}

    assert ids("2026-03-10T01:00:00Z") == {late_end.id}  # ended later that day: still valid
    assert ids("2026-03-10T22:59:59Z") == {late_end.id}
    assert ids("2026-03-10T23:00:00Z") == {late_start.id}
    assert ids("2026-03-10T23:30:00Z") == {late_start.id}
    # Offsets are times, not strings: 00:30+02:00 on the 11th is 22:30Z on the 10th.
    assert ids("2026-03-11T00:30:00+02:00") == {late_end.id}
    assert ids(datetime(2026, 3, 11, 1, 30, tzinfo=timezone(timedelta(hours=2)))) == {late_start.id}


# -- relations --------------------------------------------------------------------------------


def test_relations_round_trip_and_filters(mind: ws.Mind) -> None:
    k = mind.knowledge
    alice = k.create_entity("person", "Alice")
    bob = k.create_entity("person", "Bob")
    acme = k.create_entity("org", "Acme")
    knows = k.create_relation(
        alice.id, bob.id, "knows", confidence=0.95, properties={"since": 2019}
    )
    k.create_relation(alice.id, acme.id, "works_at")
    k.create_relation(bob.id, acme.id, "works_at")
    assert k.get_relation(knows.id) == knows
    assert (knows.confidence, knows.properties) == (0.95, {"since": 2019})

    assert len(k.relations_from(alice.id)) == 2
    assert [r.target_id for r in k.relations_from(alice.id, "knows")] == [bob.id]
    assert len(k.relations_to(acme.id)) == 2
    assert k.relations_to(acme.id, "knows") == []

    k.retire_relation(knows.id)
    assert [r.relation_type for r in k.relations_from(alice.id)] == ["works_at"]
    assert k.relations_to(bob.id) == []
    retired = k.get_relation(knows.id)
    assert retired is not None
    assert retired.valid_to is not None
    k.retire_relation(knows.id)  # no-op
    assert k.get_relation(knows.id) == retired
    assert knows.id in {r.id for r in k.relations_valid_at(knows.valid_from)}
    assert knows.id not in {r.id for r in k.relations_valid_at(datetime.now(UTC))}


def test_create_relation_checks_its_ends(mind: ws.Mind) -> None:
    k = mind.knowledge
    a = k.create_entity("person", "A")
    b = k.create_entity("person", "B")
    with pytest.raises(ws.NotFoundError):
        k.create_relation(a.id, 999_999, "knows")
    with pytest.raises(ws.NotFoundError):
        k.create_relation(999_999, a.id, "knows")
    for bad in (1.5, -0.1, float("nan"), float("inf"), True, "0.5"):
        with pytest.raises(ws.InvalidInputError, match="confidence"):
            k.create_relation(a.id, b.id, "knows", confidence=bad)  # type: ignore[arg-type]
    with pytest.raises(ws.InvalidInputError):
        k.create_relation(a.id, b.id, "")
    with pytest.raises(ws.InvalidInputError):
        k.create_relation(a.id, b.id, "knows", properties=[1])  # type: ignore[arg-type]
    k.retire_entity(b.id)
    with pytest.raises(ws.InvalidInputError, match="retired"):
        k.create_relation(a.id, b.id, "knows")
    assert k.relations_from(a.id) == []


def test_retiring_an_entity_retires_its_relations(mind: ws.Mind) -> None:
    k = mind.knowledge
    a, b, c = (k.create_entity("person", n) for n in "ABC")
    ab = k.create_relation(a.id, b.id, "knows")
    cb = k.create_relation(c.id, b.id, "knows")
    ac = k.create_relation(a.id, c.id, "knows")
    k.retire_entity(b.id)
    assert [r.id for r in k.relations_from(a.id)] == [ac.id]
    assert k.relations_from(c.id) == []
    assert k.relations_to(b.id) == []
    for rid in (ab.id, cb.id):
        rel = k.get_relation(rid)
        assert rel is not None
        assert rel.valid_to is not None
    assert k.get_relation(ac.id).valid_to is None  # type: ignore[union-attr]


def test_unknown_ids_are_not_found(mind: ws.Mind) -> None:
    k = mind.knowledge
    assert k.get_entity(424242) is None
    assert k.get_relation(424242) is None
    with pytest.raises(ws.NotFoundError):
        k.retire_entity(424242)
    with pytest.raises(ws.NotFoundError):
        k.retire_relation(424242)
    with pytest.raises(ws.NotFoundError):
        k.update_entity(424242, name="x")


# -- isolation ----------------------------------------------------------------------------------


def test_minds_are_isolated(store: ws.Store) -> None:
    one, two = store.mind("one").knowledge, store.mind("two").knowledge
    a1 = one.create_entity("person", "Alice")
    b1 = one.create_entity("person", "Bob")
    r1 = one.create_relation(a1.id, b1.id, "knows")
    a2 = two.create_entity("person", "Alice")

    assert two.get_entity(a1.id) is None
    assert two.get_relation(r1.id) is None
    assert [e.id for e in two.search_entities("Alice")] == [a2.id]
    assert [e.id for e in two.entities_by_type("person")] == [a2.id]
    assert two.entity_type_counts() == {"person": 1}
    assert [e.id for e in two.entities_valid_at(datetime.now(UTC))] == [a2.id]
    assert two.relations_from(a1.id) == []
    assert two.relations_to(b1.id) == []
    with pytest.raises(ws.NotFoundError):
        two.create_relation(a2.id, b1.id, "knows")  # another mind's entity is "not found"
    with pytest.raises(ws.NotFoundError):
        two.retire_entity(a1.id)
    with pytest.raises(ws.NotFoundError):
        two.retire_relation(r1.id)
    with pytest.raises(ws.NotFoundError):
        two.traverse(a1.id)
    with pytest.raises(ws.NotFoundError):
        two.bfs_distances(a1.id)
    with pytest.raises(ws.NotFoundError):
        two.update_entity(a1.id, name="hijack")
    assert one.get_entity(a1.id) == a1
    assert one.get_relation(r1.id) == r1

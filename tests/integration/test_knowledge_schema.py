"""mind.knowledge's validation schema: required properties, allowed relations, storage per
mind, and the explicit schema the repositories' writes take, on both dialects."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import waggle_store as ws
from tests.integration.knowledge_helpers import kg


def test_validation_schema_required_properties(mind: ws.Mind) -> None:
    k = mind.knowledge
    k.set_validation_schema(ws.ValidationSchema(required_properties={"person": ["email"]}))
    with pytest.raises(ws.ValidationError, match="required property 'email'"):
        k.create_entity("person", "Alice")
    with pytest.raises(
        ws.ValidationError, match="required property 'email' missing for type 'person'"
    ):
        k.create_entity("person", "Alice", {"phone": "1"})
    alice = k.create_entity("person", "Alice", {"email": "a@x"})
    k.create_entity("org", "Acme")  # a type with no schema entry passes
    with pytest.raises(ws.ValidationError, match="email"):
        k.update_entity(alice.id, properties={"phone": "1"})
    assert k.entity_type_counts() == {"org": 1, "person": 1}
    assert isinstance(ws.ValidationError("x"), ws.InvalidInputError)


def test_validation_schema_allowed_relations(mind: ws.Mind) -> None:
    k = mind.knowledge
    k.set_validation_schema(
        ws.ValidationSchema(
            allowed_relations=[
                ("person", "works_at", "org"),
                ("person", "knows", "person"),
                ("*", "co_occurs_with", "*"),
            ]
        )
    )
    alice = k.create_entity("person", "Alice")
    bob = k.create_entity("person", "Bob")
    acme = k.create_entity("org", "Acme")
    k.create_relation(alice.id, acme.id, "works_at")
    k.create_relation(alice.id, bob.id, "knows")
    k.create_relation(acme.id, bob.id, "co_occurs_with")
    with pytest.raises(ws.ValidationError, match="relation 'dislikes' not allowed"):
        k.create_relation(alice.id, bob.id, "dislikes")
    with pytest.raises(ws.ValidationError, match="relation 'works_at' not allowed from type 'org'"):
        k.create_relation(acme.id, alice.id, "works_at")  # the triple is directional
    with pytest.raises(ws.ValidationError, match="relation 'knows' not allowed"):
        k.create_relation(alice.id, acme.id, "knows")
    assert len(k.relations_from(alice.id)) == 2


def test_validation_schema_is_stored_per_mind(store_factory: Callable[..., ws.Store]) -> None:
    store = store_factory()
    schema = ws.ValidationSchema(
        required_properties={"person": ["email", "name"]},
        allowed_relations=[("person", "knows", "person")],
    )
    store.mind("a").knowledge.set_validation_schema(schema)
    store.mind("b").knowledge.create_entity("person", "No Email")  # other mind: unaffected

    reopened = store_factory()
    assert reopened.mind("a").knowledge.validation_schema() == schema
    assert reopened.mind("b").knowledge.validation_schema() is None
    reopened.mind("a").knowledge.set_validation_schema(None)
    assert store.mind("a").knowledge.validation_schema() is None
    store.mind("a").knowledge.create_entity("person", "No Email")


@pytest.mark.parametrize(
    "bad",
    [
        {"person": "email"},
        ws.ValidationSchema(required_properties={"person": "email"}),  # type: ignore[dict-item]
        ws.ValidationSchema(allowed_relations=[("person", "knows")]),  # type: ignore[list-item]
        ws.ValidationSchema(allowed_relations=[("person", "knows", 3)]),  # type: ignore[list-item]
    ],
)
def test_validation_schema_rejects_malformed_schemas(mind: ws.Mind, bad: object) -> None:
    with pytest.raises(ws.InvalidInputError):
        mind.knowledge.set_validation_schema(bad)  # type: ignore[arg-type]
    assert mind.knowledge.validation_schema() is None


def test_repository_writes_take_an_explicit_schema(store: ws.Store, mind: ws.Mind) -> None:
    """The cognify path loads the schema once per transaction and passes it to each write."""
    mind.knowledge.set_validation_schema(
        ws.ValidationSchema(
            required_properties={"person": ["email"]}, allowed_relations=[("tech", "uses", "tech")]
        )
    )
    with store.write() as session:
        schema = kg(session, mind.id).schema.get()
        with pytest.raises(ws.ValidationError):
            kg(session, mind.id).entities.upsert("person", "Alice", {}, schema=schema)
        a, _ = kg(session, mind.id).entities.upsert("tech", "Python", schema=schema)
        b, _ = kg(session, mind.id).entities.upsert("tech", "SQLite", schema=schema)
        with pytest.raises(ws.ValidationError):
            kg(session, mind.id).relations.ensure(a.id, b.id, "co_occurs_with", 0.8, schema=schema)
        kg(session, mind.id).relations.ensure(a.id, b.id, "uses", 0.8, schema=schema)
        # Without a schema argument the repository does not enforce one.
        kg(session, mind.id).entities.upsert("person", "Bob")
    assert mind.knowledge.entity_type_counts() == {"tech": 2, "person": 1}

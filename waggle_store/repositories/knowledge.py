"""Knowledge-graph repository: entities, relations, mentions and the mind's validation schema.

Every function takes the caller's Session and never commits, so the cognify pipeline can write a
frame, its entities, mentions and edges in one transaction. Every query is filtered by
``mind_id``: an id from another mind behaves exactly like an id that does not exist.

"Active" means ``valid_to IS NULL``. Retiring sets ``valid_to`` and never deletes a row, so
``entities_valid_at`` can still answer what was true at a past time (bitemporality).

The graph walks (traverse, distances, names in a text) live in
:mod:`waggle_store.repositories.knowledge_graph` and the validation schema in
:mod:`waggle_store.repositories.knowledge_schema`; both are re-exported here.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store import textinput
from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models import MindRow
from waggle_store.models.knowledge import EntityRow, RelationRow
from waggle_store.records import Entity, Relation, ValidationSchema
from waggle_store.repositories.knowledge_graph import (
    MAX_DEPTH,
    add_mention,
    entity_ids_named_in,
    graph_distances,
    mentioned_entity_ids,
    name_key,
    traverse,
)
from waggle_store.repositories.knowledge_schema import (
    SCHEMA_SETTINGS_KEY,
    check_entity,
    check_relation,
    get_validation_schema,
    set_validation_schema,
)
from waggle_store.timeutil import utcnow

__all__ = [
    "MAX_DEPTH",
    "SCHEMA_SETTINGS_KEY",
    "active_entity",
    "add_mention",
    "check_entity",
    "check_relation",
    "create_entity",
    "create_relation",
    "ensure_relation",
    "entities_by_type",
    "entities_valid_at",
    "entity_ids_named_in",
    "entity_type_counts",
    "get_entity",
    "get_relation",
    "get_validation_schema",
    "graph_distances",
    "lock_graph",
    "mentioned_entity_ids",
    "name_key",
    "relations",
    "relations_valid_at",
    "retire_entity",
    "retire_relation",
    "search_entities",
    "set_validation_schema",
    "to_entity",
    "to_relation",
    "traverse",
    "update_entity",
    "upsert_entity",
]

MAX_TYPE_LENGTH = 100  # the entity_type / relation_type columns are VARCHAR(100)
MAX_NAME_LENGTH = 500
_LOCK_INFO_KEY = "waggle_store.knowledge.graph_lock"


# -- input checks and conversions -------------------------------------------------------------


def _check_label(value: object, what: str, max_length: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string, got {value!r}")
    if "\x00" in value:
        raise InvalidInputError(f"{what} must not contain NUL characters")
    if len(value) > max_length:
        raise InvalidInputError(f"{what} is {len(value)} characters long; the limit is {max_length}")
    return value


def _check_properties(value: object) -> dict[str, Any]:
    """Properties are a JSON object; checked here so a bad value fails before any SQL runs."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"properties must be a dict, got {type(value).__name__}")
    if not all(isinstance(k, str) for k in value):
        raise InvalidInputError("property names must be strings")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"properties must be JSON-serialisable: {exc}") from exc
    return dict(value)


def _check_confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"confidence must be a number between 0 and 1, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, got {value!r}")
    return float(value)


def _check_limit(limit: object) -> int:
    return textinput.check_limit(limit)


def to_entity(row: EntityRow) -> Entity:
    return Entity(row.id, row.entity_type, row.name, dict(row.properties or {}),
                  row.valid_from, row.valid_to, row.recorded_at)


def to_relation(row: RelationRow) -> Relation:
    return Relation(row.id, row.source_id, row.target_id, row.relation_type, row.confidence,
                    dict(row.properties or {}), row.valid_from, row.valid_to, row.recorded_at)


def _active() -> sa.ColumnElement[bool]:
    return EntityRow.valid_to.is_(None)


def lock_graph(session: Session, mind_id: int) -> None:
    """Serialise get-or-create writes to one mind's graph for the rest of the transaction.

    Without a unique index on (mind, type, name_key), two Postgres transactions could both miss
    an entity and both insert it. Locking the mind row (``FOR NO KEY UPDATE``, so frame inserts
    referencing the mind are not blocked) makes the check-then-insert atomic per mind. SQLite
    needs nothing: its writers are already serialised by ``BEGIN IMMEDIATE`` and the clause is
    not rendered there.

    The lock is taken once per (transaction or savepoint): Postgres drops a row lock taken
    inside a savepoint that is rolled back, so a lock taken in a savepoint only counts for it.
    """
    root = session.get_transaction()
    scope = session.get_nested_transaction() or root
    held: tuple[object, dict[object, set[int]]] | None = session.info.get(_LOCK_INFO_KEY)
    if held is None or held[0] is not root:
        held = (root, {})
        session.info[_LOCK_INFO_KEY] = held
    if mind_id in held[1].get(root, ()) or mind_id in held[1].get(scope, ()):
        return
    session.execute(sa.select(MindRow.id).where(MindRow.id == mind_id).with_for_update(key_share=True))
    held[1].setdefault(scope, set()).add(mind_id)


# -- entities ---------------------------------------------------------------------------------


def get_entity(session: Session, mind_id: int, entity_id: int) -> EntityRow | None:
    return session.scalar(sa.select(EntityRow).where(EntityRow.id == entity_id,
                                                     EntityRow.mind_id == mind_id))


def active_entity(session: Session, mind_id: int, entity_id: int) -> EntityRow:
    """The entity, which must exist in this mind (NotFoundError) and be active (InvalidInputError)."""
    row = get_entity(session, mind_id, entity_id)
    if row is None:
        raise NotFoundError(f"entity {entity_id} does not exist in this mind")
    if row.valid_to is not None:
        raise InvalidInputError(f"entity {entity_id} ({row.name!r}) is retired")
    return row


def create_entity(session: Session, mind_id: int, entity_type: str, name: str,
                  properties: dict[str, Any] | None = None, *, valid_from: datetime | None = None,
                  valid_to: datetime | None = None,
                  schema: ValidationSchema | None = None) -> EntityRow:
    """Always inserts (use :func:`upsert_entity` to reuse an existing entity of that name).

    ``valid_to`` records a fact that was true only in the past (it must be after valid_from).
    """
    entity_type = _check_label(entity_type, "entity_type", MAX_TYPE_LENGTH)
    name = _check_label(name, "name", MAX_NAME_LENGTH)
    props = _check_properties(properties)
    check_entity(schema, entity_type, props)
    now = utcnow()
    start = valid_from or now
    if valid_to is not None and valid_to <= start:
        raise InvalidInputError(f"valid_to ({valid_to.isoformat()}) must be after valid_from "
                                f"({start.isoformat()})")
    row = EntityRow(mind_id=mind_id, entity_type=entity_type, name=name, name_key=name_key(name),
                    properties=props, valid_from=start, valid_to=valid_to, recorded_at=now)
    session.add(row)
    session.flush()
    return row


def update_entity(session: Session, mind_id: int, entity_id: int, *, name: str | None = None,
                  properties: dict[str, Any] | None = None,
                  schema: ValidationSchema | None = None) -> EntityRow:
    """Rename and/or replace (not merge) the properties, as the seed does; retired rows are history."""
    row = active_entity(session, mind_id, entity_id)
    if name is not None:
        row.name = _check_label(name, "name", MAX_NAME_LENGTH)
        row.name_key = name_key(row.name)
    if properties is not None:
        props = _check_properties(properties)
        check_entity(schema, row.entity_type, props)
        row.properties = props
    row.recorded_at = utcnow()
    session.flush()
    return row


def upsert_entity(session: Session, mind_id: int, entity_type: str, name: str,
                  properties: dict[str, Any] | None = None, *,
                  schema: ValidationSchema | None = None) -> tuple[EntityRow, bool]:
    """The active entity of this exact type and case-folded name, created if there is none.

    Matches through the (mind_id, entity_type, name_key) index over every active row: no
    500-row window (reference §23.11). Returns ``(row, created)``; an existing row is returned
    unchanged. Takes the per-mind graph lock (see :func:`lock_graph`).
    """
    entity_type = _check_label(entity_type, "entity_type", MAX_TYPE_LENGTH)
    name = _check_label(name, "name", MAX_NAME_LENGTH)
    lock_graph(session, mind_id)
    row = session.scalar(
        sa.select(EntityRow)
        .where(EntityRow.mind_id == mind_id, EntityRow.entity_type == entity_type,
               EntityRow.name_key == name_key(name), _active())
        .order_by(EntityRow.id).limit(1)
    )
    if row is not None:
        return row, False
    return create_entity(session, mind_id, entity_type, name, properties, schema=schema), True


def search_entities(session: Session, mind_id: int, query: str, limit: int = 100) -> list[EntityRow]:
    """Active entities whose name contains ``query`` (case-insensitive, LIKE metacharacters literal)."""
    limit = _check_limit(limit)
    # The rules every read API shares (waggle_store.textinput): C* characters scrubbed, LIKE
    # metacharacters literal; a query longer than any stored key cannot be inside one (and
    # would make SQLite's LIKE give up: "pattern too complex"). NFKC grows a character into at
    # most 18, so no key is longer than MAX_NAME_LENGTH * 18.
    folded = name_key(textinput.check_query(query))  # the same folding as the stored keys
    if len(folded) > MAX_NAME_LENGTH * 18:
        return []
    pattern = textinput.like_contains(folded)
    return list(session.scalars(
        sa.select(EntityRow)
        .where(EntityRow.mind_id == mind_id, _active(), EntityRow.name_key.like(pattern, escape="\\"))
        .order_by(EntityRow.name, EntityRow.id).limit(limit)
    ))


def entities_by_type(session: Session, mind_id: int, entity_type: str,
                     limit: int = 500) -> list[EntityRow]:
    return list(session.scalars(
        sa.select(EntityRow)
        .where(EntityRow.mind_id == mind_id, EntityRow.entity_type == entity_type, _active())
        .order_by(EntityRow.name, EntityRow.id).limit(_check_limit(limit))
    ))


def entity_type_counts(session: Session, mind_id: int) -> dict[str, int]:
    """Active entities per type, most common first."""
    count = sa.func.count(EntityRow.id)
    rows = session.execute(
        sa.select(EntityRow.entity_type, count)
        .where(EntityRow.mind_id == mind_id, _active())
        .group_by(EntityRow.entity_type).order_by(count.desc(), EntityRow.entity_type)
    )
    return {entity_type: int(n) for entity_type, n in rows}


def entities_valid_at(session: Session, mind_id: int, when: datetime,
                      limit: int = 500) -> list[EntityRow]:
    """Entities true in the world at ``when``, retired ones included: a time comparison, not a string one."""
    return list(session.scalars(
        sa.select(EntityRow)
        .where(EntityRow.mind_id == mind_id, EntityRow.valid_from <= when,
               sa.or_(EntityRow.valid_to.is_(None), EntityRow.valid_to > when))
        .order_by(EntityRow.name, EntityRow.id).limit(_check_limit(limit))
    ))


def retire_entity(session: Session, mind_id: int, entity_id: int) -> bool:
    """Retire the entity and its active relations (both directions) at the same instant.

    An edge to something no longer true is no longer true either; retiring the edges too keeps
    ``relations_from``/``relations_to`` and the walks consistent while the history stays
    queryable. Returns False when the entity was already retired (a no-op).
    """
    row = get_entity(session, mind_id, entity_id)
    if row is None:
        raise NotFoundError(f"entity {entity_id} does not exist in this mind")
    if row.valid_to is not None:
        return False
    now = utcnow()
    row.valid_to = max(now, row.valid_from)  # never a window that ends before it starts
    session.execute(
        sa.update(RelationRow)
        .where(RelationRow.mind_id == mind_id, RelationRow.valid_to.is_(None),
               sa.or_(RelationRow.source_id == entity_id, RelationRow.target_id == entity_id))
        .values(valid_to=sa.case((RelationRow.valid_from > now, RelationRow.valid_from), else_=now))
        .execution_options(synchronize_session="fetch")  # relation rows already loaded stay true
    )
    session.flush()
    return True


# -- relations --------------------------------------------------------------------------------


def get_relation(session: Session, mind_id: int, relation_id: int) -> RelationRow | None:
    return session.scalar(sa.select(RelationRow).where(RelationRow.id == relation_id,
                                                       RelationRow.mind_id == mind_id))


def _endpoints(session: Session, mind_id: int, source_id: int,
               target_id: int) -> tuple[EntityRow, EntityRow]:
    return active_entity(session, mind_id, source_id), active_entity(session, mind_id, target_id)


def create_relation(session: Session, mind_id: int, source_id: int, target_id: int,
                    relation_type: str, *, confidence: float = 1.0,
                    properties: dict[str, Any] | None = None,
                    schema: ValidationSchema | None = None) -> RelationRow:
    """Always inserts (use :func:`ensure_relation` for "at most one such edge")."""
    relation_type = _check_label(relation_type, "relation_type", MAX_TYPE_LENGTH)
    confidence = _check_confidence(confidence)
    props = _check_properties(properties)
    source, target = _endpoints(session, mind_id, source_id, target_id)
    check_relation(schema, source.entity_type, relation_type, target.entity_type)
    now = utcnow()
    row = RelationRow(mind_id=mind_id, source_id=source.id, target_id=target.id,
                      relation_type=relation_type, confidence=confidence, properties=props,
                      valid_from=now, valid_to=None, recorded_at=now)
    session.add(row)
    session.flush()
    return row


def ensure_relation(session: Session, mind_id: int, source_id: int, target_id: int,
                    relation_type: str, confidence: float = 1.0, *, unordered: bool = False,
                    properties: dict[str, Any] | None = None,
                    schema: ValidationSchema | None = None) -> tuple[RelationRow, bool]:
    """The active edge of this type between the two entities, created if there is none.

    ``unordered=True`` (for symmetric types such as ``co_occurs_with``) treats A→B and B→A as
    the same edge, so a pair gets one edge whatever order the texts name it in (the seed checked
    one direction only, §23.11). An existing edge is returned unchanged. Takes the graph lock.
    """
    relation_type = _check_label(relation_type, "relation_type", MAX_TYPE_LENGTH)
    _check_confidence(confidence)
    lock_graph(session, mind_id)
    pair = sa.and_(RelationRow.source_id == source_id, RelationRow.target_id == target_id)
    if unordered:
        pair = sa.or_(pair, sa.and_(RelationRow.source_id == target_id,
                                    RelationRow.target_id == source_id))
    row = session.scalar(
        sa.select(RelationRow)
        .where(RelationRow.mind_id == mind_id, RelationRow.relation_type == relation_type,
               RelationRow.valid_to.is_(None), pair)
        .order_by(RelationRow.id).limit(1)
    )
    if row is not None:
        return row, False
    return create_relation(session, mind_id, source_id, target_id, relation_type,
                           confidence=confidence, properties=properties, schema=schema), True


def relations(session: Session, mind_id: int, entity_id: int, relation_type: str | None = None,
              *, direction: str = "from") -> list[RelationRow]:
    """Active relations leaving (``direction="from"``) or entering (``"to"``) an entity."""
    if direction not in ("from", "to"):
        raise InvalidInputError(f"direction must be 'from' or 'to', got {direction!r}")
    column = RelationRow.source_id if direction == "from" else RelationRow.target_id
    query = sa.select(RelationRow).where(RelationRow.mind_id == mind_id, column == entity_id,
                                         RelationRow.valid_to.is_(None))
    if relation_type is not None:
        query = query.where(RelationRow.relation_type == relation_type)
    return list(session.scalars(query.order_by(RelationRow.id)))


def relations_valid_at(session: Session, mind_id: int, when: datetime,
                       limit: int = 500) -> list[RelationRow]:
    return list(session.scalars(
        sa.select(RelationRow)
        .where(RelationRow.mind_id == mind_id, RelationRow.valid_from <= when,
               sa.or_(RelationRow.valid_to.is_(None), RelationRow.valid_to > when))
        .order_by(RelationRow.id).limit(_check_limit(limit))
    ))


def retire_relation(session: Session, mind_id: int, relation_id: int) -> bool:
    """Set ``valid_to``; False when it was already retired (a no-op)."""
    row = get_relation(session, mind_id, relation_id)
    if row is None:
        raise NotFoundError(f"relation {relation_id} does not exist in this mind")
    if row.valid_to is not None:
        return False
    row.valid_to = max(utcnow(), row.valid_from)
    session.flush()
    return True

"""Typed, bitemporal edges between two entities of one mind.

Takes the caller's Session and never commits; every query is filtered by ``mind_id``. Both ends
of a new edge must be active entities of this mind. Writes take the mind's ValidationSchema as
an argument (loaded once per transaction by the caller) and check the (source type, relation,
target type) triple against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError, ValidationError
from waggle_store.models.knowledge import RelationRow
from waggle_store.records import ValidationSchema
from waggle_store.repositories.entities import EntityRepository
from waggle_store.repositories.exclusive import ExclusiveRepository
from waggle_store.repositories.knowledge_common import (
    MAX_TYPE_LENGTH,
    EdgeSpec,
    check_confidence,
    check_label,
    check_limit,
    check_properties,
    lock_graph,
)
from waggle_store.repositories.knowledge_schema import check_relation
from waggle_store.repositories.versions import VersionRepository
from waggle_store.timeutil import utcnow


class RelationRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    # -- reads --------------------------------------------------------------------------------

    def get(self, relation_id: int) -> RelationRow | None:
        return self.session.scalar(sa.select(RelationRow).where(
            RelationRow.id == relation_id, RelationRow.mind_id == self.mind_id))

    def of_entity(self, entity_id: int, relation_type: str | None = None, *,
                  direction: str = "from") -> list[RelationRow]:
        """Active relations leaving (``direction="from"``) or entering (``"to"``) an entity."""
        if direction not in ("from", "to"):
            raise InvalidInputError(f"direction must be 'from' or 'to', got {direction!r}")
        column = RelationRow.source_id if direction == "from" else RelationRow.target_id
        query = sa.select(RelationRow).where(RelationRow.mind_id == self.mind_id,
                                             column == entity_id, RelationRow.valid_to.is_(None))
        if relation_type is not None:
            query = query.where(RelationRow.relation_type == relation_type)
        return list(self.session.scalars(query.order_by(RelationRow.id)))

    def valid_at(self, when: datetime, limit: int = 500) -> list[RelationRow]:
        return list(self.session.scalars(
            sa.select(RelationRow)
            .where(RelationRow.mind_id == self.mind_id, RelationRow.valid_from <= when,
                   sa.or_(RelationRow.valid_to.is_(None), RelationRow.valid_to > when))
            .order_by(RelationRow.id).limit(check_limit(limit))
        ))

    # -- writes -------------------------------------------------------------------------------

    def create(self, source_id: int, target_id: int, relation_type: str, *,
               confidence: float = 1.0, properties: dict[str, Any] | None = None,
               schema: ValidationSchema | None = None) -> RelationRow:
        """Insert an edge; an active edge is unique per (source, target, type), so creating one
        that exists already returns the existing row unchanged."""
        relation_type = check_label(relation_type, "relation_type", MAX_TYPE_LENGTH)
        confidence = check_confidence(confidence)
        props = check_properties(properties)
        entities = EntityRepository(self.session, self.mind_id)
        source, target = entities.require_active(source_id), entities.require_active(target_id)
        check_relation(schema, source.entity_type, relation_type, target.entity_type)
        lock_graph(self.session, self.mind_id)
        existing = self.session.scalar(sa.select(RelationRow).where(
            RelationRow.mind_id == self.mind_id, RelationRow.source_id == source.id,
            RelationRow.target_id == target.id, RelationRow.relation_type == relation_type,
            RelationRow.valid_to.is_(None)))
        if existing is not None:
            return existing
        now = utcnow()
        row = RelationRow(mind_id=self.mind_id, source_id=source.id, target_id=target.id,
                          relation_type=relation_type, confidence=confidence, properties=props,
                          valid_from=now, valid_to=None, recorded_at=now, version=1)
        self.session.add(row)
        self.session.flush()
        ExclusiveRepository(self.session, self.mind_id).supersede([row])
        return row

    def ensure(self, source_id: int, target_id: int, relation_type: str,
               confidence: float = 1.0, *, unordered: bool = False,
               properties: dict[str, Any] | None = None,
               schema: ValidationSchema | None = None) -> tuple[RelationRow, bool]:
        """The active edge of this type between the two entities, created if there is none.

        ``unordered=True`` (for symmetric types such as ``co_occurs_with``) treats A→B and B→A
        as the same edge, so a pair gets one edge whatever order the texts name it in
        (both directions are checked). An existing edge is returned unchanged. Takes the
        per-mind graph lock: no unique index can say "one active edge per unordered pair".
        """
        relation_type = check_label(relation_type, "relation_type", MAX_TYPE_LENGTH)
        check_confidence(confidence)
        lock_graph(self.session, self.mind_id)
        pair = sa.and_(RelationRow.source_id == source_id, RelationRow.target_id == target_id)
        if unordered:
            pair = sa.or_(pair, sa.and_(RelationRow.source_id == target_id,
                                        RelationRow.target_id == source_id))
        row = self.session.scalar(
            sa.select(RelationRow)
            .where(RelationRow.mind_id == self.mind_id, RelationRow.relation_type == relation_type,
                   RelationRow.valid_to.is_(None), pair)
            .order_by(RelationRow.id).limit(1)
        )
        if row is not None:
            return row, False
        return self.create(source_id, target_id, relation_type, confidence=confidence,
                           properties=properties, schema=schema), True

    def ensure_many(self, edges: Sequence[EdgeSpec], types: dict[int, str],
                    schema: ValidationSchema | None) -> tuple[int, list[str]]:
        """:meth:`ensure` for a set: create the edges that do not exist yet; (created, refusals).

        One SELECT for what exists plus one INSERT for what is missing (cognify's write path).
        ``types`` maps each endpoint id to its entity type, for the schema's relation triples;
        the endpoints are the caller's just-upserted entities of this mind, so they are not
        looked up again.
        """
        if not edges:
            return 0, []
        lock_graph(self.session, self.mind_id)
        ids = {e.source_id for e in edges} | {e.target_id for e in edges}
        existing: set[tuple[int, int, str]] = set()
        for source_id, target_id, rtype in self.session.execute(
            sa.select(RelationRow.source_id, RelationRow.target_id, RelationRow.relation_type)
            .where(
                RelationRow.mind_id == self.mind_id, RelationRow.valid_to.is_(None),
                RelationRow.source_id.in_(ids), RelationRow.target_id.in_(ids),
                RelationRow.relation_type.in_({e.relation_type for e in edges}),
            )
        ):
            existing.add((source_id, target_id, rtype))
        refused: list[str] = []
        now = utcnow()
        new: list[RelationRow] = []
        for edge in edges:
            key = (edge.source_id, edge.target_id, edge.relation_type)
            twin = (edge.target_id, edge.source_id, edge.relation_type)
            if key in existing or (edge.unordered and twin in existing):
                continue
            try:
                check_relation(schema, types[edge.source_id], edge.relation_type,
                               types[edge.target_id])
            except ValidationError as exc:
                refused.append(str(exc))
                continue
            existing.add(key)
            new.append(RelationRow(mind_id=self.mind_id, source_id=edge.source_id,
                                   target_id=edge.target_id, relation_type=edge.relation_type,
                                   confidence=edge.confidence, properties=dict(edge.properties),
                                   valid_from=now, valid_to=None, recorded_at=now, version=1))
        if new:
            self.session.add_all(new)
            self.session.flush()
            ExclusiveRepository(self.session, self.mind_id).supersede(new)
        return len(new), refused

    def retire(self, relation_id: int) -> bool:
        """Set ``valid_to``; False when it was already retired (a no-op)."""
        row = self.get(relation_id)
        if row is None:
            raise NotFoundError(f"relation {relation_id} does not exist in this mind")
        if row.valid_to is not None:
            return False
        now = utcnow()
        versions = VersionRepository(self.session, self.mind_id)
        versions.keep_relations(RelationRow.id == relation_id, now)
        self.session.execute(
            sa.update(RelationRow).where(RelationRow.id == relation_id)
            .values(valid_to=max(now, row.valid_from), **versions.moved_on(now))
            .execution_options(synchronize_session="fetch"))
        self.session.flush()
        return True

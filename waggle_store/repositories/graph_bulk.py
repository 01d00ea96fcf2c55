"""Set-at-a-time graph writes for the cognify pipeline.

Cognify writes a handful of entities, mentions and edges per text. Doing that one get-or-create
at a time costs dozens of statements per memory (the first ingest benchmark ran at 12 turns/s);
here each kind of write is one SELECT for what exists plus one INSERT for what is missing. The
rules are those of :mod:`waggle_store.repositories.knowledge`: entities match on (type,
case-folded name) among active rows with no window, an unordered edge type has one edge per
pair, and writes take the per-mind graph lock so the check-then-insert is atomic on Postgres.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import ValidationError
from waggle_store.models import EntityMentionRow, EntityRow, RelationRow
from waggle_store.records import ValidationSchema
from waggle_store.repositories.knowledge import lock_graph
from waggle_store.repositories.knowledge_graph import name_key
from waggle_store.repositories.knowledge_schema import check_entity, check_relation
from waggle_store.timeutil import utcnow


@dataclass(frozen=True)
class EntitySpec:
    entity_type: str
    name: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class EdgeSpec:
    source_id: int
    target_id: int
    relation_type: str
    confidence: float
    properties: dict[str, Any]
    unordered: bool = False


def upsert_entities(session: Session, mind_id: int, specs: Sequence[EntitySpec],
                    schema: ValidationSchema | None) -> tuple[list[EntityRow | None], list[str]]:
    """Rows for the specs, in order (None where the schema refuses one), and the refusals."""
    lock_graph(session, mind_id)
    keys = [(s.entity_type, name_key(s.name)) for s in specs]
    found: dict[tuple[str, str], EntityRow] = {}
    if keys:
        rows = session.scalars(
            sa.select(EntityRow)
            .where(EntityRow.mind_id == mind_id, EntityRow.valid_to.is_(None),
                   sa.tuple_(EntityRow.entity_type, EntityRow.name_key).in_(list(set(keys))))
            .order_by(EntityRow.id)
        )
        for existing in rows:
            found.setdefault((existing.entity_type, existing.name_key), existing)
    refused: list[str] = []
    now = utcnow()
    new: list[EntityRow] = []
    out: list[EntityRow | None] = []
    for spec, key in zip(specs, keys, strict=True):
        row = found.get(key)
        if row is None:
            try:
                check_entity(schema, spec.entity_type, spec.properties)
            except ValidationError as exc:
                refused.append(str(exc))
                out.append(None)
                continue
            row = EntityRow(mind_id=mind_id, entity_type=spec.entity_type, name=spec.name,
                            name_key=key[1], properties=dict(spec.properties), valid_from=now,
                            valid_to=None, recorded_at=now)
            found[key] = row
            new.append(row)
        out.append(row)
    if new:
        session.add_all(new)
        session.flush()
    return out, refused


def ensure_edges(session: Session, mind_id: int, edges: Sequence[EdgeSpec],
                 types: dict[int, str], schema: ValidationSchema | None) -> tuple[int, list[str]]:
    """Create the edges that do not exist yet; returns (created, refusals).

    ``types`` maps each endpoint id to its entity type, for the schema's relation triples.
    """
    if not edges:
        return 0, []
    lock_graph(session, mind_id)
    ids = {e.source_id for e in edges} | {e.target_id for e in edges}
    existing: set[tuple[int, int, str]] = set()
    for source_id, target_id, rtype in session.execute(
        sa.select(RelationRow.source_id, RelationRow.target_id, RelationRow.relation_type).where(
            RelationRow.mind_id == mind_id, RelationRow.valid_to.is_(None),
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
            check_relation(schema, types[edge.source_id], edge.relation_type, types[edge.target_id])
        except ValidationError as exc:
            refused.append(str(exc))
            continue
        existing.add(key)
        new.append(RelationRow(mind_id=mind_id, source_id=edge.source_id, target_id=edge.target_id,
                               relation_type=edge.relation_type, confidence=edge.confidence,
                               properties=dict(edge.properties), valid_from=now, valid_to=None,
                               recorded_at=now))
    if new:
        session.add_all(new)
        session.flush()
    return len(new), refused


def add_mentions(session: Session, frame_id: int, entity_ids: Sequence[int]) -> int:
    """Record that the frame mentions these entities; returns how many were new."""
    wanted = set(entity_ids)
    if not wanted:
        return 0
    have = set(session.scalars(
        sa.select(EntityMentionRow.entity_id).where(EntityMentionRow.frame_id == frame_id,
                                                    EntityMentionRow.entity_id.in_(wanted))
    ))
    missing = sorted(wanted - have)
    if missing:
        session.execute(sa.insert(EntityMentionRow),
                        [{"entity_id": e, "frame_id": frame_id} for e in missing])
    return len(missing)

"""Adding an alias to a mind: its existing entities are re-keyed, and two that become one are
merged.

An alias changes the resolved key of the active entities that had the alias's key. Where the
canonical name already has an active entity of the same type, the two are one entity now: the
older keeps its id and receives the other's mentions and active relations (edges it has already
are not doubled); the other is retired, so its own history stays readable in recorded time.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.models.knowledge import EntityMentionRow, EntityRow, RelationRow
from waggle_store.repositories.aliases import AliasRepository
from waggle_store.repositories.entities import EntityRepository
from waggle_store.repositories.knowledge_common import lock_graph
from waggle_store.repositories.relations import RelationRepository

__all__ = ["add_alias", "merge_entity", "rekey"]


def add_alias(session: Session, mind_id: int, alias: str, canonical_name: str) -> int:
    """Record the alias and re-key the mind's entities; returns how many entities merged."""
    lock_graph(session, mind_id)
    alias_key, canonical_key = AliasRepository(session, mind_id).add(alias, canonical_name)
    return rekey(session, mind_id, alias_key, canonical_key)


def rekey(session: Session, mind_id: int, alias_key: str, canonical_key: str) -> int:
    """Give the mind's entities keyed ``alias_key`` the key ``canonical_key`` (an alias of that
    key was just recorded), merging each active one into the active entity of its type that
    has the canonical key; returns how many merged. The caller holds the graph lock."""
    rows = list(session.scalars(
        sa.select(EntityRow).where(EntityRow.mind_id == mind_id,
                                   EntityRow.resolved_key == alias_key)
        .order_by(EntityRow.id)))
    merged = 0
    for row in rows:
        if row.valid_to is not None:
            row.resolved_key = canonical_key  # history: re-keyed, never merged
            continue
        into = session.scalar(
            sa.select(EntityRow).where(EntityRow.mind_id == mind_id,
                                       EntityRow.entity_type == row.entity_type,
                                       EntityRow.resolved_key == canonical_key,
                                       EntityRow.valid_to.is_(None)))
        if into is None:
            row.resolved_key = canonical_key
            session.flush()
            continue
        keep, drop = (into, row) if into.id < row.id else (row, into)
        merge_entity(session, mind_id, drop.id, keep.id)
        merged += 1
        row.resolved_key = canonical_key  # the older keeps the key; the retired one is history
        session.flush()
    return merged


def merge_entity(session: Session, mind_id: int, drop_id: int, keep_id: int) -> None:
    """Move ``drop_id``'s mentions and active relations onto ``keep_id``, then retire it."""
    entities = EntityRepository(session, mind_id)
    relations = RelationRepository(session, mind_id)
    edges = list(session.scalars(
        sa.select(RelationRow).where(
            RelationRow.mind_id == mind_id, RelationRow.valid_to.is_(None),
            sa.or_(RelationRow.source_id == drop_id, RelationRow.target_id == drop_id))
        .order_by(RelationRow.id)))
    moved = [(keep_id if e.source_id == drop_id else e.source_id,
              keep_id if e.target_id == drop_id else e.target_id,
              e.relation_type, e.confidence, dict(e.properties or {})) for e in edges]
    have = sa.select(EntityMentionRow.frame_id).where(EntityMentionRow.entity_id == keep_id)
    session.execute(sa.insert(EntityMentionRow).from_select(
        ["entity_id", "frame_id"],
        sa.select(sa.literal(keep_id), EntityMentionRow.frame_id)
        .where(EntityMentionRow.entity_id == drop_id, EntityMentionRow.frame_id.not_in(have))))
    entities.retire(drop_id)  # ends its edges too, each kept in recorded time
    # Retiring flushed the rows; the "drop" row must leave the unique key before the keeper
    # may take it.
    session.flush()
    for source_id, target_id, relation_type, confidence, properties in moved:
        if source_id != target_id:
            relations.ensure(source_id, target_id, relation_type, confidence,
                             properties=properties)

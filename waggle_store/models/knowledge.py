"""Layer 3: the bitemporal knowledge graph and the frames that mention its entities."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base, JSONType
from waggle_store.timeutil import utcnow


class EntityRow(Base):
    """An entity in its current recorded state (earlier states: :class:`EntityVersionRow`).

    ``name_key`` is the case-folded name (whole-name lookups in text); ``resolved_key`` is the
    name folded further (punctuation) and mapped through the mind's aliases: one active entity
    per (mind, type, resolved_key), enforced by a partial unique index.
    """

    __tablename__ = "waggle_knowledge_entities"
    __table_args__ = (
        Index(
            "ix_waggle_knowledge_entities_mind_id_entity_type_name_key",
            "mind_id",
            "entity_type",
            "name_key",
        ),
        Index("ix_waggle_knowledge_entities_mind_id_name", "mind_id", "name"),
        Index("uq_waggle_knowledge_entities_active_key", "mind_id", "entity_type",
              "resolved_key", unique=True, sqlite_where=text("valid_to IS NULL"),
              postgresql_where=text("valid_to IS NULL")),
        Index("ix_waggle_knowledge_entities_mind_id_resolved_key", "mind_id", "resolved_key"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    entity_type: Mapped[str] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(Text)
    name_key: Mapped[str] = mapped_column(Text)
    resolved_key: Mapped[str | None] = mapped_column(Text, default=None)
    properties: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    valid_from: Mapped[datetime] = mapped_column(default=utcnow)
    valid_to: Mapped[datetime | None] = mapped_column(default=None)
    #: When the current state was recorded (the start of the current version in recorded time).
    recorded_at: Mapped[datetime] = mapped_column(default=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1)


class RelationRow(Base):
    """A typed edge in its current recorded state (earlier states: :class:`RelationVersionRow`);
    at most one active edge per (mind, source, target, type)."""

    __tablename__ = "waggle_knowledge_relations"
    __table_args__ = (
        Index(
            "ix_waggle_knowledge_relations_source_id_relation_type", "source_id", "relation_type"
        ),
        Index(
            "ix_waggle_knowledge_relations_target_id_relation_type", "target_id", "relation_type"
        ),
        Index("ix_waggle_knowledge_relations_mind_id", "mind_id"),
        Index("uq_waggle_knowledge_relations_active_edge", "mind_id", "source_id", "target_id",
              "relation_type", unique=True, sqlite_where=text("valid_to IS NULL"),
              postgresql_where=text("valid_to IS NULL")),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    source_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_knowledge_entities.id", ondelete="CASCADE")
    )
    target_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_knowledge_entities.id", ondelete="CASCADE")
    )
    relation_type: Mapped[str] = mapped_column(String(100))
    confidence: Mapped[float] = mapped_column(Float, default=1.0)
    properties: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    valid_from: Mapped[datetime] = mapped_column(default=utcnow)
    valid_to: Mapped[datetime | None] = mapped_column(default=None)
    recorded_at: Mapped[datetime] = mapped_column(default=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1)


class EntityMentionRow(Base):
    """Which frames mention which entity; feeds the contextual (graph-distance) score."""

    __tablename__ = "waggle_entity_mentions"
    __table_args__ = (Index("ix_waggle_entity_mentions_frame_id", "frame_id"),)

    entity_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_knowledge_entities.id", ondelete="CASCADE"), primary_key=True
    )
    frame_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_memory_frames.id", ondelete="CASCADE"), primary_key=True
    )


class EntityVersionRow(Base):
    """A state an entity had in recorded time, from ``recorded_from`` until ``recorded_to``.

    Written when an update or a retirement replaces the state in :class:`EntityRow`, whose
    current state stays where every query reads it.
    """

    __tablename__ = "waggle_knowledge_entity_versions"
    __table_args__ = (
        Index("ix_waggle_knowledge_entity_versions_mind_id_recorded_from", "mind_id",
              "recorded_from"),
    )

    entity_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_knowledge_entities.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    entity_type: Mapped[str] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(Text)
    properties: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    valid_from: Mapped[datetime]
    valid_to: Mapped[datetime | None]
    recorded_from: Mapped[datetime]
    recorded_to: Mapped[datetime]


class RelationVersionRow(Base):
    """A state a relation had in recorded time (its validity before it was ended)."""

    __tablename__ = "waggle_knowledge_relation_versions"
    __table_args__ = (
        Index("ix_waggle_knowledge_relation_versions_mind_id_recorded_from", "mind_id",
              "recorded_from"),
    )

    relation_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_knowledge_relations.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    source_id: Mapped[int] = mapped_column(Integer)
    target_id: Mapped[int] = mapped_column(Integer)
    relation_type: Mapped[str] = mapped_column(String(100))
    confidence: Mapped[float] = mapped_column(Float, default=1.0)
    properties: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    valid_from: Mapped[datetime]
    valid_to: Mapped[datetime | None]
    recorded_from: Mapped[datetime]
    recorded_to: Mapped[datetime]


class AliasRow(Base):
    """A mind's own alias: names whose resolved key is ``alias_key`` resolve to
    ``canonical_key`` (the built-in alias groups need no rows)."""

    __tablename__ = "waggle_knowledge_aliases"

    mind_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_minds.id", ondelete="CASCADE"), primary_key=True
    )
    alias_key: Mapped[str] = mapped_column(Text, primary_key=True)
    alias: Mapped[str] = mapped_column(Text)
    canonical_key: Mapped[str] = mapped_column(Text)
    canonical_name: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PendingExtractionRow(Base):
    """A stored memory whose extraction failed; ``reconcile()`` extracts it again."""

    __tablename__ = "waggle_extraction_pending"
    __table_args__ = (Index("ix_waggle_extraction_pending_mind_id", "mind_id"),)

    frame_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_memory_frames.id", ondelete="CASCADE"), primary_key=True
    )
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    error: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

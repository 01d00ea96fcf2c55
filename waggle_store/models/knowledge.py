"""Layer 3: the bitemporal knowledge graph and the frames that mention its entities."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base, JSONType
from waggle_store.timeutil import utcnow


class EntityRow(Base):
    """An entity; ``name_key`` is the case-folded name that upserts match on (no window)."""

    __tablename__ = "waggle_knowledge_entities"
    __table_args__ = (
        Index(
            "ix_waggle_knowledge_entities_mind_id_entity_type_name_key",
            "mind_id",
            "entity_type",
            "name_key",
        ),
        Index("ix_waggle_knowledge_entities_mind_id_name", "mind_id", "name"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    entity_type: Mapped[str] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(Text)
    name_key: Mapped[str] = mapped_column(Text)
    properties: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    valid_from: Mapped[datetime] = mapped_column(default=utcnow)
    valid_to: Mapped[datetime | None] = mapped_column(default=None)
    recorded_at: Mapped[datetime] = mapped_column(default=utcnow)


class RelationRow(Base):
    __tablename__ = "waggle_knowledge_relations"
    __table_args__ = (
        Index(
            "ix_waggle_knowledge_relations_source_id_relation_type", "source_id", "relation_type"
        ),
        Index(
            "ix_waggle_knowledge_relations_target_id_relation_type", "target_id", "relation_type"
        ),
        Index("ix_waggle_knowledge_relations_mind_id", "mind_id"),
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

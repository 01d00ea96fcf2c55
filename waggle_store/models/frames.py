"""Layer 2: memory frames (I = keyframe, P = delta, B = cross-reference)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base
from waggle_store.timeutil import utcnow

FRAME_TYPES = ("I", "P", "B")
IMPORTANCE_LEVELS = ("critical", "important", "normal", "temporary", "deprecated")
FRAME_SOURCES = ("user_stated", "tool_verified", "agent_inferred", "import", "system")


class FrameRow(Base):
    __tablename__ = "waggle_memory_frames"
    __table_args__ = (
        CheckConstraint("frame_type IN ('I', 'P', 'B')", name="frame_type"),
        CheckConstraint(
            "importance IN ('critical', 'important', 'normal', 'temporary', 'deprecated')",
            name="importance",
        ),
        CheckConstraint(
            "source IN ('user_stated', 'tool_verified', 'agent_inferred', 'import', 'system')",
            name="source",
        ),
        ForeignKeyConstraint(
            ["mind_id", "gop_id"],
            ["waggle_sessions.mind_id", "waggle_sessions.gop_id"],
            ondelete="CASCADE",
            name="fk_memory_frames_mind_id_gop_id_sessions",
        ),
        UniqueConstraint("mind_id", "gop_id", "t"),
        Index("ix_waggle_memory_frames_mind_id_content_hash", "mind_id", "content_hash"),
        Index("ix_waggle_memory_frames_mind_id_created_at", "mind_id", "created_at"),
        Index("ix_waggle_memory_frames_base_frame_id", "base_frame_id"),
        # The session's latest I-frame is one index seek, whatever the number of P-frames that
        # follow it (ordering the (mind, gop, t) unique index by t walked back through all of
        # them, so ingest cost grew with the session's length). Migration 0005.
        Index("ix_waggle_memory_frames_mind_id_gop_id_frame_type_t", "mind_id", "gop_id",
              "frame_type", "t"),
        # The search's where= source/importance filters (migration 0014).
        Index("ix_waggle_memory_frames_mind_id_source", "mind_id", "source"),
        Index("ix_waggle_memory_frames_mind_id_importance", "mind_id", "importance"),
        # AUTOINCREMENT: a deleted frame's id is never reused, so a stale index row can never
        # attach itself to a newer frame.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    frame_type: Mapped[str] = mapped_column(String(1))
    gop_id: Mapped[str] = mapped_column(String(255))
    t: Mapped[int] = mapped_column(Integer)
    base_frame_id: Mapped[int | None] = mapped_column(
        ForeignKey("waggle_memory_frames.id", ondelete="SET NULL"), default=None
    )
    content: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    importance: Mapped[str] = mapped_column(String(20), default="normal")
    source: Mapped[str] = mapped_column(String(20), default="user_stated")
    access_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_accessed: Mapped[datetime] = mapped_column(default=utcnow)
    #: Set by consolidation (``pipeline/consolidate.py``); NULL until the first run.
    salience: Mapped[float | None] = mapped_column(Float, default=None)
    #: Derived, never written by the library's Python: the preceding frame's content in the
    #: same session, kept by database triggers (``dialects/context_index.py``, migration 0006)
    #: and indexed by the keyword lane at half weight. Not exported, not returned by search.
    search_context: Mapped[str | None] = mapped_column(Text, default=None)
    #: The caller's JSON object (``records.Frame.metadata``); NULL for none. JSONB with a GIN
    #: index (``jsonb_path_ops``) on PostgreSQL; JSON text on SQLite, its entries in the side
    #: table ``waggle_frame_metadata`` kept by triggers (migration 0014; each dialect's own, so
    #: not declared here). The attribute is ``meta``: ``metadata`` is the declarative base's.
    meta: Mapped[dict[str, Any] | None] = mapped_column(
        "metadata", JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql"),
        default=None)

"""Embedding models, the per-frame vector manifest, and embedding usage counters."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base
from waggle_store.timeutil import utcnow

EMBEDDING_MODEL_STATUSES = ("building", "active", "retired")
VECTOR_STATUSES = ("pending", "ready", "failed")


class EmbeddingModelRow(Base):
    """A registered (provider, model, dimensions) triple; each gets its own vector index."""

    __tablename__ = "waggle_embedding_models"
    __table_args__ = (
        CheckConstraint("status IN ('building', 'active', 'retired')", name="status"),
        UniqueConstraint("provider", "model", "dimensions"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    provider: Mapped[str] = mapped_column(String(50))
    model: Mapped[str] = mapped_column(String(255))
    dimensions: Mapped[int] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(String(20), default="cosine")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    status: Mapped[str] = mapped_column(String(10), default="building")


class FrameEmbeddingRow(Base):
    """The manifest: whether a frame has a current vector, in which model, for which content."""

    __tablename__ = "waggle_frame_embeddings"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'ready', 'failed')", name="status"),
        Index("ix_waggle_frame_embeddings_status_model_id", "status", "model_id"),
    )

    frame_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_memory_frames.id", ondelete="CASCADE"), primary_key=True
    )
    model_id: Mapped[int | None] = mapped_column(
        ForeignKey("waggle_embedding_models.id", ondelete="SET NULL"), default=None
    )
    content_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(10), default="pending")
    error: Mapped[str | None] = mapped_column(Text, default=None)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class EmbeddingUsage(Base):
    """Real embeddings counted per user per UTC month (quota enforcement)."""

    __tablename__ = "waggle_embedding_usage"
    __table_args__ = (UniqueConstraint("user_id", "year_month"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(255))
    year_month: Mapped[str] = mapped_column(String(7))
    count: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

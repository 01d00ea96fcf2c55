"""Embedding models, the per-frame vector manifest, and embedding usage counters."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
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
    #: How the ready vector was made from the content (``embeddings.sentences.TEXT_FORMS``):
    #: reconcile re-embeds a vector of a form the store's embedder no longer makes. Rows
    #: written before migration 0007 were all "whole".
    text_form: Mapped[str] = mapped_column(String(16), default="whole", server_default="whole")


class EmbeddingUsage(Base):
    """Real embeddings counted per user per UTC month (quota enforcement)."""

    __tablename__ = "waggle_embedding_usage"
    __table_args__ = (UniqueConstraint("user_id", "year_month"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(255))
    year_month: Mapped[str] = mapped_column(String(7))
    count: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


MIND_MODEL_STATUSES = ("active", "switching", "retired")


class MindEmbeddingModelRow(Base):
    """Which embedding model each mind is searched and embedded with.

    The model is per mind, not per store: minds belong to different users, and tiers give users
    different providers, so one store holds minds embedded by different models. At most one
    ``active`` model per mind (its vectors serve search) and at most one ``switching`` model (a
    switch in progress re-embeds into it while the active one keeps serving); a switch flips
    them atomically and leaves the old one ``retired``.
    """

    __tablename__ = "waggle_mind_embedding_models"
    __table_args__ = (
        CheckConstraint("status IN ('active', 'switching', 'retired')", name="status"),
        Index("uq_waggle_mind_embedding_models_active", "mind_id", unique=True,
              sqlite_where=text("status = 'active'"), postgresql_where=text("status = 'active'")),
        Index("uq_waggle_mind_embedding_models_switching", "mind_id", unique=True,
              sqlite_where=text("status = 'switching'"),
              postgresql_where=text("status = 'switching'")),
    )

    mind_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_minds.id", ondelete="CASCADE"), primary_key=True
    )
    model_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_embedding_models.id", ondelete="CASCADE"), primary_key=True
    )
    status: Mapped[str] = mapped_column(String(10))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class EmbeddingStagingRow(Base):
    """Vectors written by a switch in progress: frame ``frame_id`` has a vector of the content
    ``content_hash`` in model ``model_id``'s table, not yet serving. The switch resumes from
    these rows after a crash and turns them into manifest rows when it flips."""

    __tablename__ = "waggle_frame_embedding_staging"

    frame_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_memory_frames.id", ondelete="CASCADE"), primary_key=True
    )
    model_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_embedding_models.id", ondelete="CASCADE"), primary_key=True
    )
    content_hash: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: The text form the staged vector was made in (as ``FrameEmbeddingRow.text_form``): a
    #: switch resumed by an embedder of another form embeds the frame again.
    text_form: Mapped[str] = mapped_column(String(16), default="whole", server_default="whole")

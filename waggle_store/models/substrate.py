"""OpenFang-substrate tables: per-mind KV, LLM usage log, harvest sources and the tombstones
of forgotten harvested memories."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base, JSONType
from waggle_store.timeutil import utcnow


class KVRow(Base):
    __tablename__ = "waggle_kv_store"

    mind_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_minds.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(500), primary_key=True)
    value: Mapped[Any] = mapped_column(JSONType)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class UsageLogRow(Base):
    __tablename__ = "waggle_usage_log"
    __table_args__ = (Index("ix_waggle_usage_log_mind_id_created_at", "mind_id", "created_at"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    model: Mapped[str] = mapped_column(String(255))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    total_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class HarvestSourceRow(Base):
    __tablename__ = "waggle_harvest_sources"
    __table_args__ = (UniqueConstraint("mind_id", "source"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(String(255))
    #: The adapter that reads it (chatgpt, claude, markdown, jsonl); NULL in rows imported from
    #: a Waggle ``.mind`` file.
    kind: Mapped[str | None] = mapped_column(String(20), default=None)
    display_name: Mapped[str] = mapped_column(Text)
    source_path: Mapped[str | None] = mapped_column(Text, default=None)
    last_synced_at: Mapped[datetime | None] = mapped_column(default=None)
    items_imported: Mapped[int] = mapped_column(Integer, default=0)
    frames_created: Mapped[int] = mapped_column(Integer, default=0)
    auto_sync: Mapped[bool] = mapped_column(Boolean, default=False)
    sync_interval_hours: Mapped[int] = mapped_column(Integer, default=24)
    last_content_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class HarvestTombstoneRow(Base):
    """A harvested memory that was deleted: its source and content hash, so that a sync does
    not store it again. Written by a trigger on the frames table (migration 0010)."""

    __tablename__ = "waggle_harvest_tombstones"

    mind_id: Mapped[int] = mapped_column(
        PK, ForeignKey("waggle_minds.id", ondelete="CASCADE"), primary_key=True)
    source: Mapped[str] = mapped_column(String(255), primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    forgotten_at: Mapped[datetime] = mapped_column(default=utcnow)

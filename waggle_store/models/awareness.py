"""Layer 1: short-term working state."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base, JSONType
from waggle_store.timeutil import utcnow

AWARENESS_CATEGORIES = ("task", "action", "pending", "flag")


class AwarenessRow(Base):
    __tablename__ = "waggle_awareness"
    __table_args__ = (
        CheckConstraint("category IN ('task', 'action', 'pending', 'flag')", name="category"),
        Index("ix_waggle_awareness_mind_id_priority", "mind_id", "priority"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    category: Mapped[str] = mapped_column(String(20))
    content: Mapped[str] = mapped_column(Text)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    # "metadata" is reserved on declarative classes, so the attribute is named meta.
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(default=None)

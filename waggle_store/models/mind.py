"""Minds (memory namespaces) and the store-wide key/value facts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base, JSONType
from waggle_store.timeutil import utcnow

MIND_KINDS = ("workspace", "personal")


class MindRow(Base):
    __tablename__ = "waggle_minds"
    __table_args__ = (CheckConstraint("kind IN ('workspace', 'personal')", name="kind"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(20), default="workspace")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class StoreMeta(Base):
    """Facts about the store that Alembic does not own (e.g. the active embedding model)."""

    __tablename__ = "waggle_store_meta"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(Text)

"""Sessions: groups of frames ("group of pictures", gop)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base
from waggle_store.timeutil import utcnow

SESSION_STATUSES = ("active", "closed", "archived")
SESSION_KINDS = ("auto", "named")


class SessionRow(Base):
    """One session of one mind.

    ``kind`` separates sessions made by ``ensure_active`` (auto) from sessions callers name
    themselves (harvest, MCP day sessions): ensure_active returns only auto sessions, so cognify
    never appends to a harvest session.

    gop_id is unique per mind, not globally: two minds can both have an ``mcp:2026-05-13`` session
    without one seeing the other's.
    """

    __tablename__ = "waggle_sessions"
    __table_args__ = (
        CheckConstraint("status IN ('active', 'closed', 'archived')", name="status"),
        CheckConstraint("kind IN ('auto', 'named')", name="kind"),
        UniqueConstraint("mind_id", "gop_id"),
        Index(
            "ix_waggle_sessions_mind_id_project_id_started_at",
            "mind_id",
            "project_id",
            "started_at",
        ),
        # "One active auto session per (mind, project)" is a database fact, so two processes
        # racing in ensure_active cannot both create one. coalesce() because NULLs are distinct.
        Index(
            "uq_waggle_sessions_one_active",
            "mind_id",
            func.coalesce(text("project_id"), ""),
            unique=True,
            sqlite_where=text("status = 'active' AND kind = 'auto'"),
            postgresql_where=text("status = 'active' AND kind = 'auto'"),
        ),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    gop_id: Mapped[str] = mapped_column(String(255))
    project_id: Mapped[str | None] = mapped_column(String(255), default=None)
    kind: Mapped[str] = mapped_column(String(10), default="auto")
    status: Mapped[str] = mapped_column(String(10), default="active")
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    summary: Mapped[str | None] = mapped_column(Text, default=None)

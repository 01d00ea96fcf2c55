"""Conversations (an agent's message history per channel), their messages, and agents.

A conversation is one row; its messages are rows of their own, numbered by ``seq`` within the
conversation, so an append inserts rows (it never rewrites the history) and the newest N are one
index range of ``(conversation_id, seq)`` however long the conversation grows.

Each mind has at most one *canonical* conversation (``kind = 'canonical'``): the context shared
across channels, compacted into ``summary`` as it grows. Its messages are ordinary message rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Mapped, mapped_column

from waggle_store.models.base import PK, Base, JSONType
from waggle_store.timeutil import utcnow

CONVERSATION_KINDS = ("channel", "canonical")
CONVERSATION_STATUSES = ("open", "closed")
MESSAGE_ROLES = ("user", "assistant", "system", "tool")

_SEQ = BigInteger().with_variant(Integer(), "sqlite")
#: A message's optional JSON (tool calls, metadata): None is stored as SQL NULL, not as the JSON
#: text ``null``, so reading a message without them decodes nothing.
_OPTIONAL_JSON = JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True),
                                                      "postgresql")


class ConversationRow(Base):
    """One conversation of one mind: a channel's message history, or the mind's canonical one.

    ``last_seq`` is the ``seq`` of the newest message ever appended (trimming never lowers it,
    so numbers are never reused) and ``message_count`` the number of message rows kept; both
    change only under the conversation's row lock.
    """

    __tablename__ = "waggle_conversations"
    __table_args__ = (
        CheckConstraint("kind IN ('channel', 'canonical')", name="kind"),
        CheckConstraint("status IN ('open', 'closed')", name="status"),
        Index("ix_waggle_conversations_mind_id_created_at", "mind_id", "created_at"),
        Index("ix_waggle_conversations_mind_id_label", "mind_id", "label"),
        # One open conversation per (mind, channel) and one canonical conversation per mind are
        # database facts, so processes racing in open() cannot both create one.
        Index(
            "uq_waggle_conversations_one_open",
            "mind_id",
            "channel",
            unique=True,
            sqlite_where=text("status = 'open' AND kind = 'channel'"),
            postgresql_where=text("status = 'open' AND kind = 'channel'"),
        ),
        Index(
            "uq_waggle_conversations_canonical",
            "mind_id",
            unique=True,
            sqlite_where=text("kind = 'canonical'"),
            postgresql_where=text("kind = 'canonical'"),
        ),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    mind_id: Mapped[int] = mapped_column(ForeignKey("waggle_minds.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(10), default="channel")
    channel: Mapped[str | None] = mapped_column(String(255), default=None)
    label: Mapped[str | None] = mapped_column(String(255), default=None)
    status: Mapped[str] = mapped_column(String(10), default="open")
    summary: Mapped[str | None] = mapped_column(Text, default=None)
    last_seq: Mapped[int] = mapped_column(_SEQ, default=0)
    message_count: Mapped[int] = mapped_column(_SEQ, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class MessageRow(Base):
    """One message of one conversation; ``seq`` numbers it within the conversation (1, 2, ...)."""

    __tablename__ = "waggle_conversation_messages"
    __table_args__ = (
        CheckConstraint("role IN ('user', 'assistant', 'system', 'tool')", name="role"),
        UniqueConstraint("conversation_id", "seq"),
    )

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("waggle_conversations.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(_SEQ)
    role: Mapped[str] = mapped_column(String(10))
    content: Mapped[str] = mapped_column(Text)
    tool_calls: Mapped[Any | None] = mapped_column(_OPTIONAL_JSON, default=None)
    tool_call_id: Mapped[str | None] = mapped_column(String(255), default=None)
    meta: Mapped[Any | None] = mapped_column("metadata", _OPTIONAL_JSON, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AgentRow(Base):
    """One agent of the store: its manifest and state. Its memory is the mind of the same name.

    ``name_key`` (the name case-folded) is unique, so "Alice" and "alice" are one agent; ``name``
    keeps the spelling the agent was first saved with.
    """

    __tablename__ = "waggle_agents"
    __table_args__ = (UniqueConstraint("name_key"),)

    id: Mapped[int] = mapped_column(PK, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    name_key: Mapped[str] = mapped_column(String(800))
    manifest: Mapped[Any] = mapped_column(JSONType)
    state: Mapped[Any] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

"""Records of conversations, their messages, the canonical conversation and agents."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Message:
    """One message of a conversation.

    Passed to ``append`` it needs only ``role`` and ``content``; ``created_at`` (None: now) and
    ``seq`` (its number within the conversation, assigned by the store) are filled in on the
    messages the store returns.
    """

    role: str
    content: str
    created_at: datetime | None = None
    tool_calls: list[Any] | None = None
    tool_call_id: str | None = None
    metadata: dict[str, Any] | None = None
    seq: int | None = None


@dataclass(frozen=True)
class Conversation:
    """A conversation with the messages it keeps, oldest first."""

    id: int
    mind: str
    channel: str
    label: str | None
    messages: list[Message] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    is_open: bool = True


@dataclass(frozen=True)
class ConversationInfo:
    """A conversation without its messages (``conversations.list``)."""

    id: int
    channel: str
    label: str | None
    message_count: int
    created_at: datetime
    updated_at: datetime
    is_open: bool = True


@dataclass(frozen=True)
class CanonicalContext:
    """The mind's canonical conversation: the compacted summary of what scrolled out, and the
    newest messages."""

    summary: str | None
    messages: list[Message]


@dataclass(frozen=True)
class AgentRecord:
    """An agent of the store; ``mind`` names the mind that holds its memory."""

    name: str
    manifest: dict[str, Any]
    state: dict[str, Any]
    mind: str
    created_at: datetime
    updated_at: datetime

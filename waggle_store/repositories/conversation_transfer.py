"""The SQL of exporting and importing conversations, their messages and a mind's agent.

Reads take a Connection or Session and page by id (keyset, :data:`PAGE` rows), so an export of
a conversation of any length holds one page. Writes take the import's Session and never commit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.models import AgentRow, ConversationRow, MessageRow, MindRow

__all__ = [
    "PAGE",
    "agent_of",
    "conversation_counts",
    "conversation_rows",
    "existing_conversations",
    "insert_conversation",
    "insert_messages",
    "message_rows",
    "mind_name",
    "same_conversation",
    "set_counters",
]

PAGE: Final = 1000
_C = cast(sa.Table, ConversationRow.__table__)
_M = cast(sa.Table, MessageRow.__table__)
_A = cast(sa.Table, AgentRow.__table__)
Bind = sa.Connection | Session


def _paged(bind: Bind, stmt: sa.Select[Any], key: Any) -> Iterator[Any]:
    last: int | None = None
    while True:
        page = stmt if last is None else stmt.where(key > last)
        rows = bind.execute(page.order_by(key).limit(PAGE)).mappings().all()
        yield from rows
        if len(rows) < PAGE:
            return
        last = int(rows[-1]["id"])


def mind_name(bind: Bind, mind_id: int) -> str:
    return str(bind.execute(sa.select(MindRow.name).where(MindRow.id == mind_id)).scalar_one())


def agent_of(bind: Bind, name: str) -> Mapping[str, Any] | None:
    """The agent whose mind is ``name`` (the agent of exactly that name), as a row mapping.
    Agent names match case-insensitively but mind names do not: the agent "Alice" is mind
    "Alice"'s, never mind "alice"'s."""
    found = bind.execute(sa.select(_A).where(_A.c.name_key == name.casefold(),
                                             _A.c.name == name)).mappings()
    row = found.first()
    return None if row is None else dict(row)


def conversation_counts(bind: Bind, mind_id: int) -> tuple[int, int]:
    """(conversations, messages) of the mind."""
    conversations = bind.execute(sa.select(sa.func.count()).where(_C.c.mind_id == mind_id))
    messages = bind.execute(sa.select(sa.func.count()).select_from(_M.join(_C)).where(
        _C.c.mind_id == mind_id))
    return int(conversations.scalar() or 0), int(messages.scalar() or 0)


def conversation_rows(bind: Bind, mind_id: int) -> Iterator[Mapping[str, Any]]:
    return _paged(bind, sa.select(_C).where(_C.c.mind_id == mind_id), _C.c.id)


def message_rows(bind: Bind, mind_id: int) -> Iterator[Mapping[str, Any]]:
    """Every message of the mind's conversations, by id (within a conversation: by seq)."""
    stmt = sa.select(_M).join(_C, _C.c.id == _M.c.conversation_id).where(_C.c.mind_id == mind_id)
    return _paged(bind, stmt, _M.c.id)


def existing_conversations(session: Session, mind_id: int) -> tuple[set[str], bool]:
    """(the channels with an open conversation, whether the mind has a canonical one)."""
    rows = session.execute(sa.select(_C.c.kind, _C.c.channel, _C.c.status).where(
        _C.c.mind_id == mind_id, sa.or_(_C.c.kind == "canonical", _C.c.status == "open"))).all()
    return ({str(r.channel) for r in rows if r.kind == "channel"},
            any(r.kind == "canonical" for r in rows))


def insert_conversation(session: Session, mind_id: int, fields: Mapping[str, Any]) -> int:
    """Insert one conversation (counters zero until :func:`set_counters`); its new id."""
    values = {k: fields[k] for k in ("kind", "channel", "label", "status", "summary",
                                     "created_at", "updated_at")}
    result = session.execute(sa.insert(_C).values(mind_id=mind_id, last_seq=0, message_count=0,
                                                  **values).returning(_C.c.id))
    return int(result.scalar_one())


def insert_messages(session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    if rows:
        session.execute(sa.insert(_M), list(rows))


def set_counters(session: Session, conversation_id: int, last_seq: int) -> None:
    """Set a conversation's counters from its message rows (``last_seq`` at least the given)."""
    count, top = session.execute(
        sa.select(sa.func.count(), sa.func.coalesce(sa.func.max(_M.c.seq), 0))
        .where(_M.c.conversation_id == conversation_id)).one()
    session.execute(sa.update(_C).where(_C.c.id == conversation_id).values(
        message_count=int(count), last_seq=max(int(top), last_seq)))


def same_conversation(session: Session, mind_id: int, fields: Mapping[str, Any]) -> bool:
    """Whether the mind has this conversation already: same kind, channel and creation time."""
    channel = _C.c.channel.is_(None) if fields["channel"] is None else (
        _C.c.channel == fields["channel"])
    return session.execute(sa.select(_C.c.id).where(
        _C.c.mind_id == mind_id, _C.c.kind == fields["kind"], channel,
        _C.c.created_at == fields["created_at"]).limit(1)).first() is not None

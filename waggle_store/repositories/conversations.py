"""Conversations repository: a mind's conversations per channel and their messages as rows.

"One open conversation per (mind, channel)" is enforced by the partial unique index
``uq_waggle_conversations_one_open``: :meth:`ConversationRepository.open` inserts in a
SAVEPOINT (:func:`~waggle_store.repositories.common.insert_or_none`) and, when the index refuses
it, re-reads the winner's row (the refused INSERT on PostgreSQL waited for the winner's commit;
SQLite's BEGIN IMMEDIATE serialises writers, so there the first SELECT finds it).

Appends lock the conversation row (``FOR NO KEY UPDATE`` on PostgreSQL; SQLite writers are
serialised already), so ``seq`` numbers are gapless and ordered and concurrent appends lose
nothing. Each append inserts its rows, updates one conversation row, and trims with one ranged
DELETE over the ``(conversation_id, seq)`` index: its cost does not grow with the conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import ConflictError, InvalidInputError, NotFoundError
from waggle_store.models import MESSAGE_ROLES, ConversationRow, MessageRow
from waggle_store.records import Conversation, ConversationInfo, Message
from waggle_store.repositories.common import (
    MAX_LIMIT,
    check_choice,
    check_int,
    check_json,
    check_name,
    check_text,
    insert_or_none,
)
from waggle_store.timeutil import optional_utc, utcnow

__all__ = [
    "MAX_MESSAGES_PER_CALL",
    "ConversationRepository",
    "MessageSpec",
    "check_channel",
    "check_label",
    "check_messages",
    "check_optional_count",
    "counter_drift",
    "newest_messages",
    "to_message",
]

#: The most messages one append (or canonical_append) takes.
MAX_MESSAGES_PER_CALL: Final = 10_000
_MESSAGE_KEYS: Final = frozenset({"role", "content", "tool_calls", "tool_call_id", "metadata"})
_RACE_ATTEMPTS: Final = 8  # each lost race means another writer committed; a handful suffices
_MESSAGES = cast(sa.Table, MessageRow.__table__)


@dataclass(frozen=True)
class MessageSpec:
    """A validated message, ready to insert."""

    role: str
    content: str
    tool_calls: list[Any] | None
    tool_call_id: str | None
    metadata: dict[str, Any] | None
    created_at: datetime | None = None


# -- input checks -----------------------------------------------------------------------------


def check_channel(channel: object) -> str:
    return check_name(channel, name="channel")


def check_label(label: object) -> str | None:
    return None if label is None else check_name(label, name="label")


def check_optional_count(value: object, *, name: str) -> int | None:
    return None if value is None else check_int(value, name=name, minimum=0, maximum=MAX_LIMIT)


def _check_message(index: int, value: object, *, keep_time: bool) -> MessageSpec:
    if isinstance(value, Message):
        fields: Mapping[str, Any] = {
            "role": value.role, "content": value.content, "tool_calls": value.tool_calls,
            "tool_call_id": value.tool_call_id, "metadata": value.metadata}
        created = value.created_at if keep_time else None
    elif isinstance(value, Mapping):
        unknown = set(value) - _MESSAGE_KEYS
        if unknown:
            raise InvalidInputError(
                f"message {index} has unknown keys {sorted(map(str, unknown))}; a message has "
                f"{', '.join(sorted(_MESSAGE_KEYS))}")
        fields, created = value, None
    else:
        raise InvalidInputError(
            f"message {index} must be a ws.Message or a dict, got {type(value).__name__}")
    what = f"message {index}"
    role = check_choice(fields.get("role"), MESSAGE_ROLES, name=f"{what} role")
    content = check_text(fields.get("content", ""), name=f"{what} content", allow_empty=True)
    tool_calls = fields.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise InvalidInputError(f"{what} tool_calls must be a list or None")
        tool_calls = check_json(tool_calls, name=f"{what} tool_calls")
    tool_call_id = fields.get("tool_call_id")
    if tool_call_id is not None:
        tool_call_id = check_name(tool_call_id, name=f"{what} tool_call_id")
    metadata = fields.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise InvalidInputError(f"{what} metadata must be a dict or None")
        metadata = check_json(metadata, name=f"{what} metadata")
    when = optional_utc(created, name=f"{what} created_at") if created is not None else None
    return MessageSpec(role, content, tool_calls, tool_call_id, metadata, when)


def check_messages(messages: object, *, keep_time: bool = False) -> list[MessageSpec]:
    """Validate a list of messages (ws.Message or dicts) before anything touches the database.

    ``keep_time``: a Message's own ``created_at`` is kept (import); the API stamps "now"."""
    if isinstance(messages, (str, bytes, Mapping, Message)) or not isinstance(messages, Iterable):
        raise InvalidInputError("messages must be a list of ws.Message or dicts")
    specs = []
    for index, value in enumerate(messages):
        if index >= MAX_MESSAGES_PER_CALL:
            raise InvalidInputError(
                f"at most {MAX_MESSAGES_PER_CALL} messages per call; split the list")
        specs.append(_check_message(index, value, keep_time=keep_time))
    return specs


# -- conversions ------------------------------------------------------------------------------


def to_message(row: Any) -> Message:
    """A Core row of the messages table (its columns in table order) as a record."""
    _, _, seq, role, content, tool_calls, tool_call_id, metadata, created_at = row
    return Message(role, content, created_at, tool_calls, tool_call_id, metadata, seq)


def _to_info(row: ConversationRow) -> ConversationInfo:
    return ConversationInfo(row.id, row.channel or "", row.label, int(row.message_count),
                            row.created_at, row.updated_at, row.status == "open")


# -- the newest messages, on a Core connection ------------------------------------------------

_C = cast(sa.Table, ConversationRow.__table__)
#: Built once (a read path that runs on every agent turn): the messages of conversation :c if
#: it is a channel conversation of mind :m; _NEWEST the newest :n of them, newest first.
_OF = (sa.select(_MESSAGES).join(_C, _C.c.id == _MESSAGES.c.conversation_id)
       .where(_C.c.id == sa.bindparam("c"), _C.c.mind_id == sa.bindparam("m"),
              _C.c.kind == "channel"))
_ALL = _OF.order_by(_MESSAGES.c.seq)
_NEWEST = _OF.order_by(_MESSAGES.c.seq.desc()).limit(sa.bindparam("n"))
_EXISTS = sa.select(_C.c.id).where(_C.c.id == sa.bindparam("c"), _C.c.mind_id == sa.bindparam("m"),
                                   _C.c.kind == "channel")


def newest_messages(conn: sa.Connection, mind_id: int, conversation_id: object,
                    limit: int | None) -> list[Message]:
    """The newest ``limit`` messages (None: all), oldest first, of a conversation of
    ``mind_id``, in one statement (NotFoundError when there is no such conversation): the
    read path of ``messages()``, on a Core connection, which costs a fraction of a Session."""
    ident = check_int(conversation_id, name="conversation_id", minimum=1)
    if limit is None:
        rows = list(conn.execute(_ALL, {"c": ident, "m": mind_id}))
    else:
        rows = list(conn.execute(_NEWEST, {"c": ident, "m": mind_id, "n": limit}))
        rows.reverse()
    if not rows and conn.execute(_EXISTS, {"c": ident, "m": mind_id}).first() is None:
        raise NotFoundError(f"no conversation {conversation_id!r} in this mind")
    return [to_message(r) for r in rows]


# -- the repository ---------------------------------------------------------------------------


class ConversationRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    # -- reads --------------------------------------------------------------------------------

    def row(self, conversation_id: object, *, lock: bool = False) -> ConversationRow | None:
        """The channel conversation ``conversation_id`` of this mind; ``lock`` takes its row
        lock for the rest of the transaction (FOR NO KEY UPDATE on PostgreSQL; on SQLite
        BEGIN IMMEDIATE serialises writers and the clause is not rendered)."""
        ident = check_int(conversation_id, name="conversation_id", minimum=1)
        query = sa.select(ConversationRow).where(
            ConversationRow.id == ident, ConversationRow.mind_id == self.mind_id,
            ConversationRow.kind == "channel")
        if lock:
            query = query.with_for_update(key_share=True).execution_options(
                populate_existing=True)
        return self.session.scalar(query)

    def require(self, conversation_id: object, *, lock: bool = False) -> ConversationRow:
        found = self.row(conversation_id, lock=lock)
        if found is None:
            raise NotFoundError(f"no conversation {conversation_id!r} in this mind")
        return found

    def message_rows(self, conversation_id: int, limit: int | None) -> list[Message]:
        """The newest ``limit`` messages (None: all), oldest first: one range of the
        ``(conversation_id, seq)`` index, read backwards."""
        query = sa.select(_MESSAGES).where(_MESSAGES.c.conversation_id == conversation_id)
        if limit is None:
            return [to_message(r) for r in self.session.execute(query.order_by(_MESSAGES.c.seq))]
        rows = list(self.session.execute(query.order_by(_MESSAGES.c.seq.desc()).limit(limit)))
        rows.reverse()
        return [to_message(r) for r in rows]

    def conversation(self, row: ConversationRow, mind_name: str,
                     limit: int | None = None) -> Conversation:
        return Conversation(row.id, mind_name, row.channel or "", row.label,
                            self.message_rows(row.id, limit), row.created_at, row.updated_at,
                            row.status == "open")

    def list(self, *, channel: str | None = None) -> list[ConversationInfo]:
        query = sa.select(ConversationRow).where(ConversationRow.mind_id == self.mind_id,
                                                 ConversationRow.kind == "channel")
        if channel is not None:
            query = query.where(ConversationRow.channel == check_channel(channel))
        query = query.order_by(ConversationRow.created_at.desc(), ConversationRow.id.desc())
        return [_to_info(r) for r in self.session.scalars(query)]

    def find_by_label(self, label: str) -> ConversationRow | None:
        wanted = check_name(label, name="label")
        return self.session.scalar(
            sa.select(ConversationRow)
            .where(ConversationRow.mind_id == self.mind_id, ConversationRow.kind == "channel",
                   ConversationRow.label == wanted)
            .order_by(ConversationRow.created_at.desc(), ConversationRow.id.desc()).limit(1))

    def _open_row(self, channel: str) -> ConversationRow | None:
        return self.session.scalar(sa.select(ConversationRow).where(
            ConversationRow.mind_id == self.mind_id, ConversationRow.kind == "channel",
            ConversationRow.status == "open", ConversationRow.channel == channel))

    # -- writes -------------------------------------------------------------------------------

    def open(self, channel: str, label: str | None = None) -> ConversationRow:
        """The open conversation of (mind, channel), created (with ``label``) when absent."""
        channel = check_channel(channel)
        label = check_label(label)
        for _ in range(_RACE_ATTEMPTS):
            found = self._open_row(channel)
            if found is None:
                found = insert_or_none(self.session, ConversationRow(
                    mind_id=self.mind_id, channel=channel, label=label))
            if found is not None:
                return found
        raise ConflictError("could not open the conversation: too many concurrent writers")

    def create(self, channel: str, label: str | None = None, *,
               created_at: datetime | None = None, is_open: bool = True) -> ConversationRow:
        """A new conversation of ``channel``; open, it closes the channel's open one."""
        channel = check_channel(channel)
        label = check_label(label)
        now = created_at or utcnow()
        for _ in range(_RACE_ATTEMPTS):
            if is_open:
                current = self._open_row(channel)
                if current is not None:
                    current.status = "closed"
                    self.session.flush()
            made = insert_or_none(self.session, ConversationRow(
                mind_id=self.mind_id, channel=channel, label=label,
                status="open" if is_open else "closed", created_at=now, updated_at=now))
            if made is not None:
                return made
        raise ConflictError("could not create the conversation: too many concurrent writers")

    def append(self, row: ConversationRow, specs: Sequence[MessageSpec],
               keep_last: int | None) -> None:
        """Insert ``specs`` after the newest message of ``row`` (locked by the caller), then keep
        only the newest ``keep_last`` messages (None: all)."""
        now = utcnow()
        first = int(row.last_seq) + 1
        if specs:
            self.session.execute(sa.insert(_MESSAGES), [
                {"conversation_id": row.id, "seq": first + i, "role": m.role,
                 "content": m.content, "tool_calls": m.tool_calls,
                 "tool_call_id": m.tool_call_id, "metadata": m.metadata,
                 "created_at": m.created_at or now}
                for i, m in enumerate(specs)])
        row.last_seq = first + len(specs) - 1
        row.message_count = int(row.message_count) + len(specs)
        row.updated_at = now
        if keep_last is not None:
            self.trim(row, keep_last)
        self.session.flush()

    def trim(self, row: ConversationRow, keep_last: int) -> None:
        """Delete the messages of ``row`` (locked) older than its newest ``keep_last``.

        The kept messages are always the contiguous range up to ``last_seq`` (every deletion
        removes the oldest), so the count after trimming is known without counting."""
        if int(row.message_count) <= keep_last:
            return
        self.session.execute(sa.delete(_MESSAGES).where(
            _MESSAGES.c.conversation_id == row.id,
            _MESSAGES.c.seq <= int(row.last_seq) - keep_last))
        row.message_count = keep_last

    def set_label(self, conversation_id: object, label: str | None) -> None:
        row = self.require(conversation_id)
        row.label = check_label(label)
        row.updated_at = utcnow()
        self.session.flush()

    def delete(self, conversation_id: object) -> None:
        row = self.require(conversation_id, lock=True)
        self.session.delete(row)
        self.session.flush()


# -- consistency (reconcile) ------------------------------------------------------------------


def counter_drift(session: Session, mind_id: int | None, *, repair: bool) -> list[str]:
    """Conversations whose ``message_count`` or ``last_seq`` disagree with their message rows
    (rows written or deleted behind the API), one sentence each; ``repair`` sets the counters
    from the rows (the messages themselves are the truth)."""
    counted = (sa.select(_MESSAGES.c.conversation_id, sa.func.count().label("n"),
                         sa.func.max(_MESSAGES.c.seq).label("top"))
               .group_by(_MESSAGES.c.conversation_id).subquery())
    query = (sa.select(ConversationRow, sa.func.coalesce(counted.c.n, 0),
                       sa.func.coalesce(counted.c.top, 0))
             .outerjoin(counted, counted.c.conversation_id == ConversationRow.id)
             .where(sa.or_(ConversationRow.message_count != sa.func.coalesce(counted.c.n, 0),
                           ConversationRow.last_seq < sa.func.coalesce(counted.c.top, 0))))
    if mind_id is not None:
        query = query.where(ConversationRow.mind_id == mind_id)
    problems = []
    for row, count, top in session.execute(query).all():
        problems.append(f"conversation {row.id} counts {row.message_count} messages up to seq "
                        f"{row.last_seq} but holds {count} up to seq {top}")
        if repair:
            row.message_count = int(count)
            row.last_seq = max(int(row.last_seq), int(top))
    session.flush()
    return problems

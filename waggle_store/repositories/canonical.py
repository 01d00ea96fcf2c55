"""The canonical conversation of a mind: one per mind, across channels, compacted as it grows.

Compaction (in :func:`compact_summary`) turns the oldest messages into lines of a text summary:
the existing summary first, then one line per compacted message with non-empty text,
``User: …`` / ``Assistant: …`` / ``System: …`` (a ``tool`` message carries a tool's result, not
conversation text, and gives no line), each text longer than 200 bytes of UTF-8 cut to at most
200 bytes on a character boundary with ``...`` appended; the lines are joined with ``\\n`` and a
summary over 4,000 bytes keeps its last 4,000 bytes (again on a character boundary).

Every write locks the canonical row first (it is created race-free through the partial unique
index ``uq_waggle_conversations_canonical``), so appends from several channels at once each see
the others' messages: none is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import ConflictError
from waggle_store.models import ConversationRow, MessageRow
from waggle_store.records import CanonicalContext
from waggle_store.repositories.common import check_text, insert_or_none
from waggle_store.repositories.conversations import ConversationRepository, MessageSpec
from waggle_store.timeutil import utcnow

__all__ = ["LINE_BYTES", "SUMMARY_BYTES", "CanonicalRepository", "compact_summary"]

#: A compacted message's text is cut to at most this many bytes of UTF-8 (then ``...``).
LINE_BYTES: Final = 200
#: A compacted summary keeps at most its last this many bytes of UTF-8.
SUMMARY_BYTES: Final = 4000
_PREFIX: Final = {"user": "User", "assistant": "Assistant", "system": "System"}
_MESSAGES = cast(sa.Table, MessageRow.__table__)
_RACE_ATTEMPTS: Final = 8


def _head_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` bytes of UTF-8 (whole characters)."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def _tail_bytes(text: str, limit: int) -> str:
    """The longest suffix of ``text`` of at most ``limit`` bytes of UTF-8 (whole characters)."""
    return text.encode("utf-8")[-limit:].decode("utf-8", errors="ignore")


def compact_summary(summary: str | None, messages: Sequence[tuple[str, str]]) -> str:
    """The summary after compacting ``messages`` ((role, text) pairs, oldest first) into it."""
    parts = [] if summary is None else [summary]
    for role, text in messages:
        prefix = _PREFIX.get(role)
        if prefix is None or not text:
            continue
        if len(text.encode("utf-8")) > LINE_BYTES:
            text = _head_bytes(text, LINE_BYTES) + "..."
        parts.append(f"{prefix}: {text}")
    joined = "\n".join(parts)
    if len(joined.encode("utf-8")) > SUMMARY_BYTES:
        joined = _tail_bytes(joined, SUMMARY_BYTES)
    return joined


class CanonicalRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id
        self.conversations = ConversationRepository(session, mind_id)

    def _find(self, *, lock: bool) -> ConversationRow | None:
        query = sa.select(ConversationRow).where(ConversationRow.mind_id == self.mind_id,
                                                 ConversationRow.kind == "canonical")
        if lock:
            query = query.with_for_update(key_share=True).execution_options(
                populate_existing=True)
        return self.session.scalar(query)

    def locked(self) -> ConversationRow:
        """The canonical row, created when absent, locked for the rest of the transaction."""
        for _ in range(_RACE_ATTEMPTS):
            found = self._find(lock=True)
            if found is not None:
                return found
            insert_or_none(self.session, ConversationRow(mind_id=self.mind_id, kind="canonical"))
        raise ConflictError("could not create the canonical conversation: too many writers")

    def context(self, window: int) -> CanonicalContext:
        found = self._find(lock=False)
        if found is None:
            return CanonicalContext(None, [])
        return CanonicalContext(found.summary, self.conversations.message_rows(found.id, window))

    def append(self, specs: Sequence[MessageSpec], *, threshold: int, window: int) -> None:
        """Append, then compact when more than ``threshold`` messages are kept: the oldest go
        into the summary and the newest ``window`` stay."""
        row = self.locked()
        self.conversations.append(row, specs, None)
        count = int(row.message_count)
        to_compact = count - window
        if count <= threshold or to_compact <= 0:
            return
        cut = int(row.last_seq) - window  # the messages with seq <= cut are compacted
        oldest = self.session.execute(
            sa.select(_MESSAGES.c.role, _MESSAGES.c.content)
            .where(_MESSAGES.c.conversation_id == row.id, _MESSAGES.c.seq <= cut)
            .order_by(_MESSAGES.c.seq)).all()
        row.summary = compact_summary(row.summary, [(r.role, r.content) for r in oldest])
        self.conversations.trim(row, window)
        self.session.flush()

    def set_summary(self, summary: str, keep_last: int | None) -> None:
        """Replace the summary (an LLM's); ``keep_last`` keeps only the newest messages."""
        text = check_text(summary, name="summary", allow_empty=True)
        row = self.locked()
        row.summary = text
        row.updated_at = utcnow()
        if keep_last is not None:
            self.conversations.trim(row, keep_last)
        self.session.flush()

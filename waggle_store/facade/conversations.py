"""``mind.conversations``: an agent's message history per channel, and the canonical conversation.

A conversation keeps messages as rows (role, content, tool calls, tool-call id, metadata), in the
order they were appended. ``open(channel)`` returns the one open conversation of a channel
(created when absent; race-free across processes); ``create`` starts a new one and closes the
channel's previous open one. ``append`` trims to the newest ``keep_last`` messages (20 by
default); ``remember=True`` also stores each user and assistant message as a memory of the mind
(in the session ``conversation-<id>``), so what scrolled out of the kept context is still found
by ``mind.search``.

The canonical conversation is one per mind, shared across channels: ``canonical_append``
compacts its oldest messages into a text summary once it holds more than ``threshold`` messages
(the rules are in :mod:`waggle_store.repositories.canonical`).

Every call is one transaction: an exception means nothing of the call was stored.
"""

from __future__ import annotations

from typing import Any

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError
from waggle_store.knowledge.extract import Extractor
from waggle_store.pipeline.cognify import prepare_item, write_items_in
from waggle_store.pipeline.cognify_vectors import embed_texts, vector_plan
from waggle_store.pipeline.extraction import extractor_of
from waggle_store.pipeline.ingest import Item
from waggle_store.records import (
    CanonicalContext,
    Conversation,
    ConversationInfo,
    MemoryInput,
    Message,
)
from waggle_store.repositories.canonical import CanonicalRepository
from waggle_store.repositories.common import MAX_LIMIT, check_int, js_trim, strip_hm_prefix
from waggle_store.repositories.conversations import (
    ConversationRepository,
    MessageSpec,
    check_messages,
    check_optional_count,
    newest_messages,
)
from waggle_store.repositories.knowledge_common import lock_graph
from waggle_store.repositories.sessions import SessionRepository

#: The frame source of a remembered message, by role (the others are not remembered).
_REMEMBERED = {"user": "user_stated", "assistant": "agent_inferred"}


def memory_session(conversation_id: int) -> str:
    """The session (gop_id) that remembered messages of a conversation are stored in."""
    return f"conversation-{conversation_id}"


class ConversationsAPI:
    def __init__(self, mind: MindContext) -> None:
        self.mind = mind

    # -- channel conversations ----------------------------------------------------------------

    def open(self, channel: str = "default", *, label: str | None = None) -> Conversation:
        """The open conversation of (mind, channel), created (with ``label``) when absent."""
        with self.mind.write() as s:
            repo = ConversationRepository(s, self.mind.id)
            return repo.conversation(repo.open(channel, label), self.mind.name)

    def create(self, channel: str = "default", *, label: str | None = None) -> Conversation:
        """A new conversation of ``channel``, now its open one (the previous one is closed)."""
        with self.mind.write() as s:
            repo = ConversationRepository(s, self.mind.id)
            return repo.conversation(repo.create(channel, label), self.mind.name)

    def get(self, conversation_id: int) -> Conversation | None:
        """The conversation with every message it keeps, or None."""
        with self.mind.read() as s:
            repo = ConversationRepository(s, self.mind.id)
            row = repo.row(conversation_id)
            return None if row is None else repo.conversation(row, self.mind.name)

    def messages(self, conversation_id: int, *, limit: int | None = None) -> list[Message]:
        """The newest ``limit`` messages (None: all it keeps), oldest first."""
        wanted = check_optional_count(limit, name="limit")
        with self.mind.store.read_connection() as conn:
            return newest_messages(conn, self.mind.id, conversation_id, wanted)

    def list(self, *, channel: str | None = None) -> list[ConversationInfo]:
        """This mind's conversations, newest first (``channel``: that channel's only)."""
        with self.mind.read() as s:
            return ConversationRepository(s, self.mind.id).list(channel=channel)

    def find_by_label(self, label: str) -> Conversation | None:
        """The newest conversation with this label, or None."""
        with self.mind.read() as s:
            repo = ConversationRepository(s, self.mind.id)
            row = repo.find_by_label(label)
            return None if row is None else repo.conversation(row, self.mind.name)

    def set_label(self, conversation_id: int, label: str | None) -> None:
        with self.mind.write() as s:
            ConversationRepository(s, self.mind.id).set_label(conversation_id, label)

    def delete(self, conversation_id: int) -> None:
        """Delete the conversation and its messages (memories it remembered stay)."""
        with self.mind.write() as s:
            ConversationRepository(s, self.mind.id).delete(conversation_id)

    def append(self, conversation_id: int, messages: Any, *, keep_last: int | None = 20,
               remember: bool = False) -> Conversation:
        """Append ``messages`` (ws.Message or dicts with role, content and optionally
        tool_calls, tool_call_id, metadata), then keep only the newest ``keep_last`` (None: all).

        Returns the conversation with the messages it keeps when ``keep_last`` bounds them, and
        with ``keep_last=None`` the messages this call appended (``messages()`` reads more).
        ``remember=True`` also stores each user and assistant message with text as a memory
        (embedded before the transaction, like ``cognify``; memories and messages are then
        written in one transaction).
        """
        specs = check_messages(messages)
        keep = check_optional_count(keep_last, name="keep_last")
        if not isinstance(remember, bool):
            raise InvalidInputError("remember must be True or False")
        items: list[Item] = []
        vectors: list[list[float]] | None = None
        embed_error: str | None = None
        ident = 0
        if remember:
            with self.mind.read() as s:  # refused before any provider is called (and billed)
                ident = ConversationRepository(s, self.mind.id).require(conversation_id).id
            items = _memories(specs, extractor_of(self.mind.store))
            if items:
                use_vectors, embed_error = vector_plan(self.mind)
                if use_vectors:
                    vectors, failed = embed_texts(self.mind, [it.content for it in items])
                    embed_error = failed or embed_error
        with self.mind.write() as s:
            repo = ConversationRepository(s, self.mind.id)
            if items:  # the lock order of every write path: the mind row, the session, then ours
                lock_graph(s, self.mind.id)
                gop = SessionRepository(s, self.mind.id).ensure(memory_session(ident)).gop_id
                write_items_in(s, self.mind, items, gop, vectors, embed_error)
            row = repo.require(conversation_id, lock=True)
            repo.append(row, specs, keep)
            shown = keep if keep is not None else len(specs)
            return repo.conversation(row, self.mind.name, shown)

    # -- the canonical conversation -----------------------------------------------------------

    def canonical_append(self, messages: Any, *, threshold: int = 100,
                         window: int = 50) -> CanonicalContext:
        """Append to the mind's canonical conversation; once it keeps more than ``threshold``
        messages, all but the newest ``window`` are compacted into its summary. Returns the
        summary and the newest ``window`` messages."""
        specs = check_messages(messages)
        limit = check_int(threshold, name="threshold", minimum=0, maximum=MAX_LIMIT)
        keep = check_int(window, name="window", minimum=0, maximum=MAX_LIMIT)
        with self.mind.write() as s:
            canonical = CanonicalRepository(s, self.mind.id)
            canonical.append(specs, threshold=limit, window=keep)
            return canonical.context(keep)

    def canonical(self, *, window: int = 50) -> CanonicalContext:
        """The canonical conversation's summary (None before any) and newest ``window``
        messages."""
        keep = check_int(window, name="window", minimum=0, maximum=MAX_LIMIT)
        with self.mind.read() as s:
            return CanonicalRepository(s, self.mind.id).context(keep)

    def set_canonical_summary(self, summary: str, *, keep_last: int | None = None) -> None:
        """Replace the canonical summary (one an LLM wrote); ``keep_last`` also keeps only the
        newest messages (None: all stay)."""
        keep = check_optional_count(keep_last, name="keep_last")
        with self.mind.write() as s:
            CanonicalRepository(s, self.mind.id).set_summary(summary, keep)


def _memories(specs: list[MessageSpec], extractor: Extractor) -> list[Item]:
    """The memories of a remembering append: its user and assistant messages with text."""
    items = []
    for index, spec in enumerate(specs):
        source = _REMEMBERED.get(spec.role)
        if source is None or not js_trim(strip_hm_prefix(spec.content)):
            continue
        items.append(prepare_item(index, MemoryInput(spec.content, None, None, source),
                                  "normal", source, extractor))
    return items


__all__ = ["ConversationsAPI", "memory_session"]

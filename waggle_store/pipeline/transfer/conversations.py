"""Conversations, messages and the mind's agent in a ``waggle-mind`` export (format version 2).

The export writes every conversation of the mind, then every message (by id, so within a
conversation by ``seq``), then the agent of the mind's name if there is one. The import checks
them in pass 1 (:class:`ConversationChecks`: a message's conversation on an earlier line, one
``seq`` once per conversation, the API's size caps) and writes them in pass 2
(:class:`ConversationWriter`, a base of the import's writer), merging into a mind that has
conversations already:

* a conversation the mind has (same kind, channel and creation time) is not imported again, nor
  are its messages; an open channel conversation whose channel the mind has an open one of is
  imported closed; a canonical conversation when the mind has one is skipped with its messages;
* the agent is imported under the name of the mind it goes into; an agent the store has under
  that name is kept.

What was merged is listed in the import's problems.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.transfer.format import Line, iso
from waggle_store.pipeline.transfer.problems import Problems
from waggle_store.repositories import conversation_transfer as rows
from waggle_store.repositories.agents import AgentRepository
from waggle_store.repositories.common import check_json, check_text
from waggle_store.repositories.conversations import MAX_MESSAGES_PER_CALL

__all__ = ["ConversationChecks", "ConversationWriter", "count_records", "emit_conversations"]

Emit = Callable[[str, dict[str, Any]], None]
#: Messages per INSERT of the import.
_BATCH = MAX_MESSAGES_PER_CALL


# -- export -----------------------------------------------------------------------------------


def count_records(conn: sa.Connection, mind_id: int) -> int:
    conversations, messages = rows.conversation_counts(conn, mind_id)
    return conversations + messages + (rows.agent_of(conn, rows.mind_name(conn, mind_id))
                                       is not None)


def emit_conversations(conn: sa.Connection, mind_id: int, emit: Emit) -> None:
    for c in rows.conversation_rows(conn, mind_id):
        emit("conversation", {"id": c["id"], "kind": c["kind"], "channel": c["channel"],
                              "label": c["label"], "status": c["status"],
                              "summary": c["summary"], "last_seq": int(c["last_seq"]),
                              "created_at": iso(c["created_at"]),
                              "updated_at": iso(c["updated_at"])})
    for m in rows.message_rows(conn, mind_id):
        emit("message", {"conversation_id": m["conversation_id"], "seq": int(m["seq"]),
                         "role": m["role"], "content": m["content"],
                         "tool_calls": m["tool_calls"], "tool_call_id": m["tool_call_id"],
                         "metadata": m["metadata"], "created_at": iso(m["created_at"])})
    agent = rows.agent_of(conn, rows.mind_name(conn, mind_id))
    if agent is not None:
        emit("agent", {"name": agent["name"], "manifest": agent["manifest"],
                       "state": agent["state"], "created_at": iso(agent["created_at"]),
                       "updated_at": iso(agent["updated_at"])})


# -- import, pass 1 ---------------------------------------------------------------------------


class ConversationChecks:
    """What pass 1 checks of the version-2 records (see the module docstring)."""

    def __init__(self) -> None:
        self.conversations: set[int] = set()
        self.places: set[tuple[int, int]] = set()
        self.agents = 0

    def check(self, line_no: int, line: Line) -> None:
        f = line.fields
        try:
            if line.type == "conversation":
                if f["id"] in self.conversations:
                    raise InvalidInputError(f"conversation {f['id']} is defined twice")
                if f["kind"] == "channel" and f["channel"] is None:
                    raise InvalidInputError(f"conversation {f['id']} has no channel")
                if f["summary"] is not None:
                    check_text(f["summary"], name="summary", allow_empty=True)
                self.conversations.add(f["id"])
            elif line.type == "message":
                place = (f["conversation_id"], f["seq"])
                if place[0] not in self.conversations:
                    raise InvalidInputError(f"message {place[1]} is in conversation {place[0]}, "
                                            "which no earlier conversation record defines")
                if place in self.places:
                    raise InvalidInputError(
                        f"conversation {place[0]} has two messages with seq {place[1]}")
                self.places.add(place)
                check_text(f["content"], name="content", allow_empty=True)
                for name in ("tool_calls", "metadata"):
                    if f[name] is not None:
                        check_json(f[name], name=name)
            else:
                self.agents += 1
                if self.agents > 1:
                    raise InvalidInputError("a second agent record (a mind has one agent)")
                for name in ("manifest", "state"):
                    check_json(f[name], name=name)
        except InvalidInputError as exc:
            raise InvalidInputError(f"line {line_no}: {exc}") from exc


# -- import, pass 2 ---------------------------------------------------------------------------


class ConversationWriter:
    """Base of the import's MindWriter: writes the version-2 records (module docstring)."""

    s: Session
    mind_id: int
    problems: Problems
    counts: dict[str, int]

    _conv_ids: dict[int, int | None]
    _conv_last: dict[int, int]

    def _conversation_ids(self) -> dict[int, int | None]:
        """Old conversation id -> new id (None: not imported), made on first use."""
        if not hasattr(self, "_conv_ids"):
            self._conv_ids, self._conv_last = {}, {}
        return self._conv_ids

    def _write_conversation(self, records: list[dict[str, Any]]) -> None:
        ids = self._conversation_ids()
        open_channels, has_canonical = rows.existing_conversations(self.s, self.mind_id)
        for r in records:
            if rows.same_conversation(self.s, self.mind_id, r):
                self.problems.add("conversation already in this mind", f"conversation {r['id']}",
                                  "kept the mind's own, its messages not imported again")
                ids[r["id"]] = None
                continue
            if r["kind"] == "canonical":
                if has_canonical:
                    self.problems.add("canonical conversation already in this mind",
                                      f"conversation {r['id']}",
                                      "kept the mind's own, the file's skipped with its messages")
                    ids[r["id"]] = None
                    continue
                has_canonical = True
            elif r["status"] == "open":
                if r["channel"] in open_channels:
                    self.problems.add("second open conversation for a channel",
                                      repr(r["channel"]), "imported as closed")
                    r = {**r, "status": "closed"}
                else:
                    open_channels.add(r["channel"])
            new_id = rows.insert_conversation(self.s, self.mind_id, r)
            ids[r["id"]] = new_id
            self._conv_last[new_id] = r["last_seq"]
            self.counts["conversations"] = self.counts.get("conversations", 0) + 1

    def _write_message(self, records: list[dict[str, Any]]) -> None:
        ids = self._conversation_ids()
        fresh = [{**r, "conversation_id": ids[r["conversation_id"]]} for r in records
                 if ids.get(r["conversation_id"]) is not None]
        for start in range(0, len(fresh), _BATCH):
            rows.insert_messages(self.s, fresh[start:start + _BATCH])
        self.counts["messages"] = self.counts.get("messages", 0) + len(fresh)

    def _write_agent(self, records: list[dict[str, Any]]) -> None:
        record = records[0]
        name = rows.mind_name(self.s, self.mind_id)
        agents = AgentRepository(self.s)
        existing = agents.row(name)
        if existing is not None and existing.name == name:
            self.problems.add("agent already in this store", repr(name),
                              "kept the store's own agent")
            return
        if existing is not None:  # agent names match in any case, mind names do not
            self.problems.add("agent name taken by another mind's agent", repr(existing.name),
                              f"agent of {name!r} not imported")
            return
        agents.save(name, record["manifest"], record["state"],
                    created_at=record["created_at"], updated_at=record["updated_at"])
        self.counts["agents"] = self.counts.get("agents", 0) + 1

    def finish_conversations(self) -> None:
        """Set the imported conversations' counters from their message rows."""
        for new_id, last_seq in getattr(self, "_conv_last", {}).items():
            rows.set_counters(self.s, new_id, last_seq)

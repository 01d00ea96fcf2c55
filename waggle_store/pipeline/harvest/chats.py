"""Adapters for the ChatGPT and Claude data exports (their ``conversations.json``).

An item is a conversation; each of its user/assistant messages becomes a frame that keeps the
message's own time, with the conversation's title in front for context:
``[chatgpt: Trip planning] user: ...``. The identity of a frame across syncs is its content hash
(per mind, as for every memory), so a conversation that gained messages since the last sync
contributes only the new ones.

ChatGPT: ``[{title, create_time (epoch s), mapping: {node: {message: {author: {role},
create_time, content: {parts: [...]}}, parent}}, current_node}]``; the branch that ends at
``current_node`` is the conversation as the user last saw it (edited-away branches are left out).
Claude: ``[{uuid, name, created_at (ISO), chat_messages: [{sender, text, created_at, content}]}]``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.harvest.items import (
    HarvestFrame,
    HarvestItem,
    Parsed,
    epoch_utc,
    sha256,
)
from waggle_store.pipeline.safe_files import bounded_json
from waggle_store.timeutil import parse_iso

__all__ = ["parse_chatgpt", "parse_claude"]

_MAX_TITLE = 200
_ROLES = {"user": "user", "human": "user", "assistant": "assistant"}


def _conversations(data: bytes, kind: str) -> list[Any]:
    try:
        value = bounded_json(data.decode("utf-8-sig"), f"the {kind} export")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"the {kind} export is not UTF-8 text: {exc}") from exc
    if isinstance(value, dict) and isinstance(value.get("conversations"), list):
        value = value["conversations"]
    if not isinstance(value, list):
        raise InvalidInputError(f"the {kind} export must be a JSON list of conversations")
    return value


def _title(value: Any) -> str:
    """A conversation's title as it prefixes each of its frames: text, at most 200 characters."""
    text = value.strip()[:_MAX_TITLE] if isinstance(value, str) else ""
    return text.strip() or "Untitled"


def _frame(kind: str, title: str, role: str, text: str, when: datetime | None) -> HarvestFrame:
    return HarvestFrame(f"[{kind}: {title}] {role}: {text.strip()}", when, None, "import")


def _chatgpt_text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        texts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None
                 for p in parts]
        return "\n".join(t for t in texts if isinstance(t, str) and t.strip())
    text = content.get("text")
    return text if isinstance(text, str) else ""


def _chatgpt_nodes(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The messages of the current branch, oldest first (all messages by time without one)."""
    if isinstance(current, str) and current in mapping:
        chain: list[dict[str, Any]] = []
        seen: set[str] = set()
        node_id: Any = current
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id]
            if not isinstance(node, dict):
                break
            chain.append(node)
            node_id = node.get("parent")
        return list(reversed(chain))
    nodes = [n for n in mapping.values() if isinstance(n, dict)]
    return sorted(nodes, key=lambda n: float((n.get("message") or {}).get("create_time") or 0))


def _each(data: bytes, kind: str, parse: Callable[[Any, str], HarvestItem | str]) -> Parsed:
    """Every conversation through ``parse``: an item, or a problem of that conversation alone
    (what it says is wrong, or the error a malformed value raised)."""
    parsed = Parsed(sha256(data))
    for index, conv in enumerate(_conversations(data, kind)):
        ref = f"conversation {index + 1}"
        try:
            result = parse(conv, ref)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            result = f"unreadable: {type(exc).__name__}: {exc}"
        if isinstance(result, str):
            parsed.problems.append((ref, result))
        else:
            parsed.items.append(result)
    return parsed


def parse_chatgpt(data: bytes) -> Parsed:
    return _each(data, "chatgpt", _chatgpt_item)


def _chatgpt_item(conv: Any, ref: str) -> HarvestItem | str:
    if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
        return "not a conversation object with a mapping"
    title = _title(conv.get("title"))
    ref = f"{ref} ({title})"
    started = epoch_utc(conv.get("create_time"))
    item = HarvestItem(ref)
    for node in _chatgpt_nodes(conv["mapping"], conv.get("current_node")):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        role = _ROLES.get(str((message.get("author") or {}).get("role")))
        text = _chatgpt_text(message.get("content"))
        hidden = (message.get("metadata") or {}).get("is_visually_hidden_from_conversation")
        if role is None or not text.strip() or hidden:
            continue
        when = epoch_utc(message.get("create_time")) or started
        item.frames.append(_frame("chatgpt", title, role, text, when))
    return item


def _iso_or_none(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_iso(value)
    except InvalidInputError:
        return None


def _claude_text(message: dict[str, Any]) -> str:
    text = message.get("text")
    if isinstance(text, str) and text.strip():
        return text
    blocks = message.get("content")
    if isinstance(blocks, list):
        return "\n".join(b["text"] for b in blocks if isinstance(b, dict)
                         and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def parse_claude(data: bytes) -> Parsed:
    return _each(data, "claude", _claude_item)


def _claude_item(conv: Any, ref: str) -> HarvestItem | str:
    if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
        return "not a conversation object with chat_messages"
    title = _title(conv.get("name"))
    ref = f"{ref} ({title})"
    started = _iso_or_none(conv.get("created_at"))
    item = HarvestItem(ref)
    for message in conv["chat_messages"]:
        if not isinstance(message, dict):
            continue
        role = _ROLES.get(str(message.get("sender")))
        text = _claude_text(message)
        if role is None or not text.strip():
            continue
        when = _iso_or_none(message.get("created_at")) or started
        item.frames.append(_frame("claude", title, role, text, when))
    return item

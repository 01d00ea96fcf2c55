"""``mind.awareness``: layer 1, short-term working state."""

from __future__ import annotations

from datetime import datetime
from types import EllipsisType
from typing import Any

from waggle_store.context import MindContext
from waggle_store.records import AwarenessItem
from waggle_store.repositories.awareness import AwarenessRepository

_SECTIONS = (("task", "Active Tasks"), ("action", "Recent Actions"), ("pending", "Pending Items"),
             ("flag", "Context Flags"))


class AwarenessAPI:
    def __init__(self, mind: MindContext) -> None:
        self.mind = mind

    def add(self, category: str, content: str, *, priority: int = 0,
            metadata: dict[str, Any] | None = None,
            expires_at: datetime | str | None = None) -> AwarenessItem:
        with self.mind.write() as s:
            return AwarenessRepository(s, self.mind.id).add(
                category, content, priority=priority, metadata=metadata, expires_at=expires_at)

    def active(self, category: str | None = None, *, limit: int = 10) -> list[AwarenessItem]:
        """Unexpired items, priority desc (newest first among equals), at most ``limit``."""
        with self.mind.read() as s:
            return AwarenessRepository(s, self.mind.id).active(category, limit=limit)

    def update(self, item_id: int, *, content: str | None = None, priority: int | None = None,
               expires_at: datetime | str | EllipsisType | None = ...,
               category: str | None = None) -> AwarenessItem:
        """Change an item's content, priority, category or expiry; ``expires_at=None`` clears
        the expiry, leaving it out keeps it. An unknown id is a NotFoundError."""
        with self.mind.write() as s:
            return AwarenessRepository(s, self.mind.id).update(
                item_id, content=content, priority=priority, expires_at=expires_at,
                category=category)

    def update_metadata(self, item_id: int, metadata: dict[str, Any]) -> AwarenessItem:
        """Merge ``metadata`` into the item's metadata (shallow; the new keys win)."""
        with self.mind.write() as s:
            return AwarenessRepository(s, self.mind.id).update_metadata(item_id, metadata)

    def by_status(self, status: str) -> list[AwarenessItem]:
        """Unexpired items whose ``metadata["status"]`` equals ``status``, priority desc; no
        cap."""
        with self.mind.read() as s:
            return AwarenessRepository(s, self.mind.id).by_status(status)

    def get(self, item_id: int) -> AwarenessItem | None:
        with self.mind.read() as s:
            return AwarenessRepository(s, self.mind.id).get(item_id)

    def remove(self, item_id: int) -> None:
        with self.mind.write() as s:
            AwarenessRepository(s, self.mind.id).remove(item_id)

    def clear(self, category: str | None = None) -> int:
        with self.mind.write() as s:
            return AwarenessRepository(s, self.mind.id).clear(category)

    def to_context(self) -> str:
        """The active items grouped by category, in Waggle's prompt format."""
        items = self.active()
        if not items:
            return "No active awareness items."
        sections = []
        for category, label in _SECTIONS:
            lines = [f"- {i.content}" for i in items if i.category == category]
            if lines:
                sections.append(f"{label}:\n" + "\n".join(lines))
        return "\n\n".join(sections)

"""``mind.kv``: a small per-mind key/value store with JSON values."""

from __future__ import annotations

from typing import Any

from waggle_store.context import MindContext
from waggle_store.repositories.kv import KVRepository


class KVAPI:
    def __init__(self, mind: MindContext) -> None:
        self.mind = mind

    def get(self, key: str, default: Any = None) -> Any:
        with self.mind.read() as s:
            return KVRepository(s, self.mind.id).get(key, default)

    def set(self, key: str, value: Any) -> None:
        with self.mind.write() as s:
            KVRepository(s, self.mind.id).set(key, value)

    def delete(self, key: str) -> bool:
        """Remove a key; returns whether it existed (deleting a missing key is not an error)."""
        with self.mind.write() as s:
            return KVRepository(s, self.mind.id).delete(key)

    def items(self) -> list[tuple[str, Any]]:
        """Every (key, value) of this mind, ordered by key."""
        with self.mind.read() as s:
            return KVRepository(s, self.mind.id).items()

"""``mind.harvest``: register import sources (ChatGPT / Claude exports, Markdown folders, JSONL)
and sync them into the mind; see :mod:`waggle_store.pipeline.harvest.sync` for what a sync does."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.harvest import sync_sources
from waggle_store.pipeline.harvest.sync import Progress
from waggle_store.records import HarvestReport, HarvestSource
from waggle_store.repositories.common import check_choice, check_name
from waggle_store.repositories.harvest import HARVEST_KINDS, HarvestRepository, is_stale, to_source
from waggle_store.timeutil import optional_utc, utcnow

__all__ = ["HarvestAPI"]

#: Source names go into the session id ``harvest:<name>`` (a 255-character column).
MAX_SOURCE_NAME: Final = 200
_DISPLAY = {"chatgpt": "ChatGPT export", "claude": "Claude export", "markdown": "Notes",
            "jsonl": "JSONL"}


class HarvestAPI:
    def __init__(self, mind: MindContext) -> None:
        self.mind = mind

    def add_source(self, kind: str, path: str | Path, *, name: str | None = None,
                   auto_sync: bool = False, sync_interval_hours: int = 24,
                   display_name: str | None = None) -> HarvestSource:
        """Register a source (kind: chatgpt, claude, markdown, jsonl); ``name`` defaults to the
        kind. Adding a name again updates its path and settings; a new path forgets the content
        hash, so the next sync reads it (frames already stored are still not stored twice)."""
        check_choice(kind, HARVEST_KINDS, name="kind")
        if not isinstance(path, (str, Path)) or not str(path).strip():
            raise InvalidInputError("path must be a non-empty path to the source")
        resolved = str(Path(path).expanduser().resolve())
        source_name = check_name(name if name is not None else kind, name="source name",
                                 max_length=MAX_SOURCE_NAME)
        label = display_name or f"{_DISPLAY[kind]} ({Path(resolved).name})"
        with self.mind.write() as s:
            return HarvestRepository(s, self.mind.id).upsert(
                name=source_name, kind=kind, path=resolved, display_name=label,
                auto_sync=auto_sync, sync_interval_hours=sync_interval_hours)

    def sources(self) -> list[HarvestSource]:
        """Most recently synced first; sources never synced last."""
        with self.mind.read() as s:
            return HarvestRepository(s, self.mind.id).list()

    def get(self, name: str) -> HarvestSource | None:
        with self.mind.read() as s:
            row = HarvestRepository(s, self.mind.id).row(name)
            return None if row is None else to_source(row)

    def remove_source(self, name: str) -> bool:
        """Forget a source (its frames stay); returns whether it existed."""
        with self.mind.write() as s:
            return HarvestRepository(s, self.mind.id).remove(name)

    def stale(self, *, now: datetime | str | None = None) -> list[HarvestSource]:
        """Auto-synced sources due for a sync: never synced, or last synced at least
        ``sync_interval_hours`` ago."""
        moment = optional_utc(now, name="now") or utcnow()
        return [s for s in self.sources() if is_stale(s, moment)]

    def sync(self, name: str | None = None, *, progress: Progress | None = None) -> HarvestReport:
        """Sync one source (by name) or every source; unchanged sources are skipped."""
        with self.mind.read() as s:
            repo = HarvestRepository(s, self.mind.id)
            if name is not None:
                repo.require(name)
            chosen = [src for src in repo.list() if name is None or src.name == name]
        return sync_sources(self.mind, chosen, progress=progress)

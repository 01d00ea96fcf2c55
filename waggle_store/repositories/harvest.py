"""Harvest sources of one mind, and the tombstones of the harvested memories it forgot.

A source is identified by its ``name`` (the ``source`` column, unique per mind); ``kind`` says
which adapter reads it. The counters only ever grow: ``record_sync`` adds what one sync brought in,
and keeps the previous content hash when it is given none (a sync that failed part-way must be
retried in full next time, so it does not claim the content as seen).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import delete, select, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

from waggle_store.errors import ConflictError, InvalidInputError, NotFoundError
from waggle_store.models import FrameRow, HarvestSourceRow, HarvestTombstoneRow
from waggle_store.records import HarvestSource
from waggle_store.repositories.common import check_int, check_name, check_text
from waggle_store.timeutil import utcnow

__all__ = ["HARVEST_KINDS", "HarvestRepository", "is_stale", "to_source"]

HARVEST_KINDS: Final = ("chatgpt", "claude", "markdown", "jsonl")
_CHUNK: Final = 500


def to_source(row: HarvestSourceRow) -> HarvestSource:
    kind = row.kind or row.source  # rows imported from .mind files name their kind in ``source``
    return HarvestSource(row.source, kind, row.source_path, row.display_name, row.last_synced_at,
                         row.items_imported, row.frames_created, bool(row.auto_sync),
                         row.sync_interval_hours, row.last_content_hash)


def is_stale(source: HarvestSource, now: datetime) -> bool:
    """Auto-synced and never synced, or last synced at least ``sync_interval_hours`` ago."""
    if not source.auto_sync:
        return False
    if source.last_synced_at is None:
        return True
    return source.last_synced_at + timedelta(hours=source.sync_interval_hours) <= now


class HarvestRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def row(self, name: str) -> HarvestSourceRow | None:
        check_name(name, name="source name")
        return self.session.scalar(select(HarvestSourceRow).where(
            HarvestSourceRow.mind_id == self.mind_id, HarvestSourceRow.source == name))

    def require(self, name: str) -> HarvestSourceRow:
        row = self.row(name)
        if row is None:
            raise NotFoundError(f"no harvest source named {name!r} in this mind")
        return row

    def list(self) -> list[HarvestSource]:
        """Most recently synced first (never-synced last), then by name."""
        rows = self.session.scalars(select(HarvestSourceRow).where(
            HarvestSourceRow.mind_id == self.mind_id))
        sources = sorted((to_source(r) for r in rows), key=lambda s: s.name)
        never = [s for s in sources if s.last_synced_at is None]
        synced = [s for s in sources if s.last_synced_at is not None]
        synced.sort(key=lambda s: s.last_synced_at or utcnow(), reverse=True)  # stable: name ties
        return synced + never

    def upsert(self, *, name: str, kind: str, path: str, display_name: str, auto_sync: bool,
               sync_interval_hours: int) -> HarvestSource:
        """Register a source, or update the path and settings of the one with this name.

        A name already used by a source of another kind is refused: its counters and content
        hash describe other data."""
        check_name(name, name="source name")
        check_text(path, name="path")
        check_text(display_name, name="display_name")
        check_int(sync_interval_hours, name="sync_interval_hours", minimum=1, maximum=24 * 3650)
        if not isinstance(auto_sync, bool):
            raise InvalidInputError(f"auto_sync must be a bool, got {type(auto_sync).__name__}")
        row = self.row(name)
        if row is None:
            row = HarvestSourceRow(mind_id=self.mind_id, source=name, kind=kind,
                                   display_name=display_name, source_path=path,
                                   items_imported=0, frames_created=0, auto_sync=auto_sync,
                                   sync_interval_hours=sync_interval_hours)
            try:
                with self.session.begin_nested():
                    self.session.add(row)
                return to_source(row)
            except sa_exc.IntegrityError as exc:  # a concurrent add_source won: update that row
                found = self.row(name)
                if found is None:
                    raise ConflictError(f"could not register harvest source {name!r}") from exc
                row = found
        existing_kind = row.kind or row.source
        if existing_kind != kind:
            raise ConflictError(
                f"harvest source {name!r} is a {existing_kind!r} source; pick another name for a "
                f"{kind!r} source")
        if row.source_path != path:
            row.last_content_hash = None  # another file: its content has not been seen
        row.kind = kind
        row.source_path = path
        row.display_name = display_name
        row.auto_sync = auto_sync
        row.sync_interval_hours = sync_interval_hours
        self.session.flush()
        return to_source(row)

    def record_sync(self, name: str, *, items: int, frames: int, content_hash: str | None,
                    at: datetime | None = None) -> HarvestSource:
        row = self.require(name)
        self.session.execute(update(HarvestSourceRow).where(HarvestSourceRow.id == row.id).values(
            items_imported=HarvestSourceRow.items_imported + items,
            frames_created=HarvestSourceRow.frames_created + frames,
            last_synced_at=at or utcnow(),
            **({"last_content_hash": content_hash} if content_hash is not None else {}),
        ))
        self.session.refresh(row)
        return to_source(row)

    def remove(self, name: str) -> bool:
        check_name(name, name="source name")
        result = self.session.execute(delete(HarvestSourceRow).where(
            HarvestSourceRow.mind_id == self.mind_id, HarvestSourceRow.source == name))
        return bool(result.rowcount)  # type: ignore[attr-defined]

    # -- the frames a sync would add ----------------------------------------------------------

    def known_hashes(self, hashes: Iterable[str]) -> set[str]:
        """Which of these content hashes this mind's frames already hold."""
        wanted = list(dict.fromkeys(hashes))
        found: set[str] = set()
        for start in range(0, len(wanted), _CHUNK):
            found.update(self.session.scalars(select(FrameRow.content_hash).where(
                FrameRow.mind_id == self.mind_id,
                FrameRow.content_hash.in_(wanted[start:start + _CHUNK]))))
        return found

    def forgotten_hashes(self, source: str, hashes: Iterable[str]) -> set[str]:
        """Which of these content hashes were harvested from ``source`` into this mind and then
        deleted (the tombstones the frames table's delete trigger writes, migration 0010)."""
        wanted = list(dict.fromkeys(hashes))
        found: set[str] = set()
        t = HarvestTombstoneRow
        for start in range(0, len(wanted), _CHUNK):
            found.update(self.session.scalars(select(t.content_hash).where(
                t.mind_id == self.mind_id, t.source == source,
                t.content_hash.in_(wanted[start:start + _CHUNK]))))
        return found

    def mark_accessed(self, frame_ids: Sequence[int], at: datetime) -> None:
        """An imported frame keeps its original ``created_at``, but its last access is the import:
        consolidation's decay starts when the memory entered this store, not years earlier."""
        ids = sorted(set(frame_ids))
        for start in range(0, len(ids), _CHUNK):
            self.session.execute(update(FrameRow).where(
                FrameRow.mind_id == self.mind_id, FrameRow.id.in_(ids[start:start + _CHUNK]),
            ).values(last_accessed=at).execution_options(synchronize_session=False))

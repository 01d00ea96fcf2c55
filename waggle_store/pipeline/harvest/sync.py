"""Syncing harvest sources into a mind (``harvest_import``, made incremental).

Per source:

1. Read it (no transaction open) and fingerprint it. The fingerprint equal to the one recorded
   at the last complete sync means nothing changed: the source is skipped unread further, and
   only its ``last_synced_at`` moves (so ``stale()`` stops listing it).
2. Otherwise every frame the adapter produced is hashed like a memory (``content_hash``) and
   those the mind already holds are dropped: a changed export contributes only its new messages,
   and re-running a sync imports nothing twice. An *item* (conversation, file, line) counts as
   imported when at least one of its frames is new.
3. The new frames go through :func:`~waggle_store.pipeline.cognify.cognify_batch` (entities,
   relations, vectors) into the source's own named session ``harvest:<name>``, oldest first,
   each keeping its original ``created_at``; their last access is set to the import time.
4. The counters grow by what was new. The fingerprint is recorded only when nothing failed, so
   a partly failed source is read again next time and its failures reported again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError, WaggleStoreError
from waggle_store.pipeline.cognify import cognify_batch
from waggle_store.pipeline.harvest.chats import parse_chatgpt, parse_claude
from waggle_store.pipeline.harvest.files import parse_jsonl, parse_markdown
from waggle_store.pipeline.harvest.items import HarvestFrame, Parsed, checked_items, export_bytes
from waggle_store.records import HarvestReport, HarvestSource, MemoryInput
from waggle_store.repositories.common import content_hash
from waggle_store.repositories.harvest import HarvestRepository
from waggle_store.repositories.sessions import SessionRepository
from waggle_store.timeutil import utcnow

__all__ = ["harvest_session", "read_source", "sync_sources"]

Progress = Callable[[int, int], None]
_OLDEST: Final = datetime.min.replace(tzinfo=UTC)


def harvest_session(name: str) -> str:
    """The named session a source's frames land in."""
    return f"harvest:{name}"


def read_source(kind: str, path: str) -> Parsed:
    """Parse a source with its kind's adapter (file reads only, no database)."""
    where = Path(path).expanduser()
    if not os.path.lexists(where):
        raise InvalidInputError(f"{path} does not exist")
    if kind == "chatgpt":
        return checked_items(parse_chatgpt(export_bytes(where)))
    if kind == "claude":
        return checked_items(parse_claude(export_bytes(where)))
    if kind == "markdown":
        return checked_items(parse_markdown(where))
    if kind == "jsonl":
        return checked_items(parse_jsonl(where))
    raise InvalidInputError(f"unknown harvest kind {kind!r}")


@dataclass
class _Tally:
    synced: int = 0
    skipped: int = 0
    seen: int = 0
    imported: int = 0
    frames: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    def report(self) -> HarvestReport:
        return HarvestReport(self.synced, self.skipped, self.seen, self.imported, self.frames,
                             self.failures)


def _new_frames(mind: MindContext, source: str,
                parsed: Parsed) -> list[tuple[int, HarvestFrame]]:
    """(item index, frame) of the frames whose memory the mind does not hold yet and whose
    memory was not forgotten (a harvested memory deleted from the mind leaves a tombstone of
    its source and content hash, :meth:`HarvestRepository.forgotten_hashes`), first occurrence
    only, oldest first (frames without a time last, in source order)."""
    hashes = [[content_hash(f.content) for f in item.frames] for item in parsed.items]
    with mind.read() as session:
        repo = HarvestRepository(session, mind.id)
        wanted = [h for hs in hashes for h in hs]
        known = repo.known_hashes(wanted) | repo.forgotten_hashes(source, wanted)
    fresh: list[tuple[int, HarvestFrame]] = []
    for index, (item, item_hashes) in enumerate(zip(parsed.items, hashes, strict=True)):
        for frame, digest in zip(item.frames, item_hashes, strict=True):
            if digest not in known:
                known.add(digest)
                fresh.append((index, frame))
    fresh.sort(key=lambda pair: (pair[1].created_at is None, pair[1].created_at or _OLDEST))
    return fresh


def _sync_one(mind: MindContext, source: HarvestSource, tally: _Tally,
              progress: Progress | None) -> None:
    if source.path is None:
        tally.failures.append((source.name, "the source has no path"))
        return
    try:
        parsed = read_source(source.kind, source.path)
    except (OSError, WaggleStoreError) as exc:
        tally.failures.append((source.name, f"{type(exc).__name__}: {exc}"))
        return
    if parsed.content_hash == source.last_content_hash:
        with mind.write() as session:
            HarvestRepository(session, mind.id).record_sync(source.name, items=0, frames=0,
                                                            content_hash=None)
        tally.skipped += 1
        return
    tally.seen += len(parsed.items)
    failures = [(f"{source.name}: {ref}", why) for ref, why in parsed.problems]
    fresh = _new_frames(mind, source.name, parsed)
    gop = harvest_session(source.name)
    with mind.write() as session:
        SessionRepository(session, mind.id).ensure(
            gop, summary=f"Harvest import from {source.display_name}")
    inputs = [MemoryInput(f.content, f.created_at, f.importance, f.source or "import")
              for _, f in fresh]
    result = cognify_batch(mind, inputs, gop_id=gop, progress=progress) if inputs else None
    created: list[int] = []
    items: set[int] = set()
    if result is not None:
        # Only what this call stored counts: a concurrent sync of the same source may have
        # stored some of these frames since _new_frames looked (then they are dedup hits).
        for (item_index, _), frame_id, new in zip(fresh, result.frame_ids, result.created,
                                                  strict=True):
            if frame_id is not None and new:
                created.append(frame_id)
                items.add(item_index)
        failures += [(f"{source.name}: {parsed.items[fresh[i][0]].ref}", why)
                     for i, why in result.failures]
    with mind.write() as session:
        repo = HarvestRepository(session, mind.id)
        repo.mark_accessed(created, utcnow())
        repo.record_sync(source.name, items=len(items), frames=len(created),
                         content_hash=None if failures else parsed.content_hash)
    tally.synced += 1
    tally.imported += len(items)
    tally.frames += len(created)
    tally.failures += failures


def sync_sources(mind: MindContext, sources: Sequence[HarvestSource], *,
                 progress: Progress | None = None) -> HarvestReport:
    """Sync these sources one after the other; one source's failure does not stop the others.

    ``progress(done, total)`` is called as each source's new frames are stored (counts of that
    source's new frames)."""
    tally = _Tally()
    for source in sources:
        _sync_one(mind, source, tally, progress)
    return tally.report()

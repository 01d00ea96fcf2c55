"""Layer 2 repository: I/P/B memory frames of one mind.

Invariants kept here rather than trusted to callers (the inserts themselves are the frame
writer's, :mod:`~waggle_store.repositories.frame_writer`):

- ``t`` is gapless and unique per session: the session row is locked before ``MAX(t) + 1`` is
  read, so concurrent writers queue (a no-op on SQLite, where BEGIN IMMEDIATE serialises writers).
- I-frame dedup is per mind, by the indexed ``content_hash``, with no recency window: an older
  duplicate is found however many frames came since. On Postgres the mind row is locked first,
  so two transactions cannot both miss the same duplicate.
- Every frame has a manifest row (``frame_embeddings``) saying whether its vector is current;
  changing content sets it back to ``pending`` so reconcile re-embeds it.
- Deletes go through the database's FK rules: frames based on a deleted frame get
  ``base_frame_id = NULL``, mentions and the manifest cascade, FTS rows follow via triggers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models import (
    FRAME_SOURCES,
    IMPORTANCE_LEVELS,
    FrameEmbeddingRow,
    FrameRow,
)
from waggle_store.records import CompactionReport, Frame, FrameStats, GopState
from waggle_store.repositories.common import (
    MAX_CONTENT_BYTES,
    MAX_LIMIT,
    check_choice,
    check_content,
    check_id,
    check_int,
    check_name,
    content_hash,
    rowcount,
)
from waggle_store.repositories.frame_sql import DUPLICATE_I
from waggle_store.repositories.frame_writer import FrameWriter
from waggle_store.repositories.sessions import SessionRepository
from waggle_store.textinput import check_metadata
from waggle_store.timeutil import optional_utc, utcnow

MERGE_THRESHOLD = 10  # compact() merges a session's P-frames when more than this many follow its I
KEEP_NEWEST_P = 5  # ... keeping this many of the newest unmerged
MERGE_SEPARATOR = "\n---\n"
_CHUNK = 500  # ids per IN (...) list, far below SQLite's bound-parameter limit
_RANK = {level: rank for rank, level in enumerate(reversed(IMPORTANCE_LEVELS))}


class FrameWrite(NamedTuple):
    """A create_i result: the frame, and whether it was inserted (False = dedup hit)."""

    frame: Frame
    created: bool


class Compaction(NamedTuple):
    report: CompactionReport
    deleted_ids: list[int]  # their vectors must go
    rewritten_ids: list[int]  # their vectors are stale


def to_frame(row: FrameRow) -> Frame:
    return Frame(row.id, row.frame_type, row.gop_id, row.t, row.base_frame_id, row.content,
                 row.importance, row.source, row.access_count, row.created_at, row.last_accessed,
                 dict(row.meta or {}))


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start:start + _CHUNK]


class FrameRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id
        self.sessions = SessionRepository(session, mind_id)
        self.writer = FrameWriter(session, mind_id)

    # -- reads --------------------------------------------------------------------------------

    def row(self, frame_id: int) -> FrameRow | None:
        check_id(frame_id, name="frame_id")
        return self.session.scalar(select(FrameRow).where(
            FrameRow.mind_id == self.mind_id, FrameRow.id == frame_id
        ).execution_options(populate_existing=True))

    def require(self, frame_id: int) -> FrameRow:
        row = self.row(frame_id)
        if row is None:
            raise NotFoundError(f"frame {frame_id} not found in this mind")
        return row

    def get(self, frame_id: int) -> Frame | None:
        row = self.row(frame_id)
        return None if row is None else to_frame(row)

    def _latest_i_row(self, gop_id: str) -> FrameRow | None:
        return self.session.scalar(select(FrameRow).where(
            FrameRow.mind_id == self.mind_id, FrameRow.gop_id == gop_id, FrameRow.frame_type == "I"
        ).order_by(FrameRow.t.desc()).limit(1))

    def latest_i(self, gop_id: str) -> Frame | None:
        check_name(gop_id, name="gop_id")
        row = self._latest_i_row(gop_id)
        return None if row is None else to_frame(row)

    def _pframes_after(self, gop_id: str, t: int) -> list[FrameRow]:
        return list(self.session.scalars(select(FrameRow).where(
            FrameRow.mind_id == self.mind_id, FrameRow.gop_id == gop_id,
            FrameRow.frame_type == "P", FrameRow.t > t,
        ).order_by(FrameRow.t)))

    def gop(self, gop_id: str) -> list[Frame]:
        check_name(gop_id, name="gop_id")
        rows = self.session.scalars(select(FrameRow).where(
            FrameRow.mind_id == self.mind_id, FrameRow.gop_id == gop_id).order_by(FrameRow.t))
        return [to_frame(r) for r in rows]

    def reconstruct_state(self, gop_id: str) -> GopState:
        """The latest I-frame and the P-frames after it: the session's current state."""
        check_name(gop_id, name="gop_id")
        iframe = self._latest_i_row(gop_id)
        if iframe is None:
            return GopState(None, [])
        pframes = self._pframes_after(gop_id, iframe.t)
        return GopState(to_frame(iframe), [to_frame(r) for r in pframes])

    def recent(self, limit: int = 50, *, since: datetime | str | None = None,
               until: datetime | str | None = None) -> list[Frame]:
        """Newest first by created_at (id breaks ties); since/until are inclusive real times."""
        check_int(limit, name="limit", minimum=1, maximum=MAX_LIMIT)
        start = optional_utc(since, name="since")
        end = optional_utc(until, name="until")
        query = select(FrameRow).where(FrameRow.mind_id == self.mind_id)
        if start is not None:
            query = query.where(FrameRow.created_at >= start)
        if end is not None:
            query = query.where(FrameRow.created_at <= end)
        query = query.order_by(FrameRow.created_at.desc(), FrameRow.id.desc()).limit(limit)
        return [to_frame(r) for r in self.session.scalars(query)]

    def stats(self) -> FrameStats:
        def count_by(column: Any) -> dict[str, int]:
            rows = self.session.execute(select(column, func.count()).where(
                FrameRow.mind_id == self.mind_id).group_by(column))
            return {str(key): int(n) for key, n in rows}

        by_type = count_by(FrameRow.frame_type)
        return FrameStats(sum(by_type.values()), by_type, count_by(FrameRow.importance))

    def references(self, frame_id: int) -> list[int]:
        """The frame ids a B-frame points at; [] for any other frame or an unknown id."""
        row = self.row(frame_id)
        if row is None or row.frame_type != "B":
            return []
        refs = json.loads(row.content).get("references", [])
        return [int(r) for r in refs]

    # -- inserts ------------------------------------------------------------------------------

    def _insert(self, frame_type: str, gop_id: str, content: str, *, base_frame_id: int | None,
                importance: str, source: str, created_at: datetime | None,
                metadata: dict[str, Any] | None = None) -> Frame:
        """One frame and its manifest (the caller holds the session row lock)."""
        digest, when = content_hash(content), created_at or utcnow()
        frame_id, t = self.writer.insert_one(
            frame_type=frame_type, gop_id=gop_id, content=content, content_hash=digest,
            base_frame_id=base_frame_id, importance=importance, source=source,
            created_at=when, updated_at=utcnow(), metadata=metadata)
        return Frame(frame_id, frame_type, gop_id, t, base_frame_id, content, importance,
                     source, 0, when, when, dict(metadata or {}))

    def create_i(self, gop_id: str, content: str, *, importance: str = "normal",
                 source: str = "user_stated", created_at: datetime | str | None = None,
                 metadata: dict[str, Any] | None = None) -> FrameWrite:
        """Insert a keyframe, or touch and return the existing I-frame with the same memory.

        A dedup hit may belong to another session of this mind: the memory is stored once per
        mind. It is returned after the touch."""
        check_name(gop_id, name="gop_id")
        check_content(content)
        check_choice(importance, IMPORTANCE_LEVELS, name="importance")
        check_choice(source, FRAME_SOURCES, name="source")
        meta = check_metadata(metadata)
        when = optional_utc(created_at, name="created_at") or utcnow()
        digest = content_hash(content)
        # The lock order of every write path: the mind row, then the session row. The mind row
        # lock makes the dedup atomic: two transactions cannot both miss one duplicate. SQLite
        # takes neither (BEGIN IMMEDIATE serialises its writers). On Postgres the locks go in
        # the INSERT's round trip.
        lock = self.sessions.lock_with_mind(gop_id)
        locked, written = self.writer.insert_keyframe(
            gop_id=gop_id, content=content, content_hash=digest, importance=importance,
            source=source, created_at=when, updated_at=utcnow(), before=lock, metadata=meta)
        if lock is not None:
            self.sessions.locked(gop_id, locked)  # NotFoundError: no such session
        if written is not None:
            return FrameWrite(Frame(written[0], "I", gop_id, written[1], None, content,
                                    importance, source, 0, when, when, dict(meta or {})), True)
        # Nothing written: no such session (NotFoundError here), or a duplicate to touch.
        self.sessions.lock(gop_id)  # writers of one session queue here
        duplicate = self.session.scalar(DUPLICATE_I, {"mind_id": self.mind_id,
                                                      "content_hash": digest})
        if duplicate is not None:
            return FrameWrite(self.touch(duplicate), False)
        # Deleted since the INSERT read it (Postgres: a delete takes no mind lock): the plain
        # insert, under the locks still held and with no duplicate now.
        return FrameWrite(self._insert("I", gop_id, content, base_frame_id=None,
                                       importance=importance, source=source, created_at=when,
                                       metadata=meta), True)

    def create_p(self, gop_id: str, content: str, base_frame_id: int, *,
                 importance: str = "normal", source: str = "user_stated",
                 metadata: dict[str, Any] | None = None) -> Frame:
        check_name(gop_id, name="gop_id")
        check_content(content)
        meta = check_metadata(metadata)
        check_id(base_frame_id, name="base_frame_id")
        check_choice(importance, IMPORTANCE_LEVELS, name="importance")
        check_choice(source, FRAME_SOURCES, name="source")
        self.sessions.lock(gop_id)  # writers of one session queue here
        base = self.row(base_frame_id)
        if base is None or base.frame_type != "I" or base.gop_id != gop_id:
            raise InvalidInputError(
                f"base_frame_id {base_frame_id} is not an I-frame of session {gop_id!r} in this "
                "mind; "
                "a P-frame is a delta on an I-frame of its own session"
            )
        return self._insert("P", gop_id, content, base_frame_id=base_frame_id,
                            importance=importance, source=source, created_at=None, metadata=meta)

    def create_b(self, gop_id: str, description: str, base_frame_id: int,
                 referenced_frame_ids: Sequence[int]) -> Frame:
        """A cross-reference frame; its content is ``{"description":…,"references":[…]}``."""
        check_name(gop_id, name="gop_id")
        check_content(description, name="description")
        check_id(base_frame_id, name="base_frame_id")
        if (isinstance(referenced_frame_ids, (str, bytes))
                or not isinstance(referenced_frame_ids, Sequence)):
            raise InvalidInputError("referenced_frame_ids must be a list of frame ids")
        refs = [check_id(r, name="referenced frame id") for r in referenced_frame_ids]
        if not refs:
            raise InvalidInputError("a B-frame must reference at least one frame")
        self.sessions.lock(gop_id)  # writers of one session queue here
        wanted = {base_frame_id, *refs}
        found = set(self.session.scalars(select(FrameRow.id).where(
            FrameRow.mind_id == self.mind_id, FrameRow.id.in_(wanted))))
        missing = sorted(wanted - found)
        if missing:
            raise InvalidInputError(f"frame(s) {missing} do not exist in this mind")
        content = json.dumps({"description": description, "references": refs},
                             separators=(",", ":"), ensure_ascii=False)
        if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
            raise InvalidInputError(f"the B-frame content is larger than {MAX_CONTENT_BYTES} bytes")
        return self._insert("B", gop_id, content, base_frame_id=base_frame_id,
                            importance="normal", source="user_stated", created_at=None)

    # -- changes ------------------------------------------------------------------------------

    def touch(self, frame_id: int) -> Frame:
        """Count one access; returns the frame after the change."""
        if self.touch_many([frame_id]) == 0:
            raise NotFoundError(f"frame {frame_id} not found in this mind")
        return to_frame(self.require(frame_id))

    def touch_many(self, frame_ids: Sequence[int], *, at: datetime | None = None) -> int:
        """Count one access for each frame of this mind among ``frame_ids`` (last access ``at``,
        default now); returns how many."""
        ids = sorted({check_id(i, name="frame_id") for i in frame_ids})
        now, touched = at or utcnow(), 0
        for chunk in _chunks(ids):
            result = self.session.execute(
                update(FrameRow)
                .where(FrameRow.mind_id == self.mind_id, FrameRow.id.in_(chunk))
                .values(access_count=FrameRow.access_count + 1, last_accessed=now)
                .execution_options(synchronize_session=False))
            touched += rowcount(result)
        return touched

    def _mark_stale(self, row: FrameRow) -> None:
        """New content: new hash, and the manifest says the vector must be recomputed."""
        row.content_hash = content_hash(row.content)
        manifest = self.session.get(FrameEmbeddingRow, row.id)
        if manifest is None:
            self.session.add(FrameEmbeddingRow(frame_id=row.id, content_hash=row.content_hash,
                                               status="pending"))
        else:
            manifest.content_hash = row.content_hash
            manifest.status = "pending"
            manifest.error = None
            manifest.updated_at = utcnow()

    def update(self, frame_id: int, content: str, *,
               importance: str | None = None) -> tuple[Frame, bool]:
        """Change content (and importance); returns the frame and whether the content changed.

        The keyword index follows by itself (SQLite triggers, Postgres generated column)."""
        check_content(content)
        if importance is not None:
            check_choice(importance, IMPORTANCE_LEVELS, name="importance")
        row = self.require(frame_id)
        changed = row.content != content
        if importance is not None:
            row.importance = importance
        if changed:
            row.content = content
            self._mark_stale(row)
        self.session.flush()
        return to_frame(row), changed

    def delete_many(self, frame_ids: Sequence[int]) -> list[int]:
        """Delete frames of this mind; returns the ids that existed (and are gone now)."""
        ids = sorted({check_id(i, name="frame_id") for i in frame_ids})
        gone: list[int] = []
        for chunk in _chunks(ids):
            found = list(self.session.scalars(select(FrameRow.id).where(
                FrameRow.mind_id == self.mind_id, FrameRow.id.in_(chunk))))
            if found:
                self.session.execute(delete(FrameRow).where(FrameRow.id.in_(found))
                                     .execution_options(synchronize_session=False))
            gone.extend(found)
        # Rows the database changed by itself (SET NULL, CASCADE) must be re-read, not trusted.
        self.session.expire_all()
        return gone

    def delete(self, frame_id: int) -> None:
        if not self.delete_many([frame_id]):
            raise NotFoundError(f"frame {frame_id} not found in this mind")

    # -- compaction ---------------------------------------------------------------------------

    def _old_ids(self, importance: str, cutoff: datetime) -> list[int]:
        return list(self.session.scalars(select(FrameRow.id).where(
            FrameRow.mind_id == self.mind_id, FrameRow.importance == importance,
            FrameRow.created_at < cutoff)))

    def compact(self, *, max_temp_age_days: int = 30, max_deprecated_age_days: int = 90,
                now: datetime | None = None) -> Compaction:
        check_int(max_temp_age_days, name="max_temp_age_days", minimum=0, maximum=36_500)
        check_int(max_deprecated_age_days, name="max_deprecated_age_days", minimum=0,
                  maximum=36_500)
        moment = now or utcnow()
        temporary = self.delete_many(
            self._old_ids("temporary", moment - timedelta(days=max_temp_age_days)))
        deprecated = self.delete_many(
            self._old_ids("deprecated", moment - timedelta(days=max_deprecated_age_days)))
        merged, rewritten = self._merge_pframes()
        report = CompactionReport(len(temporary), len(deprecated), len(merged))
        return Compaction(report, temporary + deprecated + merged, rewritten)

    def _merge_pframes(self) -> tuple[list[int], list[int]]:
        """Fold all but the newest P-frames into their I-frame where more than 10 follow it.

        The merged I-frame takes the highest importance among what it absorbs (a critical delta
        must not be demoted), and stops growing at MAX_CONTENT_BYTES: P-frames that would push
        it past the limit stay as they are."""
        crowded = list(self.session.scalars(select(FrameRow.gop_id).where(
            FrameRow.mind_id == self.mind_id, FrameRow.frame_type == "P",
        ).group_by(FrameRow.gop_id).having(func.count() > MERGE_THRESHOLD)))
        merged: list[int] = []
        rewritten: list[int] = []
        for gop_id in crowded:
            iframe = self._latest_i_row(gop_id)
            if iframe is None:
                continue
            pframes = self._pframes_after(gop_id, iframe.t)
            if len(pframes) <= MERGE_THRESHOLD:
                continue
            parts, size, absorbed = [iframe.content], len(iframe.content.encode("utf-8")), []
            importance = iframe.importance
            for p in pframes[:-KEEP_NEWEST_P]:
                size += len((MERGE_SEPARATOR + p.content).encode("utf-8"))
                if size > MAX_CONTENT_BYTES:
                    break
                parts.append(p.content)
                absorbed.append(p.id)
                importance = max(importance, p.importance, key=_RANK.__getitem__)
            if not absorbed:
                continue
            iframe.content = MERGE_SEPARATOR.join(parts)
            iframe.importance = importance
            self._mark_stale(iframe)
            self.session.flush()
            rewritten.append(iframe.id)
            merged.extend(self.delete_many(absorbed))
        return merged, rewritten

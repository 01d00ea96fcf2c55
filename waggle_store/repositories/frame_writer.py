"""The one writer of memory frames: every frame row and its manifest row is inserted here, by
``frames.create_i/p/b``, cognify and cognify_batch (harvest stores through cognify_batch) and
import.

Invariants:

- Every frame gets its manifest row (``frame_embeddings``) in the same transaction: pending, or
  ready when its vector is written with it.
- ``t`` is gapless and unique per session: a writer reads the session's next ``t`` (or takes
  MAX(t) + 1 in the INSERT) only while it holds the session row lock, taken after the mind row
  lock (the lock order of every write path). Import shifts a file's ``t`` past the session's.
- A memory is stored once per mind: the dedup lookup (:meth:`FrameWriter.with_hashes`) reads the
  mind's frames by the indexed ``content_hash``, under the mind row lock.

Inserts are Core statements (no unit of work): a chunk of frames costs one executemany and one
read of their ids by ``(session, t)``, whatever its size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple, cast

from sqlalchemy import Executable, Table, bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from waggle_store.dialects.base import SearchAdapter, VectorRow
from waggle_store.dialects.frame_write import insert_keyframe
from waggle_store.embeddings.base import validate_vector
from waggle_store.models import EmbeddingModelRow, FrameEmbeddingRow, FrameRow
from waggle_store.repositories.frame_sql import INSERT_FRAME, INSERT_MANIFEST
from waggle_store.repositories.sessions import SessionRepository

__all__ = ["FrameWriter", "Memory", "Planned"]

_IN_CHUNK: Final = 500  # values per IN (...) list, far below SQLite's bound-parameter limit
# Core tables, not the ORM classes: plain executemany statements, no unit of work.
_FRAMES: Final = cast(Table, FrameRow.__table__)
_MANIFESTS: Final = cast(Table, FrameEmbeddingRow.__table__)
_F: Final = _FRAMES.c


class Memory(NamedTuple):
    """One memory to store as a frame (cognify's items): checked values."""

    content: str
    content_hash: str
    importance: str
    source: str
    created_at: datetime | None
    #: Checked metadata (``textinput.check_metadata``): None for none.
    metadata: dict[str, Any] | None = None


class Planned(NamedTuple):
    """What :meth:`FrameWriter.write_memories` stored: the frame id per memory, the ids of the
    frames it inserted (in order), and the accesses it counted on frames that existed."""

    frame_ids: list[int]
    new_ids: list[int]
    touches: Counter[int]


def _in_chunks(values: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start:start + _IN_CHUNK]


class FrameWriter:
    """Frame inserts of one mind; the caller holds the locks each method names."""

    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    # -- lookups ------------------------------------------------------------------------------

    def with_hashes(self, hashes: Sequence[str], *, up_to: int | None = None,
                    frame_type: str | None = None) -> list[tuple[int, str, str]]:
        """(id, content hash, frame type) of the mind's frames with these hashes, by id (of
        frame type ``frame_type`` and id ≤ ``up_to`` when given)."""
        found: list[tuple[int, str, str]] = []
        for part in _in_chunks(sorted(set(hashes))):
            query = select(_F.id, _F.content_hash, _F.frame_type).where(
                _F.mind_id == self.mind_id, _F.content_hash.in_(part))
            if up_to is not None:
                query = query.where(_F.id <= up_to)
            if frame_type is not None:
                query = query.where(_F.frame_type == frame_type)
            found.extend((int(i), str(h), str(t)) for i, h, t in self.session.execute(query))
        return sorted(found)

    def oldest_by_hash(self, hashes: Sequence[str]) -> dict[str, int]:
        """Content hash → the oldest frame of the mind holding it (the dedup of every type)."""
        oldest: dict[str, int] = {}
        for frame_id, digest, _ in self.with_hashes(hashes):
            oldest.setdefault(digest, frame_id)
        return oldest

    def session_head(self, gop_id: str) -> tuple[int | None, int]:
        """(latest I-frame id, next ``t``) of the session: two index seeks in one statement (the
        (mind, gop, frame_type, t) index, so no walk over the P-frames). The caller holds the
        session lock."""
        in_session = (_F.mind_id == self.mind_id, _F.gop_id == gop_id)
        latest = (select(_F.id).where(*in_session, _F.frame_type == "I")
                  .order_by(_F.t.desc()).limit(1).scalar_subquery())
        top = select(func.max(_F.t)).where(*in_session).scalar_subquery()
        base, high = self.session.execute(select(latest, top)).one()
        return (None if base is None else int(base)), (0 if high is None else int(high) + 1)

    def manifests(self, frame_ids: Sequence[int]) -> dict[int, FrameEmbeddingRow]:
        """The manifest rows of these frames, by frame id."""
        found: dict[int, FrameEmbeddingRow] = {}
        for part in _in_chunks(list(dict.fromkeys(frame_ids))):
            found.update((m.frame_id, m) for m in self.session.scalars(
                select(FrameEmbeddingRow).where(FrameEmbeddingRow.frame_id.in_(part))))
        return found

    # -- inserts ------------------------------------------------------------------------------

    def insert(self, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert frame rows (every column but ``id``; ``t`` unused in its session) and return
        their ids in row order. One executemany, then one read of the ids per session by ``t``:
        with RETURNING, SQLAlchemy sends SQLite one INSERT per row to keep the ids in parameter
        order. ``(mind, gop, t)`` is unique, so the read finds exactly these rows."""
        if not rows:
            return []
        self.session.execute(insert(_FRAMES), [{**r, "mind_id": self.mind_id} for r in rows])
        by_gop: dict[str, set[int]] = {}
        for r in rows:
            by_gop.setdefault(r["gop_id"], set()).add(int(r["t"]))
        ids: dict[tuple[str, int], int] = {}
        for gop, ts in by_gop.items():
            ids.update(((gop, int(t)), int(i)) for t, i in self.session.execute(
                select(_F.t, _F.id).where(_F.mind_id == self.mind_id, _F.gop_id == gop,
                                          _F.t.between(min(ts), max(ts))))
                if int(t) in ts)
        return [ids[(r["gop_id"], int(r["t"]))] for r in rows]

    def add_manifests(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert manifest rows (``frame_id``, ``content_hash``, ``status``, ``updated_at``,
        optionally ``model_id``, ``error``, ``text_form``) for frames just inserted."""
        if rows:
            self.session.execute(insert(_MANIFESTS), [
                {"model_id": None, "error": None} | dict(r) for r in rows])

    def insert_one(self, *, frame_type: str, gop_id: str, content: str, content_hash: str,
                   base_frame_id: int | None, importance: str, source: str,
                   created_at: datetime, updated_at: datetime,
                   metadata: dict[str, Any] | None = None) -> tuple[int, int]:
        """One frame with ``t`` = the session's MAX(t) + 1 (a subquery of the INSERT: the caller
        holds the session lock) and its pending manifest; returns (id, t)."""
        frame_id, t = self.session.execute(INSERT_FRAME, {
            "q_mind": self.mind_id, "q_gop": gop_id, "v_mind_id": self.mind_id,
            "v_frame_type": frame_type, "v_gop_id": gop_id, "v_base_frame_id": base_frame_id,
            "v_content": content, "v_content_hash": content_hash, "v_importance": importance,
            "v_source": source, "v_access_count": 0, "v_created_at": created_at,
            "v_last_accessed": created_at, "v_metadata": metadata}).one()
        self.session.execute(INSERT_MANIFEST, {"frame_id": frame_id,
                                               "content_hash": content_hash,
                                               "updated_at": updated_at})
        return int(frame_id), int(t)

    def insert_keyframe(self, *, gop_id: str, content: str, content_hash: str,
                        importance: str, source: str, created_at: datetime,
                        updated_at: datetime, before: tuple[Executable, dict[str, Any]] | None,
                        metadata: dict[str, Any] | None = None,
                        ) -> tuple[list[Any], tuple[int, int] | None]:
        """``create_i``'s write: a keyframe and its pending manifest, only if the session exists
        and the mind has no I-frame of this content (checked in the INSERT itself, in the
        fewest statements the dialect allows: ``dialects.frame_write``). Returns the rows of
        ``before`` (the locks, run first) and (id, t), or None when nothing was written."""
        return insert_keyframe(
            self.session, mind_id=self.mind_id, gop_id=gop_id, content=content,
            content_hash=content_hash, importance=importance, source=source,
            created_at=created_at, updated_at=updated_at, before=before, metadata=metadata)

    def write_memories(self, gop_id: str, memories: Sequence[Memory],
                       now: datetime) -> Planned:
        """Store memories as frames of session ``gop_id``. The caller holds the mind row lock;
        this takes the session row lock.

        - a memory the mind holds already (any frame type, the oldest such frame) or that an
          earlier memory of this call holds is not stored again: that frame is touched once
          per such memory (:meth:`add_accesses` for frames that existed);
        - new frames get gapless ``t`` in order; the first frame of an empty session is its
          I-frame, every other a P-frame on the session's latest I-frame;
        - a memory's ``created_at`` is its frame's ``created_at`` and first ``last_accessed``.

        Manifests are the caller's (their status depends on the vectors)."""
        existing = self.oldest_by_hash([m.content_hash for m in memories])
        SessionRepository(self.session, self.mind_id).lock(gop_id)
        base_id, next_t = self.session_head(gop_id)
        touches: Counter[int] = Counter()
        planned: dict[str, dict[str, Any]] = {}  # hash -> the new frame's row
        for memory in memories:
            digest = memory.content_hash
            if digest in existing:
                touches[existing[digest]] += 1
            elif digest in planned:  # an earlier memory of this call: touched once per repeat
                planned[digest]["access_count"] += 1
                planned[digest]["last_accessed"] = now
            else:
                when = memory.created_at or now
                planned[digest] = {
                    "frame_type": "P", "gop_id": gop_id, "t": next_t, "base_frame_id": base_id,
                    "content": memory.content, "content_hash": digest,
                    "importance": memory.importance, "source": memory.source,
                    "access_count": 0, "created_at": when, "last_accessed": when,
                    "salience": None, "metadata": memory.metadata}
                next_t += 1
        rows = list(planned.values())
        new_ids: list[int] = []
        if rows and base_id is None:  # an empty session: its first frame is the keyframe
            rows[0]["frame_type"] = "I"
            new_ids = self.insert(rows[:1])
            for row in rows[1:]:
                row["base_frame_id"] = new_ids[0]
            rows = rows[1:]
        new_ids += self.insert(rows)
        by_hash = dict(zip(planned, new_ids, strict=True))
        by_hash.update(existing)
        return Planned([by_hash[m.content_hash] for m in memories], new_ids, touches)

    def add_accesses(self, counts: Counter[int], at: datetime) -> None:
        """Count ``counts[frame]`` accesses on each frame, last accessed ``at``."""
        if counts:
            self.session.execute(
                update(_FRAMES).where(_F.id == bindparam("fid"))
                .values(access_count=_F.access_count + bindparam("n"), last_accessed=at),
                [{"fid": fid, "n": n} for fid, n in sorted(counts.items())])

    def store_new_vectors(self, adapter: SearchAdapter, model_id: int, gop_id: str,
                          rows: Sequence[tuple[int, datetime, Sequence[float]]]) -> None:
        """Vectors ``(frame id, created_at, vector)`` of frames of ``gop_id`` inserted in this
        transaction: all validated first (nothing is written if one fails), then one upsert.
        Their manifests are the caller's (inserted as ready)."""
        model = self.session.get(EmbeddingModelRow, model_id)
        assert model is not None  # registered by the caller in this transaction
        adapter.upsert_vectors(self.session, model_id, [
            VectorRow(fid, self.mind_id, gop_id, created,
                      validate_vector(vector, model.dimensions, normalize=True))
            for fid, created, vector in rows])

    # -- import's fix-ups ---------------------------------------------------------------------

    def set_bases(self, bases: Sequence[tuple[int, int]]) -> None:
        """Point frames at their base frames: ``(frame id, base frame id)``."""
        if bases:
            self.session.execute(
                update(_FRAMES).where(_F.id == bindparam("b_id"))
                .values(base_frame_id=bindparam("b_base")),
                [{"b_id": f, "b_base": b} for f, b in bases])

    def set_contents(self, contents: Sequence[tuple[int, str, str]]) -> None:
        """Replace frames' content and hash, ``(frame id, content, hash)``, and their manifests'
        hash (the frames have no vector yet: imported frames are pending)."""
        if not contents:
            return
        self.session.execute(
            update(_FRAMES).where(_F.id == bindparam("b_id"))
            .values(content=bindparam("b_content"), content_hash=bindparam("b_hash")),
            [{"b_id": f, "b_content": c, "b_hash": h} for f, c, h in contents])
        self.session.execute(
            update(_MANIFESTS).where(_MANIFESTS.c.frame_id == bindparam("b_id"))
            .values(content_hash=bindparam("b_hash")),
            [{"b_id": f, "b_hash": h} for f, _, h in contents])

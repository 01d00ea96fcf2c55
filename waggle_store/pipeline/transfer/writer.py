"""Pass 2 of an import: write checked records into a mind, remapping ids, merging duplicates.

Records arrive in file order and are buffered per type; a buffer is written when it is full or
when a record of another type arrives, each with one SELECT for what the mind already holds and
one Core executemany insert (frames through the store's frame writer). Old ids map to new ids
in small dicts (ints only), so memory grows with the number of records by a few dozen bytes
each, never with their content.

Merging into a mind that already holds data (rows that existed before this import started:
id at most the table's maximum id read at the start):

* frames: one with the same content hash and frame type is not inserted (``duplicates_skipped``);
  references to it point at the existing frame. A session the mind already has receives the
  frames after its own (``t`` shifted past its last frame).
* entities: an active entity matches an active one of the same type and case-folded name; a
  retired one matches only the same name and validity interval. Relations match on both ends
  and type the same way. Mentions and awareness items already present are skipped.
* kv: the newer ``updated_at`` wins; identity and validation schema: the mind's own are kept.

This module holds the buffering and the small records (identity, schema, awareness, sessions,
kv, harvest sources); frames are written by :class:`~.writer_frames.FrameWriter` and the graph
and vectors by :class:`~.writer_graph.GraphWriter`, its bases; the graph's aliases and history,
pending extractions, harvest tombstones and exclusive relation types by
:class:`~.writer_knowledge.KnowledgeWriter` (its module has their merge rules).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from sqlalchemy.orm import Session

from waggle_store.pipeline.transfer.conversations import ConversationWriter
from waggle_store.pipeline.transfer.format import Line
from waggle_store.pipeline.transfer.validate import Plan
from waggle_store.pipeline.transfer.writer_frames import FrameWriter
from waggle_store.pipeline.transfer.writer_knowledge import KnowledgeWriter
from waggle_store.records import ValidationSchema
from waggle_store.repositories import frame_writer
from waggle_store.repositories.knowledge_common import lock_graph
from waggle_store.repositories.knowledge_schema import ValidationSchemaRepository
from waggle_store.repositories.mind_import import ImportRows
from waggle_store.repositories.vectors import ModelKey
from waggle_store.timeutil import utcnow

__all__ = ["CHUNK", "MindWriter"]

#: Records per buffered write.
CHUNK: Final = 500


class MindWriter(ConversationWriter, KnowledgeWriter, FrameWriter):
    """Writes records into one mind inside the caller's transaction (it never commits)."""

    def __init__(self, session: Session, mind_id: int, plan: Plan, *, adapter: Any,
                 vector_model: ModelKey | None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.s, self.mind_id, self.plan, self.adapter = session, mind_id, plan, adapter
        self.vector_model, self.progress = vector_model, progress
        self.problems = plan.problems
        self.counts: dict[str, int] = {}
        self.ids: dict[str, dict[int, int]] = {k: {} for k in ("frame", "entity", "relation")}
        self.fresh: dict[str, set[int]] = {"entity": set(), "relation": set()}
        self.inserted_frames: set[int] = set()  # new ids of frames this import inserted
        self.t_offset: dict[str, int] = {}
        #: Frames referencing frames further down the file: (new id, unmapped B content or
        #: None, old id of the base or None).
        self.fixups: list[tuple[int, str | None, int | None]] = []
        self._buffer: list[Line] = []
        self._done = 0
        self._model_id: int | None = None
        # The mind row lock that cognify's frame dedup and entity upserts take (Postgres): no
        # concurrent writer can add a duplicate this import would have merged with.
        lock_graph(session, mind_id)
        self.held = ImportRows(session, mind_id)
        self.pre = self.held.highest_ids()

    def _count(self, kind: str, n: int = 1) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n

    # -- buffering ------------------------------------------------------------------------------

    def add(self, line: Line) -> None:
        if self._buffer and (self._buffer[0].type != line.type or len(self._buffer) >= CHUNK):
            self.flush()
        self._buffer.append(line)

    def flush(self) -> None:
        if not self._buffer:
            return
        chunk, self._buffer = self._buffer, []
        getattr(self, "_write_" + chunk[0].type)([line.fields for line in chunk])
        self._done += len(chunk)
        if self.progress is not None:
            self.progress(self._done, self.plan.records)

    def finish(self) -> None:
        self.flush()
        self._fix_forward_references()
        self.finish_conversations()
        self.counts["vectors_pending"] = self.held.pending_after(self.pre["frame"])

    # -- simple records -----------------------------------------------------------------------

    def _write_identity(self, rows: list[dict[str, Any]]) -> None:
        existing = self.held.identity_name()
        if existing is not None:
            if existing != rows[0]["name"]:
                self.problems.add(
                    "identity already set in this mind",
                    repr(rows[0]["name"]),
                    f"kept the mind's own identity ({existing!r})",
                )
            return
        self.held.insert("identity", rows[:1])

    def _write_validation_schema(self, rows: list[dict[str, Any]]) -> None:
        new = rows[0]
        schema = ValidationSchema(
            {k: list(v) for k, v in new["required_properties"].items()},
            None
            if new["allowed_relations"] is None
            else [(a, b, c) for a, b, c in new["allowed_relations"]],
        )
        current = ValidationSchemaRepository(self.s, self.mind_id).get()
        if current is None:
            ValidationSchemaRepository(self.s, self.mind_id).set(schema)
        elif current != schema:
            self.problems.add(
                "validation schema differs from the mind's",
                "validation_schema",
                "kept the mind's own schema",
            )

    def _write_awareness(self, rows: list[dict[str, Any]]) -> None:
        have = self.held.awareness_held(self.pre["awareness"], (r["content"] for r in rows))
        fresh = [
            {
                "category": r["category"],
                "content": r["content"],
                "priority": r["priority"],
                "metadata": r["metadata"],
                "created_at": r["created_at"],
                "expires_at": r["expires_at"],
            }
            for r in rows
            if (r["category"], r["content"]) not in have
        ]
        self.held.insert("awareness", fresh)
        self._count("awareness", len(fresh))

    def _write_session(self, rows: list[dict[str, Any]]) -> None:
        existing = self.held.sessions_held(r["gop_id"] for r in rows)
        frames = frame_writer.FrameWriter(self.s, self.mind_id)
        for gop in existing:  # the file's frames go after the session's own
            self.t_offset[gop] = frames.session_head(gop)[1]
        active = self.held.active_auto_projects()
        fresh = []
        for r in rows:
            if r["gop_id"] in existing:
                continue
            row = {k: r[k] for k in ("gop_id", "project_id", "kind", "status", "started_at",
                                      "ended_at", "summary")}
            if row["status"] == "active" and row["kind"] == "auto":
                if (row["project_id"] or "") in active:
                    self.problems.add(
                        "second active session for a project",
                        repr(row["gop_id"]),
                        "imported as closed (the mind has its own active session)",
                    )
                    row.update(status="closed", ended_at=row["ended_at"] or utcnow())
                active.add(row["project_id"] or "")
            fresh.append(row)
        self.held.insert("session", fresh)
        self._count("sessions", len(fresh))

    def _write_kv(self, rows: list[dict[str, Any]]) -> None:
        have = self.held.kv_updated(r["key"] for r in rows)
        fresh = [r for r in rows if r["key"] not in have]
        newer = [r for r in rows if r["key"] in have and have[r["key"]] < r["updated_at"]]
        self.held.insert("kv", fresh)
        for r in newer:
            self.held.set_kv(r["key"], r["value"], r["updated_at"])
        self._count("kv", len(fresh) + len(newer))

    def _write_harvest_source(self, rows: list[dict[str, Any]]) -> None:
        have = self.held.harvest_sources_held(r["source"] for r in rows)
        fresh = [r for r in rows if r["source"] not in have]
        self.held.insert("harvest_source", fresh)
        if len(fresh) < len(rows):
            self.problems.add(
                "harvest source already registered",
                repr(rows[0]["source"]),
                "kept the mind's own record",
                len(rows) - len(fresh),
            )
        self._count("harvest_sources", len(fresh))

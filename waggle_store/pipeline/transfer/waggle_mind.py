"""A Waggle ``.mind`` file (the old Waggle app's SQLite schema) as a record source.

The file is opened with the stdlib ``sqlite3`` (plain tables need no extension) without trusting
it (:func:`open_mind_file`: read-only, immutable, ``trusted_schema=OFF``, a length limit on every
value, generated columns refused); the FTS5 and ``vec0`` virtual tables are not read. Every
record is turned into the JSONL format's terms and checked with the same rules
(:func:`~.format.make_line`), so the import path after this module is the one every import
takes.

The old app's data bugs are repaired here, each counted in the report, none fatal:

* times in two formats (``YYYY-MM-DD HH:MM:SS`` without a zone, ISO ``...Z``), or unreadable:
  zone-less times are read as UTC (``datetime('now')`` is UTC), unreadable ones replaced;
* orphaned base frames (``base_frame_id`` naming a frame that is gone): the reference is dropped;
* B-frames without references, and references to frames that are gone (counted by the checks);
* frames whose session row is missing (foreign keys off): the session is created;
* two frames at the same ``t`` of a session (the old app's racy ``MAX(t)+1``): renumbered after the
  session's last frame;
* ``source``/``importance`` values the old app's own CHECK rejects (``team_sync``):
``import``/``normal``;
* the same active entity stored many times: merged into the first, relations follow;
* vectors: ``memory_frames_vec`` holds 1024-float vectors, zero-padded from whatever model made
  them, and the file does not say which model that was; they are not imported, the frames are
  ``pending`` and ``store.reconcile()`` embeds them with the store's model.

Reading the rows and repairing single values (times, JSON text) is in :mod:`.waggle_mind_rows`,
which :mod:`.openfang` shares; this module decides what each table becomes. ``foreign_time`` is
re-exported from here for the callers that import it from this module.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Final

from waggle_store.errors import InvalidInputError
from waggle_store.models import FRAME_SOURCES, IMPORTANCE_LEVELS
from waggle_store.pipeline.safe_files import open_regular
from waggle_store.pipeline.transfer.format import Line
from waggle_store.pipeline.transfer.importer import RecordSource
from waggle_store.pipeline.transfer.problems import NumberedLines, Problems
from waggle_store.pipeline.transfer.waggle_mind_rows import (
    MindRows,
    foreign_time,
    mind_uri,
    open_mind_file,
    refuse_computed,
    table_names,
)
from waggle_store.repositories.knowledge_common import name_key

__all__ = ["foreign_time", "mind_uri", "open_mind_file", "waggle_mind_records"]

_NAMED_PREFIXES = ("harvest:", "mcp:", "team-sync", "openfang:")
#: The tables the reader reads.
_READ_TABLES: Final = frozenset({
    "identity", "awareness", "sessions", "memory_frames", "knowledge_entities",
    "knowledge_relations", "harvest_sources"})


class _Reader(MindRows, NumberedLines):
    """Turns the rows of one ``.mind`` file into checked records."""

    # -- the tables, in file order ------------------------------------------------------------

    def records(self) -> Iterator[tuple[int, Line]]:
        for row in self.rows("identity"):
            name = row["name"] or ""
            if not name.strip():
                self.problems.add("identity without a name", "identity", "named 'unnamed'")
                name = "unnamed"
            yield from self.line(
                {
                    "type": "identity",
                    "name": name,
                    **{
                        k: row[k] or ""
                        for k in (
                            "role",
                            "department",
                            "personality",
                            "capabilities",
                            "system_prompt",
                        )
                    },
                    "created_at": self.time(row, "created_at", "identity", default=self.now),
                    "updated_at": self.time(row, "updated_at", "identity", default=self.now),
                },
                "identity",
            )
            break
        for row in self.rows("awareness", "id"):
            meta = row["metadata"] if "metadata" in row.keys() else "{}"  # noqa: SIM118 (sqlite3.Row: `in` tests values)
            yield from self.line(
                {
                    "type": "awareness",
                    "id": row["id"],
                    "category": row["category"],
                    "content": row["content"],
                    "priority": row["priority"] or 0,
                    "metadata": self.json_object(meta, f"awareness {row['id']} metadata"),
                    "created_at": self.time(
                        row, "created_at", f"awareness {row['id']}", default=self.now
                    ),
                    "expires_at": self.time(row, "expires_at", f"awareness {row['id']}"),
                },
                f"awareness {row['id']}",
            )
        yield from self._sessions_and_frames()
        yield from self._graph()
        for row in self.rows("harvest_sources", "id"):
            yield from self.line(
                {
                    "type": "harvest_source",
                    "source": row["source"],
                    "display_name": row["display_name"] or "",
                    "source_path": row["source_path"],
                    "last_synced_at": self.time(
                        row, "last_synced_at", f"harvest source {row['source']!r}"
                    ),
                    "items_imported": row["items_imported"] or 0,
                    "frames_created": row["frames_created"] or 0,
                    "auto_sync": bool(row["auto_sync"]),
                    "sync_interval_hours": row["sync_interval_hours"] or 24,
                    "last_content_hash": row["last_content_hash"],
                    "created_at": self.time(
                        row, "created_at", f"harvest source {row['source']!r}", default=self.now
                    ),
                },
                f"harvest source {row['source']!r}",
            )
        self._not_imported()

    def _sessions_and_frames(self) -> Iterator[tuple[int, Line]]:
        gops: set[str] = set()
        next_id = 1
        for row in self.rows("sessions", "id"):
            gop = row["gop_id"]
            named = gop.startswith(_NAMED_PREFIXES)
            for item in self.line(
                {
                    "type": "session",
                    "id": row["id"],
                    "gop_id": gop,
                    "project_id": row["project_id"],
                    "status": row["status"],
                    "kind": "named" if named else "auto",
                    "started_at": self.time(
                        row, "started_at", f"session {gop!r}", default=self.now
                    ),
                    "ended_at": self.time(row, "ended_at", f"session {gop!r}"),
                    "summary": row["summary"],
                },
                f"session {gop!r}",
            ):
                gops.add(gop)
                yield item
            next_id = max(next_id, int(row["id"]) + 1)
        frame_ids = self.ids("memory_frames")
        used: dict[str, set[int]] = {}
        for row in self.rows("memory_frames", "id"):
            fid, gop = int(row["id"]), row["gop_id"]
            if gop not in gops:
                self.problems.add(
                    "frame whose session is missing",
                    f"frame {fid} in {gop!r}",
                    "session created (closed)",
                )
                yield from self.line(
                    {
                        "type": "session",
                        "id": next_id,
                        "gop_id": gop,
                        "project_id": None,
                        "status": "closed",
                        "kind": "named",
                        "started_at": self.time(
                            row, "created_at", f"frame {fid}", default=self.now
                        ),
                        "ended_at": None,
                        "summary": None,
                    },
                    f"session {gop!r}",
                )
                gops.add(gop)
                next_id += 1
            yield from self._frame(row, fid, frame_ids, used.setdefault(gop, set()))

    def _frame(
        self, row: sqlite3.Row, fid: int, frame_ids: set[int], used: set[int]
    ) -> Iterator[tuple[int, Line]]:
        t = int(row["t"] or 0)
        if t in used:
            new_t = max(used) + 1
            self.problems.add(
                "two frames at the same t of a session",
                f"frame {fid} t={t}",
                "renumbered after the session's last frame",
            )
            t = new_t
        base = row["base_frame_id"]
        if base is not None and int(base) not in frame_ids:
            self.problems.add(
                "orphaned base frame", f"frame {fid} -> {base}", "base reference dropped"
            )
            base = None
        source = row["source"] if "source" in row.keys() else "user_stated"  # noqa: SIM118 (sqlite3.Row: `in` tests values)
        if source not in FRAME_SOURCES:
            self.problems.add(
                "frame source outside the schema",
                f"frame {fid} source={source!r}",
                "stored as 'import'",
            )
            source = "import"
        importance = row["importance"]
        if importance not in IMPORTANCE_LEVELS:
            self.problems.add(
                "frame importance outside the schema",
                f"frame {fid} importance={importance!r}",
                "stored as 'normal'",
            )
            importance = "normal"
        created = self.time(row, "created_at", f"frame {fid}", default=self.now)
        for item in self.line(
            {
                "type": "frame",
                "id": fid,
                "frame_type": row["frame_type"],
                "gop_id": row["gop_id"],
                "t": t,
                "base_frame_id": base,
                "content": row["content"],
                "importance": importance,
                "source": source,
                "access_count": max(0, int(row["access_count"] or 0)),
                "created_at": created,
                "last_accessed": self.time(row, "last_accessed", f"frame {fid}", default=created),
            },
            f"frame {fid}",
        ):
            used.add(t)
            yield item

    def _graph(self) -> Iterator[tuple[int, Line]]:
        first: dict[tuple[str, str], int] = {}
        alias: dict[int, int] = {}
        for row in self.rows("knowledge_entities", "id"):
            eid, etype, name = int(row["id"]), row["entity_type"], row["name"]
            valid_to = self.time(row, "valid_to", f"entity {eid}")
            key = (etype, name_key(name or ""))
            if valid_to is None and key in first:
                self.problems.add(
                    "the same active entity stored twice",
                    f"entity {eid} {name!r}",
                    f"merged into entity {first[key]}",
                )
                alias[eid] = first[key]
                continue
            for item in self.line(
                {
                    "type": "entity",
                    "id": eid,
                    "entity_type": etype,
                    "name": name,
                    "properties": self.json_object(row["properties"], f"entity {eid} properties"),
                    "valid_from": self.time(row, "valid_from", f"entity {eid}", default=self.now),
                    "valid_to": valid_to,
                    "recorded_at": self.time(row, "recorded_at", f"entity {eid}", default=self.now),
                },
                f"entity {eid}",
            ):
                alias[eid] = eid
                if valid_to is None:
                    first[key] = eid
                yield item
        edges: set[tuple[int, int, str]] = set()
        for row in self.rows("knowledge_relations", "id"):
            rid = int(row["id"])
            src, tgt = alias.get(int(row["source_id"])), alias.get(int(row["target_id"]))
            if src is None or tgt is None:
                self.problems.add("relation to a missing entity", f"relation {rid}", "skipped")
                continue
            valid_to = self.time(row, "valid_to", f"relation {rid}")
            edge = (src, tgt, row["relation_type"])
            if valid_to is None and edge in edges:
                self.problems.add(
                    "the same active relation stored twice", f"relation {rid}", "skipped"
                )
                continue
            confidence = float(row["confidence"] if row["confidence"] is not None else 1.0)
            if not 0.0 <= confidence <= 1.0:
                self.problems.add(
                    "confidence outside 0..1", f"relation {rid} = {confidence}", "clamped"
                )
                confidence = min(1.0, max(0.0, confidence))
            for item in self.line(
                {
                    "type": "relation",
                    "id": rid,
                    "source_id": src,
                    "target_id": tgt,
                    "relation_type": row["relation_type"],
                    "confidence": confidence,
                    "properties": self.json_object(row["properties"], f"relation {rid} properties"),
                    "valid_from": self.time(row, "valid_from", f"relation {rid}", default=self.now),
                    "valid_to": valid_to,
                    "recorded_at": self.time(
                        row, "recorded_at", f"relation {rid}", default=self.now
                    ),
                },
                f"relation {rid}",
            ):
                if valid_to is None:
                    edges.add(edge)
                yield item

    def _not_imported(self) -> None:
        count = self.count("memory_frames_vec_rowids")
        if count is not None:
            self.problems.add(
                "vectors not imported",
                "memory_frames_vec (1024 floats, zero-padded, model not recorded)",
                "frames left pending: store.reconcile() embeds them with the store's model",
                count,
            )
        count = self.count("embedding_usage")
        if count is not None:
            self.problems.add(
                "embedding_usage rows not imported",
                "embedding_usage",
                "a per-user quota counter of the old app, not memory",
                count,
            )


@contextmanager
def waggle_mind_records(path: str | os.PathLike[str]) -> Iterator[tuple[RecordSource, Problems]]:
    """The record source of a ``.mind`` file and the Problems its conversion fills."""
    where = repr(os.fspath(path))
    open_regular(path, limit=None, follow_symlinks=True).close()  # a regular file, or refused
    try:
        conn = open_mind_file(path)
    except sqlite3.Error as exc:
        raise InvalidInputError(f"{where} cannot be opened as SQLite: {exc}") from exc
    with closing(conn):
        try:
            tables = table_names(conn)
            refuse_computed(conn, tables & _READ_TABLES, where)
        except sqlite3.DatabaseError as exc:
            raise InvalidInputError(f"{where} is not a SQLite database: {exc}") from exc
        if "memory_frames" not in tables or "sessions" not in tables:
            raise InvalidInputError(
                f"{where} is not a Waggle .mind file "
                "(it has no memory_frames or sessions table)"
            )
        problems = Problems()

        def records(found: Problems) -> Iterator[tuple[int, Line]]:
            reader = _Reader(conn, found)
            return reader.named(reader.records())

        yield records, problems

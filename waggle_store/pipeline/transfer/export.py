"""Export one mind as ``waggle-mind`` JSONL (see :mod:`.format` and ``docs/export-format.md``).

Constant memory at any size: every table is read in keyset pages of :data:`PAGE` rows (``WHERE
id > last ORDER BY id LIMIT n``) and each row is written as soon as it is read, so neither the
rows nor the file are ever held whole. All pages are read in one read transaction so the file is
one consistent snapshot (on Postgres at REPEATABLE READ: READ COMMITTED would let a mention
written between two pages point at a frame the file does not hold, and the import would refuse
the file).

Records reference each other by the ids of this store; the order of the file (sessions before
frames, frames and entities before mentions ...) lets the importer check every reference as it
reads.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final

import sqlalchemy as sa
from sqlalchemy import func, select

from waggle_store.context import MindContext
from waggle_store.models import (
    AwarenessRow,
    EmbeddingModelRow,
    EntityMentionRow,
    EntityRow,
    FrameEmbeddingRow,
    FrameRow,
    HarvestSourceRow,
    IdentityRow,
    KVRow,
    MindRow,
    RelationRow,
    SessionRow,
)
from waggle_store.pipeline.transfer.format import FORMAT_NAME, FORMAT_VERSION, dump_line, iso
from waggle_store.records import ExportReport
from waggle_store.repositories.knowledge_schema import SCHEMA_SETTINGS_KEY
from waggle_store.timeutil import utcnow

__all__ = ["PAGE", "Destination", "export_mind", "open_destination"]

#: Rows per keyset page.
PAGE: Final = 1000

Destination = str | os.PathLike[str] | IO[str] | IO[bytes]
Progress = Callable[[int, int], None]


@contextmanager
def open_destination(dest: Destination) -> Iterator[tuple[Callable[[str], object], str | None]]:
    """A ``write(text)`` for ``dest`` and its path. A path is written to ``<path>.part`` and
    renamed when the export succeeded, so a failed export never leaves a truncated file under
    the real name; a file object is written as it is (text, or UTF-8 bytes)."""
    if isinstance(dest, (str, os.PathLike)):
        path = Path(dest)
        part = path.with_name(path.name + ".part")
        try:
            with open(part, "w", encoding="utf-8", newline="\n") as handle:
                yield handle.write, str(path)
            os.replace(part, path)
        finally:
            if part.exists():
                part.unlink()
        return
    name = getattr(dest, "name", None)
    if isinstance(dest, io.TextIOBase) or "b" not in str(getattr(dest, "mode", "b")):
        text_out: Any = dest
        yield text_out.write, name if isinstance(name, str) else None
        return
    binary_out: Any = dest
    yield (
        (lambda text: binary_out.write(text.encode("utf-8"))),
        name if isinstance(name, str) else None,
    )


def _pages(conn: sa.Connection, stmt: Any, key: Any) -> Iterator[Any]:
    """Every row of ``stmt`` (whose first column is ``key``), in key order, a page at a time."""
    last: int | None = None
    while True:
        page = stmt if last is None else stmt.where(key > last)
        rows = conn.execute(page.order_by(key).limit(PAGE)).all()
        yield from rows
        if len(rows) < PAGE:
            return
        last = int(rows[-1][0])


class _Counter:
    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.done, self.progress = total, 0, progress
        self.by_type: dict[str, int] = {}

    def wrote(self, kind: str) -> None:
        self.done += 1
        self.by_type[kind] = self.by_type.get(kind, 0) + 1
        if self.progress is not None and (self.done % PAGE == 0 or self.done == self.total):
            self.progress(self.done, self.total)


def _count(conn: sa.Connection, stmt: sa.Select[Any]) -> int:
    return int(conn.execute(select(func.count()).select_from(stmt.subquery())).scalar() or 0)


def export_mind(
    mind: MindContext,
    dest: Destination,
    *,
    include_vectors: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Write every record of ``mind`` to ``dest``; ``progress(done, total)`` every page."""
    with open_destination(dest) as (write, path), mind.store.read_connection() as conn:
        if conn.dialect.name == "postgresql":  # one snapshot for every page (module docstring)
            conn.execution_options(isolation_level="REPEATABLE READ")
        counter = _Counter(0, progress)
        _export(conn, mind, write, counter, include_vectors)
        if progress is not None and counter.total and counter.done != counter.total:
            progress(counter.done, counter.done)
    n = counter.by_type.get
    return ExportReport(
        path,
        counter.done + 1,
        n("frame", 0),
        n("entity", 0),
        n("relation", 0),
        sessions=n("session", 0),
        mentions=n("mention", 0),
        vectors=n("vector", 0),
    )


def _export(
    conn: sa.Connection,
    mind: MindContext,
    write: Callable[[str], object],
    counter: _Counter,
    include_vectors: bool,
) -> None:
    mid = mind.id
    frames_of_mind = select(FrameRow.id).where(FrameRow.mind_id == mid)
    ready = (
        select(FrameEmbeddingRow.model_id)
        .join(FrameRow, FrameRow.id == FrameEmbeddingRow.frame_id)
        .where(
            FrameRow.mind_id == mid,
            FrameEmbeddingRow.status == "ready",
            FrameEmbeddingRow.model_id.is_not(None),
            FrameEmbeddingRow.content_hash == FrameRow.content_hash,
        )
    )
    model_ids = sorted(int(m) for m in conn.execute(ready.distinct()).scalars() if m is not None)
    plan: list[tuple[str, sa.Select[Any]]] = [
        ("identity", select(IdentityRow.mind_id).where(IdentityRow.mind_id == mid)),
        ("awareness", select(AwarenessRow.id).where(AwarenessRow.mind_id == mid)),
        ("session", select(SessionRow.id).where(SessionRow.mind_id == mid)),
        ("frame", frames_of_mind),
        ("entity", select(EntityRow.id).where(EntityRow.mind_id == mid)),
        ("relation", select(RelationRow.id).where(RelationRow.mind_id == mid)),
        (
            "mention",
            select(EntityMentionRow.frame_id)
            .join(FrameRow, FrameRow.id == EntityMentionRow.frame_id)
            .where(FrameRow.mind_id == mid),
        ),
        ("kv", select(KVRow.key).where(KVRow.mind_id == mid)),
        ("harvest_source", select(HarvestSourceRow.id).where(HarvestSourceRow.mind_id == mid)),
    ]
    counter.total = sum(_count(conn, stmt) for _, stmt in plan) + len(model_ids)
    if include_vectors:
        counter.total += _count(conn, ready)
    settings = conn.scalar(select(MindRow.settings).where(MindRow.id == mid)) or {}
    schema = settings.get(SCHEMA_SETTINGS_KEY)
    counter.total += schema is not None

    def emit(kind: str, record: dict[str, Any]) -> None:
        write(dump_line({"type": kind, **record}))
        counter.wrote(kind)

    write(
        dump_line(
            {
                "type": "header",
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "mind": mind.name,
                "kind": mind.kind,
                "exported_at": iso(utcnow()),
                "generator": "waggle_store",
                "include_vectors": include_vectors,
            }
        )
    )
    for row in conn.execute(select(IdentityRow).where(IdentityRow.mind_id == mid)).mappings():
        emit(
            "identity",
            {
                k: _value(row[k])
                for k in (
                    "name",
                    "role",
                    "department",
                    "personality",
                    "capabilities",
                    "system_prompt",
                    "created_at",
                    "updated_at",
                )
            },
        )
    t = AwarenessRow
    for r in _pages(
        conn,
        select(t.id, t.category, t.content, t.priority, t.meta, t.created_at, t.expires_at).where(
            t.mind_id == mid
        ),
        t.id,
    ):
        emit(
            "awareness",
            {
                "id": r[0],
                "category": r[1],
                "content": r[2],
                "priority": r[3],
                "metadata": r[4] or {},
                "created_at": iso(r[5]),
                "expires_at": iso(r[6]),
            },
        )
    s = SessionRow
    for r in _pages(
        conn,
        select(
            s.id, s.gop_id, s.project_id, s.status, s.kind, s.started_at, s.ended_at, s.summary
        ).where(s.mind_id == mid),
        s.id,
    ):
        emit(
            "session",
            {
                "id": r[0],
                "gop_id": r[1],
                "project_id": r[2],
                "status": r[3],
                "kind": r[4],
                "started_at": iso(r[5]),
                "ended_at": iso(r[6]),
                "summary": r[7],
            },
        )
    f = FrameRow
    for r in _pages(
        conn,
        select(
            f.id,
            f.frame_type,
            f.gop_id,
            f.t,
            f.base_frame_id,
            f.content,
            f.importance,
            f.source,
            f.access_count,
            f.created_at,
            f.last_accessed,
        ).where(f.mind_id == mid),
        f.id,
    ):
        emit(
            "frame",
            {
                "id": r[0],
                "frame_type": r[1],
                "gop_id": r[2],
                "t": r[3],
                "base_frame_id": r[4],
                "content": r[5],
                "importance": r[6],
                "source": r[7],
                "access_count": r[8],
                "created_at": iso(r[9]),
                "last_accessed": iso(r[10]),
            },
        )
    e = EntityRow
    for r in _pages(
        conn,
        select(
            e.id, e.entity_type, e.name, e.properties, e.valid_from, e.valid_to, e.recorded_at
        ).where(e.mind_id == mid),
        e.id,
    ):
        emit(
            "entity",
            {
                "id": r[0],
                "entity_type": r[1],
                "name": r[2],
                "properties": r[3] or {},
                "valid_from": iso(r[4]),
                "valid_to": iso(r[5]),
                "recorded_at": iso(r[6]),
            },
        )
    x = RelationRow
    for r in _pages(
        conn,
        select(
            x.id,
            x.source_id,
            x.target_id,
            x.relation_type,
            x.confidence,
            x.properties,
            x.valid_from,
            x.valid_to,
            x.recorded_at,
        ).where(x.mind_id == mid),
        x.id,
    ):
        emit(
            "relation",
            {
                "id": r[0],
                "source_id": r[1],
                "target_id": r[2],
                "relation_type": r[3],
                "confidence": r[4],
                "properties": r[5] or {},
                "valid_from": iso(r[6]),
                "valid_to": iso(r[7]),
                "recorded_at": iso(r[8]),
            },
        )
    for ids in _id_pages(conn, frames_of_mind):
        m = EntityMentionRow
        for r in conn.execute(
            select(m.frame_id, m.entity_id)
            .where(m.frame_id.in_(ids))
            .order_by(m.frame_id, m.entity_id)
        ):
            emit("mention", {"entity_id": r[1], "frame_id": r[0]})
    _export_kv(conn, mid, emit)
    h = HarvestSourceRow
    for r in _pages(
        conn,
        select(
            h.id,
            h.source,
            h.display_name,
            h.source_path,
            h.last_synced_at,
            h.items_imported,
            h.frames_created,
            h.auto_sync,
            h.sync_interval_hours,
            h.last_content_hash,
            h.created_at,
        ).where(h.mind_id == mid),
        h.id,
    ):
        emit(
            "harvest_source",
            {
                "source": r[1],
                "display_name": r[2],
                "source_path": r[3],
                "last_synced_at": iso(r[4]),
                "items_imported": r[5],
                "frames_created": r[6],
                "auto_sync": bool(r[7]),
                "sync_interval_hours": r[8],
                "last_content_hash": r[9],
                "created_at": iso(r[10]),
            },
        )
    if schema is not None:
        emit(
            "validation_schema",
            {
                "required_properties": schema.get("required_properties", {}),
                "allowed_relations": schema.get("allowed_relations"),
            },
        )
    for model in conn.execute(
        select(EmbeddingModelRow)
        .where(EmbeddingModelRow.id.in_(model_ids))
        .order_by(EmbeddingModelRow.id)
    ).mappings():
        emit(
            "embedding_model",
            {k: model[k] for k in ("id", "provider", "model", "dimensions", "metric", "status")},
        )
    if include_vectors:
        _export_vectors(conn, mind, model_ids, emit)


def _export_kv(conn: sa.Connection, mid: int, emit: Callable[[str, dict[str, Any]], None]) -> None:
    last: str | None = None
    while True:
        stmt = select(KVRow.key, KVRow.value, KVRow.updated_at).where(KVRow.mind_id == mid)
        if last is not None:
            stmt = stmt.where(KVRow.key > last)
        rows = conn.execute(stmt.order_by(KVRow.key).limit(PAGE)).all()
        for r in rows:
            emit("kv", {"key": r[0], "value": r[1], "updated_at": iso(r[2])})
        if len(rows) < PAGE:
            return
        last = str(rows[-1][0])


def _id_pages(conn: sa.Connection, stmt: sa.Select[Any]) -> Iterator[list[int]]:
    page: list[int] = []
    for row in _pages(conn, stmt, FrameRow.id):
        page.append(int(row[0]))
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def _export_vectors(
    conn: sa.Connection,
    mind: MindContext,
    model_ids: Sequence[int],
    emit: Callable[[str, dict[str, Any]], None],
) -> None:
    adapter = mind.adapter
    if not model_ids or not adapter.vector_backend_available(conn):
        return
    e = FrameEmbeddingRow
    for model_id in model_ids:
        stmt = (
            select(e.frame_id, e.content_hash)
            .join(FrameRow, FrameRow.id == e.frame_id)
            .where(
                FrameRow.mind_id == mind.id,
                e.status == "ready",
                e.model_id == model_id,
                e.content_hash == FrameRow.content_hash,
            )
        )
        batch: list[tuple[int, str]] = []
        for row in _pages(conn, stmt, e.frame_id):
            batch.append((int(row[0]), str(row[1])))
            if len(batch) == PAGE:
                _emit_vectors(conn, adapter, model_id, batch, emit)
                batch = []
        _emit_vectors(conn, adapter, model_id, batch, emit)


def _emit_vectors(
    conn: sa.Connection,
    adapter: Any,
    model_id: int,
    batch: list[tuple[int, str]],
    emit: Callable[[str, dict[str, Any]], None],
) -> None:
    vectors = adapter.read_vectors(conn, model_id, [fid for fid, _ in batch])
    for fid, digest in batch:
        if fid in vectors:
            emit(
                "vector",
                {
                    "frame_id": fid,
                    "model_id": model_id,
                    "content_hash": digest,
                    "vector": [_f32(x) for x in vectors[fid]],
                },
            )


def _f32(value: float) -> float:
    """The shortest decimal that is the same float32 as ``value``: vectors are stored as float32
    on both backends, and this spelling makes the same vector the same text whichever one (and
    whichever driver conversion) it came from."""
    packed = struct.pack("<f", value)
    for digits in range(6, 10):
        candidate = float(f"{value:.{digits}g}")
        if struct.pack("<f", candidate) == packed:
            return candidate
    return value


def _value(value: Any) -> Any:
    return iso(value) if hasattr(value, "isoformat") else value

"""The per-table half of an export (see :mod:`.export`): each record family's keyset-paged read
and its row-to-record mapping, one function per family (memory: identity, awareness, sessions,
frames; graph: entities, relations, mentions; small records: kv, harvest sources, validation
schema, embedding models). Split from :mod:`.export` to keep modules under 400 lines; the order
of the calls there is the order of the file, which the importer relies on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import select

from waggle_store.models import (
    AwarenessRow,
    EmbeddingModelRow,
    EntityMentionRow,
    EntityRow,
    FrameRow,
    HarvestSourceRow,
    IdentityRow,
    KVRow,
    RelationRow,
    SessionRow,
)
from waggle_store.pipeline.transfer.format import iso

__all__ = ["PAGE", "Emit", "emit_graph", "emit_memory", "emit_small", "id_pages", "pages"]

#: Rows per keyset page.
PAGE: Final = 1000

#: Writes one record of a type (``emit(kind, fields)``) and counts it.
Emit = Callable[[str, dict[str, Any]], None]


def pages(conn: sa.Connection, stmt: Any, key: Any) -> Iterator[Any]:
    """Every row of ``stmt`` (whose first column is ``key``), in key order, a page at a time."""
    last: int | None = None
    while True:
        page = stmt if last is None else stmt.where(key > last)
        rows = conn.execute(page.order_by(key).limit(PAGE)).all()
        yield from rows
        if len(rows) < PAGE:
            return
        last = int(rows[-1][0])


def id_pages(conn: sa.Connection, stmt: sa.Select[Any]) -> Iterator[list[int]]:
    """The ids ``stmt`` selects, in lists of :data:`PAGE` (the mentions are read per list)."""
    page: list[int] = []
    for row in pages(conn, stmt, FrameRow.id):
        page.append(int(row[0]))
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def emit_memory(conn: sa.Connection, mid: int, emit: Emit) -> None:
    """The identity, awareness items, sessions and frames of mind ``mid``, in that order."""
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
    for r in pages(
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
    for r in pages(
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
    for r in pages(
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
            f.meta,
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
                "metadata": r[11] or {},
            },
        )


def emit_graph(conn: sa.Connection, mid: int, frames_of_mind: sa.Select[Any], emit: Emit) -> None:
    """Entities, relations, then mentions (paged by frame: ``frames_of_mind`` selects the ids)."""
    e = EntityRow
    for r in pages(
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
    for r in pages(
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
    for ids in id_pages(conn, frames_of_mind):
        m = EntityMentionRow
        for r in conn.execute(
            select(m.frame_id, m.entity_id)
            .where(m.frame_id.in_(ids))
            .order_by(m.frame_id, m.entity_id)
        ):
            emit("mention", {"entity_id": r[1], "frame_id": r[0]})


def emit_small(
    conn: sa.Connection,
    mid: int,
    schema: dict[str, Any] | None,
    model_ids: Sequence[int],
    emit: Emit,
) -> None:
    """KV pairs, harvest sources, the validation schema (if set) and the embedding models whose
    vectors the mind holds (``model_ids``)."""
    _export_kv(conn, mid, emit)
    h = HarvestSourceRow
    for r in pages(
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


def _export_kv(conn: sa.Connection, mid: int, emit: Emit) -> None:
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


def _value(value: Any) -> Any:
    return iso(value) if hasattr(value, "isoformat") else value

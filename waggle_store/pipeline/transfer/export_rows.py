"""The per-table half of an export (see :mod:`.export`): each record family's row-to-record
mapping, one function per group (memory: identity, awareness, sessions, frames; graph: entities,
relations, mentions; small records: kv, harvest sources, validation schema, embedding models),
over the keyset-paged reads of :class:`~waggle_store.repositories.mind_export.MindExportRows`.
The order of the calls in :mod:`.export` is the order of the file, which the importer relies on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from waggle_store.pipeline.transfer.format import iso
from waggle_store.repositories.mind_export import PAGE, MindExportRows

__all__ = ["PAGE", "Emit", "emit_graph", "emit_memory", "emit_small"]

#: Writes one record of a type (``emit(kind, fields)``) and counts it.
Emit = Callable[[str, dict[str, Any]], None]


def emit_memory(conn: sa.Connection, mid: int, emit: Emit) -> None:
    """The identity, awareness items, sessions and frames of mind ``mid``, in that order."""
    rows = MindExportRows(conn, mid)
    for row in rows.identity():
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
    for r in rows.awareness():
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
    for r in rows.sessions():
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
    for r in rows.frames():
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
                "salience": r[11],
                "metadata": r[12] or {},
            },
        )


def emit_graph(conn: sa.Connection, mid: int, emit: Emit) -> None:
    """Entities, relations, then mentions (paged by frame)."""
    rows = MindExportRows(conn, mid)
    for r in rows.entities():
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
    for r in rows.relations():
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
    for r in rows.mentions():
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
    rows = MindExportRows(conn, mid)
    for r in rows.kv():
        emit("kv", {"key": r[0], "value": r[1], "updated_at": iso(r[2])})
    for r in rows.harvest_sources():
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
    for model in rows.models(model_ids):
        emit(
            "embedding_model",
            {k: model[k] for k in ("id", "provider", "model", "dimensions", "metric", "status")},
        )


def _value(value: Any) -> Any:
    return iso(value) if hasattr(value, "isoformat") else value

"""The per-table half of an export (see :mod:`.export`): each record family's row-to-record
mapping, one function per group (memory: identity, awareness, sessions, frames; graph: entities,
relations and their history, mentions, pending extractions; small records: kv, harvest
sources and tombstones, validation schema, exclusive relation types, embedding models),
over the keyset-paged reads of :class:`~waggle_store.repositories.mind_export.MindExportRows`.
The order of the calls in :mod:`.export` is the order of the file, which the importer relies on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from waggle_store.pipeline.transfer.format import iso
from waggle_store.repositories.exclusive import EXCLUSIVE_SETTINGS_KEY
from waggle_store.repositories.knowledge_schema import SCHEMA_SETTINGS_KEY
from waggle_store.repositories.mind_export import PAGE, MindExportRows

__all__ = ["PAGE", "Emit", "emit_graph", "emit_memory", "emit_small", "setting_records"]

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
    """Aliases (the entities' names resolve through them), entities, relations, their earlier
    versions, mentions (paged by frame), then the frames whose extraction is pending."""
    rows = MindExportRows(conn, mid)
    for r in rows.aliases():
        emit("alias", {"alias": r[1], "canonical_name": r[2], "canonical_key": r[3],
                       "created_at": iso(r[4])})
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
                "version": r[7],
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
                "version": r[9],
            },
        )
    recorded = ("valid_from", "valid_to", "recorded_from", "recorded_to")
    for r in rows.entity_versions():
        emit("entity_version", {"entity_id": r[0], "version": r[1], "entity_type": r[2],
                                "name": r[3], "properties": r[4] or {},
                                **{k: iso(v) for k, v in zip(recorded, r[5:9], strict=True)}})
    for r in rows.relation_versions():
        emit("relation_version", {"relation_id": r[0], "version": r[1], "source_id": r[2],
                                  "target_id": r[3], "relation_type": r[4],
                                  "confidence": r[5], "properties": r[6] or {},
                                  **{k: iso(v) for k, v in zip(recorded, r[7:11], strict=True)}})
    for r in rows.mentions():
        emit("mention", {"entity_id": r[1], "frame_id": r[0]})
    for r in rows.pending_extractions():
        emit("extraction_pending", {"frame_id": r[0], "error": r[1], "attempts": r[2],
                                    "updated_at": iso(r[3])})


def emit_small(
    conn: sa.Connection,
    mid: int,
    settings: dict[str, Any],
    model_ids: Sequence[int],
    emit: Emit,
) -> None:
    """KV pairs, harvest sources and tombstones, the validation schema and the exclusive
    relation types (those of the mind's ``settings`` that are set) and the embedding models
    whose vectors the mind holds (``model_ids``)."""
    rows = MindExportRows(conn, mid)
    schema, exclusive = settings.get(SCHEMA_SETTINGS_KEY), settings.get(EXCLUSIVE_SETTINGS_KEY)
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
                "kind": r[11],
            },
        )
    for r in rows.tombstones():
        emit("harvest_tombstone", {"source": r[0], "content_hash": r[1],
                                   "forgotten_at": iso(r[2])})
    if schema is not None:
        emit(
            "validation_schema",
            {
                "required_properties": schema.get("required_properties", {}),
                "allowed_relations": schema.get("allowed_relations"),
            },
        )
    if exclusive:
        emit("exclusive_relations", {"relation_types": exclusive})
    for model in rows.models(model_ids):
        emit(
            "embedding_model",
            {k: model[k] for k in ("id", "provider", "model", "dimensions", "metric", "status")},
        )


def _value(value: Any) -> Any:
    return iso(value) if hasattr(value, "isoformat") else value


def setting_records(settings: dict[str, Any]) -> int:
    """How many records :func:`emit_small` writes from the mind's ``settings``."""
    # The same conditions as emit_small's: a schema that is set, exclusive types that are not
    # empty.
    return ((settings.get(SCHEMA_SETTINGS_KEY) is not None)
            + bool(settings.get(EXCLUSIVE_SETTINGS_KEY)))

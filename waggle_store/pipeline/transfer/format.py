"""The ``waggle-mind`` JSONL format, version 3: what each line holds and how one is checked.

One UTF-8 JSON object per line. Line 1 is the header; every other line has a ``type`` and the
fields of the matching record (``docs/export-format.md`` is the user's description, the JSON
Schema ``waggle_store/schemas/waggle-mind-v1.schema.json`` the machine's). This module is the
importer's single source of truth: :func:`parse_line` turns one line into a :class:`Line` with
every time parsed and every field checked, or raises :class:`LineError` saying what is wrong.

Why checks are spelled out here instead of delegating to the JSON Schema: the importer must name
the line and the field in its error, must run without an optional ``jsonschema`` dependency, and
must parse times with the library's own strict ISO-8601 rules
(:func:`waggle_store.timeutil.parse_iso`). The field checkers, with the API's size limits, are in
:mod:`.format_checks`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Final

from waggle_store.embeddings.sentences import TEXT_FORMS
from waggle_store.errors import InvalidInputError
from waggle_store.models import AWARENESS_CATEGORIES, FRAME_SOURCES, FRAME_TYPES, IMPORTANCE_LEVELS
from waggle_store.models.sessions import SESSION_KINDS, SESSION_STATUSES
from waggle_store.pipeline.safe_files import check_json_shape
from waggle_store.pipeline.transfer.format_checks import (
    Checker,
    LineError,
    _any,
    _bool,
    _choice,
    _confidence,
    _content,
    _int,
    _object,
    _optional,
    _str,
    _time,
    _vector,
)
from waggle_store.pipeline.transfer.format_conversations import conversation_specs
from waggle_store.pipeline.transfer.format_knowledge import knowledge_specs
from waggle_store.repositories.common import MAX_KEY_LENGTH, MAX_NAME_LENGTH
from waggle_store.repositories.harvest import HARVEST_KINDS
from waggle_store.repositories.knowledge_common import MAX_NAME_LENGTH as MAX_ENTITY_NAME_LENGTH
from waggle_store.repositories.knowledge_common import MAX_TYPE_LENGTH
from waggle_store.textinput import check_metadata

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "LINE_TYPES",
    "READABLE_VERSIONS",
    "Line",
    "LineError",
    "dump_line",
    "iso",
    "json_schema",
    "line_error",
    "make_line",
    "parse_header",
    "parse_line",
]

FORMAT_NAME: Final = "waggle-mind"
FORMAT_VERSION: Final = 3
#: The versions this library reads (version 1 has no conversations, messages or agents;
#: versions 1 and 2 have none of the record types of :mod:`.format_knowledge`).
READABLE_VERSIONS: Final = (1, 2, 3)
SCHEMA_FILE: Final = "waggle-mind-v1.schema.json"

#: Every record type, in the order an export writes them.
LINE_TYPES: Final = (
    "identity",
    "awareness",
    "session",
    "frame",
    "alias",
    "entity",
    "relation",
    "entity_version",
    "relation_version",
    "mention",
    "extraction_pending",
    "kv",
    "harvest_source",
    "harvest_tombstone",
    "validation_schema",
    "exclusive_relations",
    "embedding_model",
    "vector",
    "conversation",
    "message",
    "agent",
)


@dataclass(frozen=True)
class Line:
    """One checked record: its type and its fields (times as aware UTC datetimes)."""

    type: str
    fields: dict[str, Any]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one line, shipped in the package (``waggle_store/schemas``)."""
    text = resources.files("waggle_store").joinpath("schemas", SCHEMA_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def line_error(line: int, message: str) -> InvalidInputError:
    """The import's error for what is wrong at line ``line`` of the file (1-based)."""
    return InvalidInputError(f"line {line}: {message}")


def iso(value: datetime | None) -> str | None:
    """A time as ISO-8601 with its offset (always ``+00:00``: the store keeps UTC)."""
    return None if value is None else value.astimezone(UTC).isoformat()


def dump_line(record: Mapping[str, Any]) -> str:
    """One line of the file. Keys sorted so that two exports of the same data are byte-identical
    whatever order a database returns JSON object keys in (Postgres JSONB reorders them)."""
    return (
        json.dumps(
            record, ensure_ascii=False, sort_keys=True, allow_nan=False, separators=(",", ":")
        )
        + "\n"
    )


def _metadata(value: Any) -> dict[str, Any]:
    try:
        return check_metadata(_object(value)) or {}
    except InvalidInputError as exc:
        raise LineError(str(exc)) from exc


_TEXT = _str()
_ID = _int(1, bits=None)
_GOP = _str(MAX_NAME_LENGTH, empty=False)
_LABEL = _str(100, empty=False)

#: The fields of each record type: name -> checker. Every field is required (``null`` where the
#: checker is optional); fields not listed are ignored, so a newer minor writer stays readable.
SPECS: Final[dict[str, dict[str, Checker]]] = {
    "identity": {
        "name": _str(empty=False),
        "role": _TEXT,
        "department": _TEXT,
        "personality": _TEXT,
        "capabilities": _TEXT,
        "system_prompt": _TEXT,
        "created_at": _time,
        "updated_at": _time,
    },
    "awareness": {
        "id": _ID,
        "category": _choice(AWARENESS_CATEGORIES),
        "content": _str(empty=False),
        "priority": _int(),
        "metadata": _object,
        "created_at": _time,
        "expires_at": _optional(_time),
    },
    "session": {
        "id": _ID,
        "gop_id": _GOP,
        "project_id": _optional(_str(MAX_NAME_LENGTH)),
        "status": _choice(SESSION_STATUSES),
        "kind": _choice(SESSION_KINDS),
        "started_at": _time,
        "ended_at": _optional(_time),
        "summary": _optional(_TEXT),
    },
    "frame": {
        "id": _ID,
        "frame_type": _choice(FRAME_TYPES),
        "gop_id": _GOP,
        "t": _int(0),
        "base_frame_id": _optional(_ID),
        "content": _content,
        "importance": _choice(IMPORTANCE_LEVELS),
        "source": _choice(FRAME_SOURCES),
        "access_count": _int(0),
        "created_at": _time,
        "last_accessed": _time,
    },
    "entity": {
        "id": _ID,
        "entity_type": _LABEL,
        "name": _str(MAX_ENTITY_NAME_LENGTH, empty=False),
        "properties": _object,
        "valid_from": _time,
        "valid_to": _optional(_time),
        "recorded_at": _time,
    },
    "relation": {
        "id": _ID,
        "source_id": _ID,
        "target_id": _ID,
        "relation_type": _LABEL,
        "confidence": _confidence,
        "properties": _object,
        "valid_from": _time,
        "valid_to": _optional(_time),
        "recorded_at": _time,
    },
    "mention": {"entity_id": _ID, "frame_id": _ID},
    "kv": {"key": _str(MAX_KEY_LENGTH, empty=False), "value": _any, "updated_at": _time},
    "harvest_source": {
        "source": _str(255, empty=False),
        "display_name": _TEXT,
        "source_path": _optional(_TEXT),
        "last_synced_at": _optional(_time),
        "items_imported": _int(0),
        "frames_created": _int(0),
        "auto_sync": _bool,
        "sync_interval_hours": _int(1),
        "last_content_hash": _optional(_str(64)),
        "created_at": _time,
    },
    "validation_schema": {"required_properties": _object, "allowed_relations": _any},
    "embedding_model": {
        "id": _ID,
        "provider": _str(50, empty=False),
        "model": _str(255, empty=False),
        "dimensions": _int(1),
        "metric": _str(20, empty=False),
        "status": _str(10, empty=False),
    },
    "vector": {
        "frame_id": _ID,
        "model_id": _ID,
        "content_hash": _str(64, empty=False),
        "vector": _vector,
    },
    **conversation_specs(text=_str, integer=_int, time=_time, choice=_choice, obj=_object,
                         optional=_optional, anything=_any),
    **knowledge_specs(text=_str, integer=_int, time=_time, obj=_object, optional=_optional,
                      confidence=_confidence),
}


#: Fields a record may leave out, as a file written before they existed does: name -> (the value
#: it then has, checker). A vector's ``text_form`` (how it was made from its frame's text,
#: ``embeddings/sentences.py``) came with migration 0007; every vector before it was "whole".
OPTIONAL: Final[dict[str, dict[str, tuple[Any, Checker]]]] = {
    "vector": {"text_form": ("whole", _choice(TEXT_FORMS))},
    # A frame's metadata came with migration 0014; a frame before it had none.
    "frame": {"salience": (None, _optional(_confidence)), "metadata": ({}, _metadata)},
    # Version numbers in recorded time came with migration 0013 (format version 3); before,
    # every entity and relation was in its first version.
    "entity": {"version": (1, _int(1))},
    "relation": {"version": (1, _int(1))},
    # The adapter of a harvest source (migration 0003); null in rows from a Waggle .mind file.
    "harvest_source": {"kind": (None, _optional(_choice(HARVEST_KINDS)))},
}


def _decode(text: str) -> dict[str, Any]:
    try:
        check_json_shape(text, "the line")
        obj = json.loads(text, parse_constant=_refuse_constant)
    except InvalidInputError as exc:
        raise LineError(str(exc)) from exc
    except ValueError as exc:
        raise LineError(f"not valid JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise LineError(f"must be a JSON object, got {type(obj).__name__}")
    return obj


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_header(text: str) -> dict[str, Any]:
    """The header line: format, version, mind name and kind, export time."""
    obj = _decode(text)
    if obj.get("type") != "header" or obj.get("format") != FORMAT_NAME:
        raise LineError(
            'the first line must be the header '
            f'{{"type": "header", "format": "{FORMAT_NAME}", ...}}'
        )
    version = obj.get("version")
    if version not in READABLE_VERSIONS:
        raise LineError(
            f"format version {version!r} is not one this waggle_store reads "
            f"(it reads versions {', '.join(map(str, READABLE_VERSIONS))})"
        )
    mind = _field("mind", obj.get("mind"), _str(200, empty=False))
    kind = _field("kind", obj.get("kind", "workspace"), _choice(("workspace", "personal")))
    exported_at = _field("exported_at", obj.get("exported_at"), _time)
    return {"mind": mind, "kind": kind, "exported_at": exported_at}


def _field(name: str, value: Any, check: Checker) -> Any:
    try:
        return check(value)
    except LineError as exc:
        raise LineError(f"field {name!r} {exc}") from exc


def parse_line(text: str) -> Line:
    """Check one record line and return it with its values converted."""
    return make_line(_decode(text))


def make_line(obj: Mapping[str, Any]) -> Line:
    """Check one record given as a JSON object (``type`` and the fields, as in a file line)."""
    kind = obj.get("type")
    spec = SPECS.get(kind) if isinstance(kind, str) else None
    if spec is None:
        raise LineError(f"unknown record type {kind!r}; expected one of {', '.join(LINE_TYPES)}")
    fields: dict[str, Any] = {}
    for name, check in spec.items():
        if name not in obj:
            raise LineError(f"a {kind} record needs the field {name!r}")
        fields[name] = _field(name, obj[name], check)
    for name, (absent, check) in OPTIONAL.get(str(kind), {}).items():
        fields[name] = _field(name, obj[name], check) if name in obj else absent
    if kind == "validation_schema":
        _check_schema(fields)
    if kind == "exclusive_relations":
        _check_exclusive(fields["relation_types"])
    if kind == "kv":
        try:
            json.dumps(fields["value"], allow_nan=False)
        except ValueError as exc:
            raise LineError(f"field 'value' is not storable JSON: {exc}") from exc
    return Line(str(kind), fields)


def _check_exclusive(types: dict[str, Any]) -> None:
    for name, exclusive in types.items():
        if not name.strip() or len(name) > MAX_TYPE_LENGTH or "\x00" in name:
            raise LineError(f"field 'relation_types': {name!r} is not a relation type "
                            f"(non-empty, at most {MAX_TYPE_LENGTH} characters)")
        if not isinstance(exclusive, bool):
            raise LineError(f"field 'relation_types': {name!r} must map to true or false")


def _check_schema(fields: dict[str, Any]) -> None:
    required = fields["required_properties"]
    if not all(
        isinstance(v, list) and all(isinstance(k, str) for k in v) for v in required.values()
    ):
        raise LineError("field 'required_properties' must map entity types to lists of strings")
    allowed = fields["allowed_relations"]
    if allowed is not None and not (
        isinstance(allowed, list)
        and all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(p, str) for p in t)
            for t in allowed
        )
    ):
        raise LineError(
            "field 'allowed_relations' must be null or a list of "
            "[source_type, relation_type, target_type]"
        )

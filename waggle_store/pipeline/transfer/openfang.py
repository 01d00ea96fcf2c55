"""OpenFang's memory JSON export, to and from a mind.

Upstream OpenFang never implemented its export (its ``export()`` returns empty bytes), so the
shape is the one its documentation describes (``MemorySubstrate::export`` ->
``{fragments, entities, relations, kv}``) with the crate's own column names accepted too. The
mapping is in ``docs/export-format.md``; in short:

* a fragment becomes an I-frame of the named session ``openfang:<agent_id>``; its importance
  (0..1, or the crate's ``confidence``) becomes a level, its ``MemorySource`` a frame source;
  ``metadata.waggle`` (written by :func:`export_openfang`) restores both exactly;
* entities keep their attributes as properties and ``created_at`` as ``valid_from``; relations
  point at entities by the file's ids (UUID strings, mapped to the store's ids);
* fragments OpenFang stored twice (it has no dedup) are merged (access counts summed); deleted
  fragments, relations to missing entities and embeddings without a named model are skipped
  and counted in the report.

The JSON document is read whole (json has no streaming reader in the standard library). This
module reads; the export, written record by record in keyset pages like the JSONL export, is in
:mod:`.openfang_export` (it shares only the level table with reading) and is re-exported here,
where callers import both directions from.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import IO, Any, Final

from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.safe_files import MAX_FILE_BYTES, bounded_json, open_regular, read_capped
from waggle_store.pipeline.transfer.format import Line, iso
from waggle_store.pipeline.transfer.importer import RecordSource
from waggle_store.pipeline.transfer.openfang_export import LEVELS, export_openfang
from waggle_store.pipeline.transfer.problems import NumberedLines, Problems
from waggle_store.pipeline.transfer.waggle_mind_rows import foreign_time
from waggle_store.repositories.common import content_hash
from waggle_store.timeutil import parse_iso, utcnow

__all__ = ["export_openfang", "openfang_records"]

_TO_SOURCE: Final = {
    "usermessage": "user_stated", "userpreference": "user_stated", "conversation": "user_stated",
    "agentresponse": "agent_inferred", "toolresult": "tool_verified", "websearch": "tool_verified",
    "systemnote": "system", "system": "system", "import": "import",
}


def _level(value: Any) -> str:
    number = (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.5
    )
    if number > 1.0:  # the HTTP memory-api's 0..10 scale
        number /= 10
    return next((name for name, floor in LEVELS if number >= floor - 1e-9), "deprecated")


def _label(value: Any) -> str:
    """An OpenFang enum as stored: ``"person"``, ``"\\"works_at\\""`` (JSON text) or
    ``{"custom": "x"}``."""
    if isinstance(value, str) and value.startswith('"'):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value).strip('"')
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    return str(value) if value not in (None, "") else "unknown"


def _list(value: Any) -> list[Any]:
    """A list field of the document; anything else (absent, a string, a number) is empty."""
    return value if isinstance(value, list) else []


class _Converter(NumberedLines):
    def __init__(self, doc: dict[str, Any], problems: Problems) -> None:
        self.doc, self.problems = doc, problems
        self.now = utcnow()

    def time(self, value: Any, what: str) -> str:
        """RFC 3339 as chrono writes it (nanoseconds, ``+00:00``), or any time Waggle writes;
        unreadable times become the import time (and are counted)."""
        parsed: datetime | None = None
        if isinstance(value, str):
            try:
                parsed = parse_iso(value)
            except InvalidInputError:
                parsed = None
        if parsed is None:
            parsed = foreign_time(value, self.problems, what)
        if parsed is None:
            self.problems.add("unreadable time", f"{what}={value!r}", "replaced by the import time")
            parsed = self.now
        return str(iso(parsed))

    def records(self) -> Iterator[tuple[int, Line]]:
        self.at = "fragments"
        fragments = [f for f in _list(self.doc.get("fragments")) if isinstance(f, dict)]
        kept, sums = self._dedupe(fragments)
        gop = f"openfang:{self.doc.get('agent_id') or 'import'}"
        starts = [self.time(f.get("created_at"), "fragment created_at") for f in kept]
        yield from self.line(
            {
                "type": "session",
                "id": 1,
                "gop_id": gop[:255],
                "project_id": None,
                "status": "active",
                "kind": "named",
                "started_at": min(starts) if starts else iso(self.now),
                "ended_at": None,
                "summary": "OpenFang import",
            },
            "session",
        )
        for t, fragment in enumerate(kept):
            self.at = f"fragment {fragment.get('id')!r}"
            yield from self._fragment(fragment, t + 1, t, gop[:255], sums[t])
        yield from self._graph()
        self.at = "kv"
        kv = self.doc.get("kv") or {}
        items = (
            [{"key": k, "value": v} for k, v in kv.items()]
            if isinstance(kv, dict)
            else [i for i in kv if isinstance(i, dict)]
        )
        for item in items:
            self.at = f"kv {item.get('key')!r}"
            yield from self.line(
                {
                    "type": "kv",
                    "key": item.get("key"),
                    "value": item.get("value"),
                    "updated_at": self.time(item.get("updated_at", iso(self.now)), "kv updated_at"),
                },
                f"kv {item.get('key')!r}",
            )

    def _dedupe(self, fragments: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[int]]:
        kept: list[dict[str, Any]] = []
        sums: list[int] = []
        first: dict[str, int] = {}
        for f in fragments:
            if f.get("deleted"):
                self.problems.add(
                    "deleted fragment", str(f.get("id")), "skipped (OpenFang soft-deletes)"
                )
                continue
            content = f.get("content")
            digest = content_hash(content) if isinstance(content, str) else ""
            raw = f.get("access_count")
            count = raw if isinstance(raw, int) and not isinstance(raw, bool) else 0
            if digest and digest in first:
                self.problems.add(
                    "the same fragment stored twice",
                    str(f.get("id")),
                    "merged into the first (access counts summed)",
                )
                sums[first[digest]] += max(0, count)
                continue
            first[digest] = len(kept)
            kept.append(f)
            sums.append(max(0, count))
        return kept, sums

    def _fragment(
        self, f: dict[str, Any], fid: int, t: int, gop: str, access_count: int
    ) -> Iterator[tuple[int, Line]]:
        waggle = (
            (f.get("metadata") or {}).get("waggle") if isinstance(f.get("metadata"), dict) else None
        )
        waggle = waggle if isinstance(waggle, dict) else {}
        source = waggle.get("source") or _TO_SOURCE.get(
            _label(f.get("source")).replace("_", "").lower()
        )
        if source is None:
            self.problems.add(
                "unknown fragment source",
                f"{f.get('id')}: {f.get('source')!r}",
                "stored as 'import'",
            )
            source = "import"
        importance = waggle.get("importance") or _level(
            f.get("importance", f.get("confidence", 0.5))
        )
        if f.get("embedding"):
            self.problems.add(
                "embedding not imported",
                str(f.get("id")),
                "the export does not name its model; reconcile embeds the frame",
            )
        created = self.time(f.get("created_at"), "fragment created_at")
        yield from self.line(
            {
                "type": "frame",
                "id": fid,
                "frame_type": "I",
                "gop_id": gop,
                "t": t,
                "base_frame_id": None,
                "content": f.get("content"),
                "importance": importance,
                "source": source,
                "access_count": access_count,
                "created_at": created,
                "last_accessed": self.time(
                    f.get("last_accessed_at", f.get("accessed_at", created)),
                    "fragment last_accessed_at",
                ),
            },
            f"fragment {f.get('id')}",
        )

    def _graph(self) -> Iterator[tuple[int, Line]]:
        ids: dict[str, int] = {}
        for e in _list(self.doc.get("entities")):
            if not isinstance(e, dict):
                continue
            self.at = f"entity {e.get('id')!r}"
            props = e.get("attributes", e.get("properties")) or {}
            if isinstance(props, str):
                try:
                    props = json.loads(props)
                except ValueError:
                    props = {}
            created = self.time(e.get("created_at"), "entity created_at")
            for item in self.line(
                {
                    "type": "entity",
                    "id": len(ids) + 1,
                    "entity_type": _label(e.get("entity_type")),
                    "name": e.get("name"),
                    "properties": props if isinstance(props, dict) else {},
                    "valid_from": created,
                    "valid_to": None,
                    "recorded_at": created,
                },
                f"entity {e.get('id')}",
            ):
                ids[str(e.get("id"))] = len(ids) + 1
                yield item
        for n, r in enumerate(_list(self.doc.get("relations")), start=1):
            if not isinstance(r, dict):
                continue
            self.at = f"relation {r.get('id', n)!r}"
            src = ids.get(str(r.get("from_entity_id", r.get("source_entity", r.get("source")))))
            tgt = ids.get(str(r.get("to_entity_id", r.get("target_entity", r.get("target")))))
            if src is None or tgt is None:
                self.problems.add("relation to a missing entity", str(r.get("id", n)), "skipped")
                continue
            created = self.time(r.get("created_at"), "relation created_at")
            yield from self.line(
                {
                    "type": "relation",
                    "id": n,
                    "source_id": src,
                    "target_id": tgt,
                    "relation_type": _label(r.get("relation_type")),
                    "confidence": r.get("confidence", 1.0),
                    "properties": r.get("properties") or {},
                    "valid_from": created,
                    "valid_to": None,
                    "recorded_at": created,
                },
                f"relation {r.get('id', n)}",
            )


@contextmanager
def openfang_records(
    src: str | os.PathLike[str] | IO[str] | IO[bytes],
) -> Iterator[tuple[RecordSource, Problems]]:
    """The record source of an OpenFang memory JSON export, and the Problems it fills. The file
    is read whole, so it is bounded first: a regular file (a path) of at most MAX_FILE_BYTES,
    JSON no deeper or larger than :mod:`waggle_store.pipeline.safe_files` allows."""
    if isinstance(src, (str, os.PathLike)):
        with open_regular(src, follow_symlinks=True) as handle:
            data: bytes | str = read_capped(handle, MAX_FILE_BYTES, os.fspath(src))
    else:
        data = read_capped(src, MAX_FILE_BYTES, "the OpenFang export")  # type: ignore[arg-type]
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"not an OpenFang memory export (not UTF-8): {exc}") from exc
    try:
        doc = bounded_json(text, "the file")
    except InvalidInputError as exc:
        raise InvalidInputError(f"not an OpenFang memory export: {exc}") from exc
    if not isinstance(doc, dict) or not any(
        k in doc for k in ("fragments", "entities", "relations", "kv")
    ):
        raise InvalidInputError(
            "not an OpenFang memory export: expected a JSON object with "
            "fragments, entities, relations and kv"
        )

    def records(found: Problems) -> Iterator[tuple[int, Line]]:
        converter = _Converter(doc, found)
        return converter.named(converter.records())

    yield records, Problems()


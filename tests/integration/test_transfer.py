"""Export / import of a mind as waggle-mind JSONL (issue 14), on both dialects: the round trip
to the other dialect, vectors in the file, the shipped JSON schema. The importer's checks and
merging are in test_transfer_import.py."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import waggle_store as ws
from tests.integration.transfer_demo import build_demo

QUERIES = [
    "Who leads Project Apollo?",
    "launch in Zürich",
    "Marcus PostgreSQL",
    "TypeScript",
    "budget engineers",
    "design system Priya",
    "staging server down",
    "load test checklist",
]


def normalised(text: str) -> list[dict[str, Any]]:
    """The records of an export with every store id replaced by its order of definition (ids are
    the one documented difference between two stores) and the export time dropped."""
    order: dict[str, dict[int, int]] = {}

    def ref(kind: str, value: int | None, define: bool = False) -> str | None:
        if value is None:
            return None
        ids = order.setdefault(kind, {})
        if define:
            assert value not in ids
            ids[value] = len(ids)
        return f"{kind}#{ids.get(value, f'?{value}')}"

    out = []
    for raw in text.splitlines():
        rec = json.loads(raw)
        kind = rec["type"]
        if kind == "header":
            rec.pop("exported_at")
        elif kind in ("awareness", "session", "entity", "embedding_model"):
            rec["id"] = ref(kind, rec["id"], True)
        elif kind == "frame":
            rec["id"] = ref("frame", rec["id"], True)
            rec["base_frame_id"] = ref("frame", rec["base_frame_id"])
            if rec["frame_type"] == "B":
                doc = json.loads(rec["content"])
                doc["references"] = [ref("frame", r) for r in doc["references"]]
                rec["content"] = doc
        elif kind == "relation":
            rec["id"] = ref("relation", rec["id"], True)
            rec["source_id"], rec["target_id"] = (
                ref("entity", rec["source_id"]),
                ref("entity", rec["target_id"]),
            )
        elif kind == "mention":
            rec["entity_id"], rec["frame_id"] = (
                ref("entity", rec["entity_id"]),
                ref("frame", rec["frame_id"]),
            )
        elif kind == "vector":
            rec["frame_id"], rec["model_id"] = (
                ref("frame", rec["frame_id"]),
                ref("embedding_model", rec["model_id"]),
            )
        out.append(rec)
    return out



def _top10(mind: ws.Mind, query: str, lanes: tuple[str, ...] | None = None) -> list[str]:
    return [r.frame.content for r in mind.search(query, limit=10, lanes=lanes)]


def test_round_trip_to_the_other_dialect_is_identical(
    store: ws.Store, other_store: ws.Store, tmp_path: Path
) -> None:
    build_demo(store)
    store.reconcile(mind="demo")  # embed the hand-made frames too: both sides search every frame
    first = tmp_path / "first.jsonl"
    calls: list[tuple[int, int]] = []
    report = store.export_mind(
        "demo", first, progress=lambda done, total: calls.append((done, total))
    )
    assert report.frames == 53
    assert report.entities > 5
    assert report.relations > 0
    assert report.records == len(first.read_text().splitlines())
    assert calls
    assert calls[-1][0] == calls[-1][1] == report.records - 1

    imported = other_store.import_mind(first)
    assert imported.mind == "demo"
    assert imported.problems == []
    assert (
        imported.frames_imported,
        imported.entities_imported,
        imported.relations_imported,
        imported.sessions_imported,
    ) == (53, report.entities, report.relations, 2)
    assert imported.duplicates_skipped == 0
    assert imported.vectors_pending == 53

    # The file held no vectors: the copy's frames are pending until reconcile embeds them (and
    # only then does the copy have an embedding model to list).
    assert other_store.reconcile(mind="demo").vectors_fixed == 53
    second = io.StringIO()
    other_store.export_mind("demo", second)
    assert normalised(second.getvalue()) == normalised(first.read_text())

    # Search: the copy on the other dialect ranks like the source. The keyword lane is one formula
    # on both (dialects/keyword_rank.py), the vector lane's equal distances are ordered by frame
    # id, so the fused top 10 is the same list; the keyword lane alone is checked too, so a
    # divergence says which side moved.
    source, copy = store.mind("demo"), other_store.mind("demo")
    for query in QUERIES:
        assert _top10(copy, query, ("keyword",)) == _top10(source, query, ("keyword",)), query
        assert set(_top10(copy, query, ("vector",))) == set(_top10(source, query, ("vector",))), (
            query
        )
        assert _top10(copy, query) == _top10(source, query), query
    back = store.import_mind(io.StringIO(second.getvalue()), into="back")
    assert back.frames_imported == 53
    assert back.problems == []
    store.reconcile(mind="back")
    for query in QUERIES:
        assert _top10(store.mind("back"), query) == _top10(source, query), query


def test_vectors_travel_with_the_file(store: ws.Store, tmp_path: Path) -> None:
    build_demo(store)
    path = tmp_path / "v.jsonl"
    report = store.export_mind("demo", path, include_vectors=True)
    assert report.vectors == 50  # the cognified turns; the hand-made frames are still pending
    imported = store.import_mind(path, into="copy")
    assert imported.vectors_imported == 50
    assert imported.vectors_pending == 3
    again = io.BytesIO()
    store.export_mind("copy", again, include_vectors=True)
    copied = [r for r in normalised(again.getvalue().decode()) if r["type"] == "vector"]
    original = [r for r in normalised(path.read_text()) if r["type"] == "vector"]
    assert [(r["frame_id"], r["content_hash"]) for r in copied] == [
        (r["frame_id"], r["content_hash"]) for r in original
    ]
    for a, b in zip(copied, original, strict=True):  # re-normalised on import: float32 precision
        assert max(abs(x - y) for x, y in zip(a["vector"], b["vector"], strict=True)) < 1e-6
    assert store.reconcile(mind="copy").vectors_fixed == 3


def test_every_exported_line_matches_the_shipped_json_schema(
    store: ws.Store, tmp_path: Path
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from waggle_store.pipeline.transfer.format import SPECS, json_schema

    schema = json_schema()
    for kind, fields in SPECS.items():  # the schema and the importer's checks name the same fields
        assert set(schema["$defs"][kind]["required"]) == {"type", *fields}, kind
    build_demo(store)
    out = io.StringIO()
    store.export_mind("demo", out, include_vectors=True)
    validator = jsonschema.Draft202012Validator(schema)
    kinds = set()
    for line in out.getvalue().splitlines():
        record = json.loads(line)
        validator.validate(record)
        kinds.add(record["type"])
    assert kinds >= {
        "header",
        "identity",
        "awareness",
        "session",
        "frame",
        "entity",
        "relation",
        "mention",
        "kv",
        "validation_schema",
        "embedding_model",
        "vector",
    }


def test_an_export_read_a_few_rows_at_a_time_is_the_same(store: ws.Store,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every record kind is read in keyset pages: pages of 2 rows give the same file."""
    from waggle_store.repositories import mind_export

    mind = build_demo(store)
    for i in range(5):
        mind.kv.set(f"key {i}", i)
        mind.knowledge.add_alias(f"Nick {i}", f"Person {i}")
        mind.knowledge.create_entity("person", f"Person {i}", {})
    whole = io.StringIO()
    store.export_mind(mind.name, whole)
    monkeypatch.setattr(mind_export, "PAGE", 2)
    paged = io.StringIO()
    store.export_mind(mind.name, paged)
    # The header holds the export's time; every other line is the same.
    assert whole.getvalue().splitlines()[1:] == paged.getvalue().splitlines()[1:]
    kinds = [json.loads(line)["type"] for line in paged.getvalue().splitlines()]
    assert kinds.count("kv") >= 5
    assert kinds.count("alias") >= 5

"""Export / import of a mind as waggle-mind JSONL (issue 14), on both dialects."""

from __future__ import annotations

import io
import itertools
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from tests.conftest import Target
from waggle_store.demo_data import SAMPLE_CONVERSATION
from waggle_store.models import KVRow

#: 50 turns: the demo conversation, told over three days.
TURNS = [
    f"Day {i // len(SAMPLE_CONVERSATION) + 1}: {SAMPLE_CONVERSATION[i % len(SAMPLE_CONVERSATION)]}"
    for i in range(50)
]
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


def build_demo(store: ws.Store, name: str = "demo") -> ws.Mind:
    """The demo conversation through cognify_batch, plus one of every other kind of record."""
    mind = store.mind(name)
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    result = mind.cognify_batch(
        [
            ws.MemoryInput(text, created_at=start + timedelta(minutes=7 * i))
            for i, text in enumerate(TURNS)
        ]
    )
    assert not result.failures
    mind.identity.set(name="Ava", role="project assistant", personality="brief")
    mind.awareness.add(
        "task", "prepare the Zürich launch", priority=3, metadata={"b": 1, "a": [1, 2]}
    )
    mind.awareness.add("flag", "staging is down", expires_at=start + timedelta(days=400))
    mind.kv.set("last_report", {"z": 1, "a": "2026-03-01", "nested": {"y": True, "x": None}})
    mind.kv.set("counter", 7)
    notes = mind.sessions.ensure("notes", project_id="apollo", summary="side notes")
    base = mind.frames.create_i(
        notes.gop_id, "Notes keyframe about Apollo pricing", importance="important"
    )
    delta = mind.frames.create_p(notes.gop_id, "Pricing moved to per-seat", base.id)
    ids = [i for i in result.frame_ids if i is not None]
    mind.frames.create_b(
        notes.gop_id, "pricing relates to the kickoff", base.id, [delta.id, ids[0]]
    )
    for _ in range(3):
        mind.frames.touch(ids[5])
    mind.sessions.close(notes.gop_id)
    person = mind.knowledge.create_entity("person", "Olga Retired", {"team": "old"})
    mind.knowledge.retire_entity(person.id)
    mind.knowledge.set_validation_schema(ws.ValidationSchema({"person": []}, None))
    return mind


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


@pytest.fixture
def other_store(target: Target, tmp_path: Path, pg_url: str | None) -> Iterator[ws.Store]:
    """A store on the *other* dialect than the test's target."""
    if target.dialect == "postgresql":
        store = ws.open_store(f"sqlite:///{tmp_path / 'other.db'}", embedder="hashing")
        try:
            yield store
        finally:
            store.close()
        return
    if pg_url is None:
        pytest.skip("no PostgreSQL available")
    schema = "o_" + uuid.uuid4().hex[:12]
    store = ws.open_store(pg_url, schema=schema, embedder="hashing")
    try:
        yield store
    finally:
        store.close()
        engine = sa.create_engine(pg_url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


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


def _snapshot(store: ws.Store) -> dict[str, Any]:
    minds = [m.name for m in store.list_minds()]
    return {"minds": minds, **{m: store.mind(m).frames.stats() for m in minds}}


@pytest.mark.parametrize(
    "bad",
    [
        '{"type": "frame", "id": 99999, "frame_type": "I"',  # broken JSON
        '{"type": "frame", "id": 99999, "frame_type": "X", "gop_id": "g"}',  # missing / bad fields
        '{"type": "mention", "entity_id": 1, "frame_id": 424242}',  # unknown frame
        '{"type": "planet", "name": "Mars"}',  # unknown type
    ],
)
def test_a_bad_line_names_its_number_and_imports_nothing(
    store: ws.Store, tmp_path: Path, bad: str
) -> None:
    build_demo(store)
    lines = io.StringIO()
    store.export_mind("demo", lines)
    text = lines.getvalue().splitlines()
    middle = len(text) // 2
    text[middle - 1] = bad  # line number `middle` (1-based)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(text) + "\n")
    before = _snapshot(store)
    with pytest.raises(ws.InvalidInputError, match=rf"line {middle}\b"):
        store.import_mind(path, into="copy")
    with pytest.raises(ws.InvalidInputError, match=rf"line {middle}\b"):
        store.import_mind(path, merge=True)  # into the non-empty source mind
    assert _snapshot(store) == before


def test_header_is_checked(store: ws.Store, tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"type": "header", "format": "waggle-mind", "version": 4, "mind": "x", '
        '"exported_at": "2026-01-01T00:00:00Z"}\n'
    )
    with pytest.raises(ws.InvalidInputError, match="line 1: format version 4"):
        store.import_mind(path)
    path.write_text("")
    with pytest.raises(ws.InvalidInputError, match="line 1"):
        store.import_mind(path)
    assert store.list_minds() == []


def test_import_merges_into_a_non_empty_mind(store: ws.Store, tmp_path: Path) -> None:
    source = build_demo(store)
    path = tmp_path / "m.jsonl"
    store.export_mind("demo", path)
    target = store.mind("target")
    gop = target.sessions.ensure("notes").gop_id
    own = target.frames.create_i(gop, "Notes keyframe about Apollo pricing")  # also in the file
    mine = target.frames.create_i(gop, "A memory only the target has")

    report = store.import_mind(path, into="target", merge=True)
    assert report.duplicates_skipped == 1
    assert report.frames_imported == 52
    stats = target.frames.stats()
    assert stats.total == 54
    # The merged session keeps its own frames first; the imported ones follow.
    notes = target.frames.gop("notes")
    assert [f.t for f in notes] == sorted({f.t for f in notes})
    assert notes[0].id == own.id
    assert notes[1].id == mine.id
    # The imported P-frame and B-frame point at the frame the target already had.
    delta = next(f for f in notes if f.content == "Pricing moved to per-seat")
    assert delta.base_frame_id == own.id
    bframe = next(f for f in notes if f.frame_type == "B")
    refs = json.loads(bframe.content)["references"]
    assert refs[0] == delta.id
    assert bframe.base_frame_id == own.id
    kickoff = target.frames.get(refs[1])
    assert kickoff is not None
    assert kickoff.content == TURNS[0]
    # Counts and times kept as exported.
    touched = next(f for f in source.frames.recent(100) if f.access_count == 3)
    twin = next(f for f in target.frames.recent(100) if f.content == touched.content)
    assert (twin.access_count, twin.created_at, twin.last_accessed) == (
        touched.access_count,
        touched.created_at,
        touched.last_accessed,
    )

    # Idempotent: everything is already there.
    again = store.import_mind(path, into="target", merge=True)
    assert (
        again.frames_imported,
        again.entities_imported,
        again.relations_imported,
        again.mentions_imported,
        again.sessions_imported,
    ) == (0, 0, 0, 0, 0)
    assert again.duplicates_skipped == 53
    assert target.frames.stats().total == 54


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


def test_import_reports_progress_and_reads_file_objects(store: ws.Store) -> None:
    build_demo(store)
    out = io.BytesIO()
    store.export_mind("demo", out)
    seen: list[tuple[int, int]] = []
    report = store.import_mind(
        io.BytesIO(out.getvalue()),
        into="copy",
        progress=lambda done, total: seen.append((done, total)),
    )
    assert report.frames_imported == 53
    lines = len(out.getvalue().splitlines())
    assert seen
    assert seen[-1] == (lines - 1, lines - 1)
    assert all(b >= a for a, b in itertools.pairwise(seen))


@pytest.mark.parametrize("chunk", [500, 1])
def test_forward_and_dangling_frame_references(
    store: ws.Store, tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Frame-to-frame references may point further down the file (in the same write chunk or a
    later one); ones to frames the file does not hold are dropped and reported, not refused."""
    from waggle_store.pipeline.transfer import writer

    monkeypatch.setattr(writer, "CHUNK", chunk)
    at = "2026-01-02T03:04:05+00:00"
    frame = {
        "type": "frame",
        "gop_id": "g",
        "importance": "normal",
        "source": "import",
        "access_count": 0,
        "created_at": at,
        "last_accessed": at,
    }
    records = [
        {
            "type": "header",
            "format": "waggle-mind",
            "version": 1,
            "mind": "hand",
            "exported_at": at,
        },
        {
            "type": "session",
            "id": 1,
            "gop_id": "g",
            "project_id": None,
            "status": "closed",
            "kind": "named",
            "started_at": at,
            "ended_at": at,
            "summary": None,
        },
        {
            **frame,
            "id": 10,
            "frame_type": "B",
            "t": 0,
            "base_frame_id": 30,
            "content": json.dumps({"description": "ahead", "references": [20, 99, 30]}),
        },
        {
            **frame,
            "id": 11,
            "frame_type": "P",
            "t": 1,
            "base_frame_id": 30,
            "content": "delta on a later keyframe",
        },
        {
            **frame,
            "id": 20,
            "frame_type": "I",
            "t": 2,
            "base_frame_id": None,
            "content": "first keyframe",
        },
        {
            **frame,
            "id": 30,
            "frame_type": "I",
            "t": 3,
            "base_frame_id": None,
            "content": "second keyframe",
        },
    ]
    path = tmp_path / "hand.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = store.import_mind(path)
    assert report.frames_imported == 4
    assert any(
        p.startswith("1 x frame reference to a frame not in the file") for p in report.problems
    )
    frames = {f.content: f for f in store.mind("hand").frames.gop("g")}
    first, second = frames["first keyframe"], frames["second keyframe"]
    bframe = next(f for f in frames.values() if f.frame_type == "B")
    assert json.loads(bframe.content) == {
        "description": "ahead",
        "references": [first.id, second.id],
    }
    assert bframe.base_frame_id == second.id
    assert frames["delta on a later keyframe"].base_frame_id == second.id


def test_empty_mind_and_kv_merge(store: ws.Store, tmp_path: Path) -> None:
    """An empty mind round-trips; merging kv keeps the newer value of each key."""
    store.mind("empty")
    path = tmp_path / "e.jsonl"
    report = store.export_mind("empty", path)
    assert (report.records, report.frames) == (1, 0)
    assert store.import_mind(path, into="empty2").frames_imported == 0
    assert "empty2" in [m.name for m in store.list_minds()]

    source = store.mind("kv")
    source.kv.set("old", "from the file")
    source.kv.set("new", "from the file")
    kv_path = tmp_path / "kv.jsonl"
    store.export_mind("kv", kv_path)
    target = store.mind("kv-target")
    target.kv.set("new", "the target's, written later")
    with store.write() as session:  # the target's "new" is newer than the file's ...
        session.execute(
            sa.update(KVRow)
            .where(KVRow.mind_id == target.id, KVRow.key == "new")
            .values(updated_at=datetime.now(UTC) + timedelta(days=1))
        )
    target.kv.set("old", "the target's")
    with store.write() as session:  # ... and its "old" older
        session.execute(
            sa.update(KVRow)
            .where(KVRow.mind_id == target.id, KVRow.key == "old")
            .values(updated_at=datetime(2000, 1, 1, tzinfo=UTC))
        )
    report = store.import_mind(kv_path, into="kv-target", merge=True)
    assert report.kv_imported == 1
    assert dict(target.kv.items()) == {"old": "from the file", "new": "the target's, written later"}


def test_unknown_mind_and_bad_names(store: ws.Store, tmp_path: Path) -> None:
    with pytest.raises(ws.NotFoundError):
        store.export_mind("nope", tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()
    with pytest.raises(ws.InvalidInputError):
        store.import_mind(tmp_path / "missing.jsonl")
    store.mind("a")
    store.export_mind("a", tmp_path / "a.jsonl")
    with pytest.raises(ws.InvalidInputError):
        store.import_mind(tmp_path / "a.jsonl", into="")

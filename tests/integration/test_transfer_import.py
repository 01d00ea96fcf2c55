"""Import of waggle-mind JSONL: bad lines and headers refused whole, merging into a non-empty
mind, progress, frame references ahead in the file or missing from it, on both dialects."""

from __future__ import annotations

import io
import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from tests.integration.transfer_demo import TURNS, build_demo
from waggle_store.models import KVRow


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

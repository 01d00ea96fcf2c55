"""Export/import fidelity, database to database: a mind exported from one dialect and imported into
the other (and back) holds the same rows, field by field, as the source.

Comparing two export files cannot see a value the exporter loses the same way on both sides (an
entity's ``valid_from`` written as its ``recorded_at``, say); comparing the rows can. The source
has what defaults would hide: ``valid_from`` ≠ ``recorded_at``, retired entities and relations,
touched frames and stored salience.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

import waggle_store as ws
from waggle_store.models import (
    AwarenessRow,
    EntityMentionRow,
    EntityRow,
    FrameRow,
    KVRow,
    RelationRow,
    SessionRow,
)

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
#: The entities the source dates by hand (valid from well before they were recorded).
DATED = ("Olga Past", "Zed Current", "Hermes", "Ann Mentor")


def _build(store: ws.Store) -> None:
    mind = store.mind("fidelity")
    result = mind.cognify_batch([
        ws.MemoryInput(f"Day {i}: Priya Shah and Marcus Lee plan Project Apollo step {i}.",
                       created_at=START + timedelta(hours=i))
        for i in range(8)])
    assert not result.failures
    ids = [i for i in result.frame_ids if i is not None]
    for n, frame_id in enumerate(ids[:4]):
        for _ in range(n + 1):
            mind.frames.touch(frame_id)
    notes = mind.sessions.ensure("notes", project_id="apollo", summary="side notes")
    base = mind.frames.create_i(notes.gop_id, "Apollo pricing keyframe", importance="important")
    delta = mind.frames.create_p(notes.gop_id, "Pricing moved to per-seat", base.id)
    mind.frames.create_b(notes.gop_id, "pricing and the kickoff", base.id, [delta.id, ids[0]])
    mind.sessions.close(notes.gop_id)
    kg = mind.knowledge
    olga = kg.create_entity("person", "Olga Past", {"team": "old"},
                            valid_from=START - timedelta(days=400),
                            valid_to=START - timedelta(days=30))
    zed = kg.create_entity("person", "Zed Current", {"team": "new"},
                           valid_from=START - timedelta(days=90))
    gone = kg.create_entity("project", "Hermes", valid_from=START - timedelta(days=200))
    kg.create_relation(zed.id, gone.id, "works_on", confidence=0.7, properties={"a": 1})
    ann = kg.create_entity("person", "Ann Mentor", valid_from=START - timedelta(days=10))
    dropped = kg.create_relation(ann.id, zed.id, "mentored", confidence=0.4)
    kg.retire_relation(dropped.id)
    kg.retire_entity(gone.id)
    assert olga.valid_to is not None
    mind.awareness.add("task", "ship Apollo", priority=3, metadata={"b": 1})
    mind.kv.set("report", {"z": 1, "nested": {"y": True}})
    # Salience as a consolidation run stores it (a decayed value per frame).
    report = mind.consolidate(prune_below=0.0, merge_similarity=1.0, now=START + timedelta(days=40))
    assert report.fragments_deleted == 0
    with store.read() as s:
        stored = s.scalars(sa.select(FrameRow.salience).where(
            FrameRow.mind_id == mind.id, FrameRow.salience.is_not(None))).all()
    assert stored, "the source has no stored salience to carry"


def _rows(store: ws.Store, name: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of the mind, ids replaced by their rank among the mind's ids of that table (the
    one documented difference between two stores); B-frame references mapped the same way."""
    mind_id = store.mind(name).id
    with store.read() as s:
        def read(model: Any, *where: Any) -> list[Any]:
            return list(s.scalars(sa.select(model).where(*where).order_by(
                *model.__table__.primary_key.columns)))

        frames = read(FrameRow, FrameRow.mind_id == mind_id)
        entities = read(EntityRow, EntityRow.mind_id == mind_id)
        relations = read(RelationRow, RelationRow.mind_id == mind_id)
        mentions = read(EntityMentionRow, EntityMentionRow.frame_id.in_([f.id for f in frames]))
        sessions = read(SessionRow, SessionRow.mind_id == mind_id)
        awareness = read(AwarenessRow, AwarenessRow.mind_id == mind_id)
        kv = read(KVRow, KVRow.mind_id == mind_id)
        frame_rank = {f.id: n for n, f in enumerate(frames)}
        entity_rank = {e.id: n for n, e in enumerate(entities)}

        def fields(row: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
            return {c.key: getattr(row, c.key) for c in sa.inspect(type(row)).column_attrs
                    if c.key not in ("id", "mind_id", *drop)}

        out: dict[str, list[dict[str, Any]]] = {
            "session": [fields(r) for r in sessions],
            "awareness": [fields(r) for r in awareness],
            "kv": [fields(r) for r in kv],
            "entity": [fields(r) for r in entities],
        }
        out["frame"] = []
        for f in frames:
            rec = fields(f)
            rec["base_frame_id"] = frame_rank.get(f.base_frame_id)  # type: ignore[arg-type]
            if f.frame_type == "B":
                doc = json.loads(f.content)
                doc["references"] = [frame_rank[r] for r in doc["references"]]
                rec["content"] = doc
                rec.pop("content_hash")  # a hash of the content with the store's own ids
            out["frame"].append(rec)
        out["relation"] = [fields(r) | {"source_id": entity_rank[r.source_id],
                                        "target_id": entity_rank[r.target_id]}
                           for r in relations]
        out["mention"] = sorted((frame_rank[m.frame_id], entity_rank[m.entity_id])
                                for m in mentions)  # type: ignore[misc]
    return out


def _same(copy: dict[str, list[Any]], source: dict[str, list[Any]]) -> None:
    assert copy.keys() == source.keys()
    for table in source:
        assert len(copy[table]) == len(source[table]), table
        for n, (got, want) in enumerate(zip(copy[table], source[table], strict=True)):
            assert got == want, f"{table} row {n}"


def test_round_trip_keeps_every_row_field_by_field(
        store: ws.Store, other_store: ws.Store) -> None:
    _build(store)
    source = _rows(store, "fidelity")
    assert any(e["valid_to"] is not None for e in source["entity"])
    assert any(r["valid_to"] is not None for r in source["relation"])
    dated = [e for e in source["entity"] if e["name"] in DATED]
    assert len(dated) == len(DATED)
    assert all(e["valid_from"] < e["recorded_at"] - timedelta(days=1) for e in dated)
    assert any(f["access_count"] > 0 for f in source["frame"])

    there = io.StringIO()
    store.export_mind("fidelity", there)
    imported = other_store.import_mind(io.StringIO(there.getvalue()))
    assert imported.problems == []
    _same(_rows(other_store, "fidelity"), source)

    back = io.StringIO()
    other_store.export_mind("fidelity", back)
    again = store.import_mind(io.StringIO(back.getvalue()), into="returned")
    assert again.problems == []
    _same(_rows(store, "returned"), source)

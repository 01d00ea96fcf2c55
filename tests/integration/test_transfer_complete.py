"""A ``waggle-mind`` export carries every row of a mind: a mind with a row of every kind (the
knowledge graph's recorded-time history, its aliases and exclusive relation types, frame
metadata, harvest tombstones, pending extractions, conversations and the agent) exported and
imported into a store of the other dialect holds the same rows, table by table, field by field.

The table list is read from the models, so a table added later is compared here or named in
:data:`NOT_CARRIED` with the reason it stays behind.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.models import Base
from waggle_store.repositories.pending import PendingExtractionRepository
from waggle_store.repositories.usage import BUDGET_SETTING

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

#: Tables whose rows an export does not carry, and why.
NOT_CARRIED = {
    "waggle_store_meta": "facts about the store, not a mind",
    "waggle_embedding_models": "store-wide; a vector line names its model (include_vectors)",
    "waggle_mind_embedding_models": "the importing store's embedder decides the mind's model",
    "waggle_frame_embeddings": "the vector manifest: imported frames are pending until "
                               "reconcile (vectors: include_vectors, tested on their own)",
    "waggle_frame_embedding_staging": "a model switch in progress in the exporting store",
    "waggle_embedding_usage": "a per-user quota counter of the store",
    "waggle_usage_log": "the store operator's accounting of model calls (store.usage)",
}
#: Columns that differ between two stores by design: ids and the mind's creation time.
_DROP = {"id", "mind_id"}
#: Mind settings that belong to the store operator (budgets of store.usage), like its log.
_OPERATOR_SETTINGS = {BUDGET_SETTING}



def fill_every_kind(store: ws.Store, name: str, tmp_path: Path) -> ws.Mind:
    """A mind with at least one row in every table an export carries."""
    mind = store.mind(name)
    mind.identity.set(name="Hive", role="keeper")
    mind.awareness.add("task", "ship Apollo", priority=2, metadata={"b": 1})
    mind.kv.set("report", {"z": [1, 2]})
    result = mind.cognify_batch([
        ws.MemoryInput(f"Priya Shah and Marcus Lee plan Project Apollo, step {i}.",
                       created_at=START + timedelta(hours=i)) for i in range(3)])
    assert not result.failures
    notes = mind.sessions.ensure("notes", project_id="apollo", summary="side notes")
    base = mind.frames.create_i(notes.gop_id, "Apollo pricing keyframe",
                                metadata={"topic": "pricing", "rank": 3, "ok": True})
    delta = mind.frames.create_p(notes.gop_id, "Pricing moved to per-seat", base.id,
                                 metadata={"topic": "pricing"})
    mind.frames.create_b(notes.gop_id, "pricing recap", base.id, [delta.id, base.id])
    kg = mind.knowledge
    ann = kg.create_entity("person", "Ann", {"team": "core"},
                           valid_from=START - timedelta(days=40))
    kg.update_entity(ann.id, properties={"team": "platform"})  # a version in recorded time
    kg.add_alias("Annie", "Ann")
    assert kg.create_entity("person", "Annie").id == ann.id  # resolved through the alias
    acme = kg.create_entity("company", "Acme")
    globex = kg.create_entity("company", "Globex")
    kg.create_relation(ann.id, acme.id, "works_at", confidence=0.6)
    kg.create_relation(ann.id, globex.id, "works_at")  # ends the first (an exclusive type)
    kg.set_exclusive("mentors", True)
    kg.set_exclusive("located_in", False)
    kg.set_validation_schema(ws.ValidationSchema({"person": []}, None))
    store.usage.set_budget(mind, 12.5)
    # A harvested memory the user forgot leaves a tombstone; a source remembers its kind.
    source = tmp_path / "notes.md"
    source.write_text("# notes\n", encoding="utf-8")
    mind.harvest.add_source("markdown", source, name="notes")
    harvested = mind.frames.create_i(mind.sessions.ensure("harvest:notes").gop_id,
                                     "a harvested line the user forgot")
    mind.frames.delete(harvested.id)
    # A memory whose extraction failed, waiting for reconcile.
    with store.write() as session:
        PendingExtractionRepository(session, mind.id).mark(base.id, "extractor offline")
    store.agents.save(name, {"model": "m"}, state={"turns": 3})
    conv = mind.conversations
    talk = conv.open("telegram", label="first")
    conv.append(talk.id, [{"role": "user", "content": "hello"},
                          {"role": "assistant", "content": "hi", "metadata": {"ms": 2}}])
    return mind


def _tables() -> dict[str, sa.Table]:
    """The models' tables by bare name (the metadata keys them by schema)."""
    return {table.name: table for table in Base.metadata.tables.values()}


def _selections(mind_id: int, name: str) -> dict[str, sa.Select[Any]]:
    """Each carried table's rows of the mind."""
    t = _tables()
    frames = sa.select(t["waggle_memory_frames"].c.id).where(
        t["waggle_memory_frames"].c.mind_id == mind_id)
    conversations = sa.select(t["waggle_conversations"].c.id).where(
        t["waggle_conversations"].c.mind_id == mind_id)
    out: dict[str, sa.Select[Any]] = {}
    for table_name, table in t.items():
        if table_name in NOT_CARRIED:
            continue
        if table_name == "waggle_minds":
            out[table_name] = sa.select(table).where(table.c.id == mind_id)
        elif "mind_id" in table.c:
            out[table_name] = sa.select(table).where(table.c.mind_id == mind_id)
        elif table_name == "waggle_entity_mentions":
            out[table_name] = sa.select(table).where(table.c.frame_id.in_(frames))
        elif table_name == "waggle_conversation_messages":
            out[table_name] = sa.select(table).where(table.c.conversation_id.in_(conversations))
        elif table_name == "waggle_agents":
            out[table_name] = sa.select(table).where(table.c.name == name)
        else:
            raise AssertionError(f"{table_name}: neither compared nor in NOT_CARRIED")
    return out


def mind_rows(store: ws.Store, name: str) -> dict[str, list[dict[str, Any]]]:
    """Every carried row of the mind; ids replaced by their rank among the mind's rows of the
    referenced table (the one documented difference between two stores)."""
    tables = _tables()
    with store.read() as session:
        raw = {table: [dict(r) for r in session.execute(stmt).mappings()]
               for table, stmt in _selections(store.mind(name).id, name).items()}
    rank = {table: {row["id"]: n for n, row in enumerate(sorted(rows, key=lambda r: r["id"]))}
            for table, rows in raw.items() if rows and "id" in rows[0]}
    refs = {"waggle_knowledge_relation_versions": {"source_id": "waggle_knowledge_entities",
                                                   "target_id": "waggle_knowledge_entities"}}
    out: dict[str, list[dict[str, Any]]] = {}
    for table, rows in raw.items():
        columns = tables[table].c
        points = {c.name: fk.column.table.name for c in columns for fk in c.foreign_keys
                  if fk.column.name == "id" and c.name != "mind_id"}
        points.update(refs.get(table, {}))
        normal = []
        for row in rows:
            rec = {k: v for k, v in row.items() if k not in _DROP}
            for column, target in points.items():
                if rec.get(column) is not None:
                    rec[column] = rank[target][rec[column]]
            if table == "waggle_memory_frames" and rec["frame_type"] == "B":
                doc = json.loads(rec.pop("content"))
                doc["references"] = [rank[table][r] for r in doc["references"]]
                rec["content"], rec["content_hash"] = doc, None
            if table == "waggle_minds":
                rec = {"kind": rec["kind"], "settings": {
                    k: v for k, v in (rec["settings"] or {}).items()
                    if k not in _OPERATOR_SETTINGS}}
            normal.append((rank[table][row["id"]] if "id" in row else 0, rec))
        out[table] = [rec for _, rec in sorted(
            normal, key=lambda p: (p[0], json.dumps(p[1], sort_keys=True, default=str)))]
    return out


def test_a_mind_of_every_kind_of_row_round_trips_table_by_table(
        store: ws.Store, other_store: ws.Store, tmp_path: Path) -> None:
    fill_every_kind(store, "every", tmp_path)
    source = mind_rows(store, "every")
    empty = sorted(table for table, rows in source.items() if not rows)
    assert empty == [], f"the source mind has no rows in {empty}"

    exported = io.StringIO()
    written = store.export_mind("every", exported)
    assert (written.aliases, written.versions) == (1, 2)  # Ann's update, the ended works_at
    report = other_store.import_mind(io.StringIO(exported.getvalue()))
    assert report.problems == []
    assert (report.aliases_imported, report.versions_imported) == (1, 2)
    copy = mind_rows(other_store, "every")
    differ = [table for table in source if copy[table] != source[table]]
    assert differ == [], differ

    # And the copy exports the same records: export -> import -> export is stable. (Its
    # frames wait for reconcile to embed them, so it names no embedding model yet.)
    again = io.StringIO()
    other_store.export_mind("every", again)
    assert _kinds(again.getvalue()) == _kinds(exported.getvalue()) - Counter(embedding_model=1)


def _kinds(text: str) -> Counter[str]:
    return Counter(json.loads(line)["type"] for line in text.splitlines()[1:])


def test_frame_metadata_filters_find_imported_frames(
        store: ws.Store, other_store: ws.Store, tmp_path: Path) -> None:
    """The metadata a search filters on (an index beside the frames on SQLite) is there for the
    imported frames."""
    fill_every_kind(store, "every", tmp_path)
    exported = io.StringIO()
    store.export_mind("every", exported)
    other_store.import_mind(io.StringIO(exported.getvalue()))
    for side in (store, other_store):
        found = side.mind("every").search("pricing", lanes=("keyword",),
                                          where={"metadata": {"topic": "pricing"}})
        assert sorted(r.frame.content for r in found) == [
            "Apollo pricing keyframe", "Pricing moved to per-seat"]


def test_every_record_kind_matches_the_shipped_json_schema(
        store: ws.Store, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from waggle_store.pipeline.transfer.format import LINE_TYPES, OPTIONAL, json_schema

    schema = json_schema()
    for kind, fields in OPTIONAL.items():  # the optional fields are described too
        assert set(fields) <= set(schema["$defs"][kind]["properties"]), kind
    fill_every_kind(store, "every", tmp_path)
    exported = io.StringIO()
    store.export_mind("every", exported, include_vectors=True)
    validator = jsonschema.Draft202012Validator(schema)
    kinds = set()
    for line in exported.getvalue().splitlines():
        record = json.loads(line)
        validator.validate(record)
        kinds.add(record["type"])
    assert kinds == {"header", *LINE_TYPES}

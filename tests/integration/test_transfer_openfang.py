"""OpenFang memory JSON export: import, export, and a round trip (issue 14)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import waggle_store as ws

FIXTURE: dict[str, Any] = {
    "agent_id": "2f0c7c1e-5a55-4f43-9e77-0d5c4e0b9a11",
    "fragments": [
        {
            "id": "6d1a5e2c-0000-4000-8000-000000000001",
            "content": "The user prefers concise explanations without jargon.",
            "source": "UserPreference",
            "importance": 1.0,
            "access_count": 3,
            "created_at": "2025-03-01T10:00:00.123456789+00:00",
            "last_accessed_at": "2025-03-05T08:00:00+00:00",
        },
        {
            "id": "6d1a5e2c-0000-4000-8000-000000000002",
            "content": "Company XYZ launched a new product on 2025-03-01.",
            "source": "WebSearch",
            "importance": 0.8,
            "access_count": 1,
            "created_at": "2025-03-02T11:00:00Z",
            "last_accessed_at": "2025-03-02T11:00:00Z",
        },
        {
            "id": "6d1a5e2c-0000-4000-8000-000000000003",  # the crate's own columns and quirks
            "content": "User asked: where is the launch?\nI responded: in Zürich.",
            "source": '"conversation"',
            "confidence": 0.5,
            "scope": "episodic",
            "access_count": 0,
            "created_at": "2025-03-03T09:15:00.5+00:00",
            "accessed_at": "2025-03-03T09:15:00.5+00:00",
            "metadata": {},
        },
        {
            "id": "6d1a5e2c-0000-4000-8000-000000000004",
            "content": "Company XYZ launched a new product on 2025-03-01.",
            "source": "WebSearch",
            "importance": 0.8,
            "access_count": 2,  # OpenFang has no dedup
            "created_at": "2025-03-04T11:00:00Z",
            "last_accessed_at": "2025-03-04T11:00:00Z",
        },
        {
            "id": "6d1a5e2c-0000-4000-8000-000000000005",
            "content": "Forgotten memory",
            "source": "SystemNote",
            "deleted": True,
            "created_at": "2025-03-04T12:00:00Z",
            "last_accessed_at": "2025-03-04T12:00:00Z",
        },
        {
            "id": "6d1a5e2c-0000-4000-8000-000000000006",
            "content": "Temporary scratch note",
            "source": "AgentResponse",
            "importance": 0.2,
            "access_count": 0,
            "embedding": [0.1, 0.2, 0.3],
            "created_at": "2025-03-05T12:00:00Z",
            "last_accessed_at": "2025-03-05T12:00:00Z",
        },
    ],
    "entities": [
        {
            "id": "e-openai",
            "entity_type": "Company",
            "name": "OpenAI",
            "attributes": {"founded": "2015", "industry": "AI Research"},
            "created_at": "2025-03-01T10:00:00Z",
        },
        {
            "id": "e-sam",
            "entity_type": '"person"',
            "name": "Sam Altman",
            "properties": '{"role": "CEO"}',
            "created_at": "2025-03-01T10:00:01Z",
        },
        {
            "id": "e-gpt",
            "entity_type": {"custom": "product"},
            "name": "GPT",
            "attributes": {},
            "created_at": "2025-03-01T10:00:02Z",
        },
    ],
    "relations": [
        {
            "id": "r1",
            "from_entity_id": "e-sam",
            "relation_type": "works_for",
            "to_entity_id": "e-openai",
            "properties": {"since": "2019"},
            "created_at": "2025-03-01T10:00:03Z",
        },
        {
            "id": "r2",
            "source_entity": "e-openai",
            "relation_type": '"produces"',
            "target_entity": "e-gpt",
            "confidence": 0.9,
            "created_at": "2025-03-01T10:00:04Z",
        },
        {
            "id": "r3",
            "from_entity_id": "e-sam",
            "relation_type": "knows",
            "to_entity_id": "e-missing",
            "created_at": "2025-03-01T10:00:05Z",
        },
    ],
    "kv": {"last_report_date": "2025-03-06", "reports_count": 12, "config": {"verbose": False}},
}


def _frames(mind: ws.Mind) -> list[tuple[Any, ...]]:
    return sorted(
        (f.content, f.importance, f.source, f.access_count, f.created_at, f.last_accessed)
        for f in mind.frames.recent(1000)
    )


def _graph(mind: ws.Mind) -> tuple[list[Any], list[Any]]:
    entities = sorted(
        (e.entity_type, e.name, json.dumps(e.properties, sort_keys=True), e.valid_from)
        for t in mind.knowledge.entity_type_counts()
        for e in mind.knowledge.entities_by_type(t)
    )
    relations = []
    for t in mind.knowledge.entity_type_counts():
        for e in mind.knowledge.entities_by_type(t):
            for r in mind.knowledge.relations_from(e.id):
                target = mind.knowledge.get_entity(r.target_id)
                assert target is not None
                relations.append(
                    (
                        e.name,
                        r.relation_type,
                        target.name,
                        r.confidence,
                        json.dumps(r.properties, sort_keys=True),
                        r.valid_from,
                    )
                )
    return entities, sorted(relations)


def test_openfang_export_imports_and_round_trips(store: ws.Store, tmp_path: Path) -> None:
    path = tmp_path / "agent_memory.json"
    path.write_text(json.dumps(FIXTURE))
    report = store.import_openfang(str(path), into="fang")
    assert (
        report.frames_imported,
        report.entities_imported,
        report.relations_imported,
        report.kv_imported,
        report.sessions_imported,
    ) == (4, 3, 2, 3, 1)
    assert report.fragments_imported == 4
    kinds = {p.split(" (first:")[0] for p in report.problems}
    assert {
        "1 x the same fragment stored twice",
        "1 x deleted fragment",
        "1 x relation to a missing entity",
        "1 x embedding not imported",
    } <= kinds, report.problems

    mind = store.mind("fang")
    frames = {f.content: f for f in mind.frames.recent(100)}
    pref = frames["The user prefers concise explanations without jargon."]
    assert (pref.importance, pref.source, pref.access_count) == ("critical", "user_stated", 3)
    assert pref.created_at.isoformat() == "2025-03-01T10:00:00.123456+00:00"
    xyz = frames["Company XYZ launched a new product on 2025-03-01."]
    assert (xyz.importance, xyz.source, xyz.access_count) == ("important", "tool_verified", 3)
    chat = frames["User asked: where is the launch?\nI responded: in Zürich."]
    assert (chat.importance, chat.source) == ("normal", "user_stated")
    assert frames["Temporary scratch note"].importance == "temporary"
    assert mind.kv.get("reports_count") == 12
    assert mind.kv.get("config") == {"verbose": False}
    sam = mind.knowledge.search_entities("Sam Altman")[0]
    assert (sam.entity_type, sam.properties) == ("person", {"role": "CEO"})
    assert [r.relation_type for r in mind.knowledge.relations_from(sam.id)] == ["works_for"]
    assert mind.knowledge.entity_type_counts() == {"Company": 1, "person": 1, "product": 1}

    # Round trip: the mind exported in OpenFang's shape and imported again is the same memory.
    out = io.StringIO()
    calls: list[tuple[int, int]] = []
    exported = store.export_openfang("fang", out, progress=lambda d, t: calls.append((d, t)))
    assert (exported.frames, exported.entities, exported.relations) == (4, 3, 2)
    assert calls  # the store passes progress through
    assert calls[-1][0] == calls[-1][1]
    doc = json.loads(out.getvalue())
    assert set(doc) >= {"fragments", "entities", "relations", "kv"}
    assert {f["source"] for f in doc["fragments"]} == {"UserMessage", "ToolResult", "AgentResponse"}
    again = store.import_openfang(io.StringIO(out.getvalue()), into="fang2")
    assert again.problems == []
    assert again.frames_imported == 4
    copy = store.mind("fang2")
    assert _frames(copy) == _frames(mind)
    assert _graph(copy) == _graph(mind)
    assert copy.kv.items() == mind.kv.items()
    second = io.StringIO()
    store.export_openfang("fang2", second)
    ids = (
        "id",
        "agent_id",
        "from_entity_id",
        "to_entity_id",
        "metadata",
    )  # metadata: the session name

    def strip(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in x.items() if k not in ids} for x in records]

    doc2 = json.loads(second.getvalue())
    for part in ("fragments", "entities", "relations"):
        assert strip(doc2[part]) == strip(doc[part]), part
    assert doc2["kv"] == doc["kv"]


def test_not_an_openfang_export(store: ws.Store, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    with pytest.raises(ws.InvalidInputError, match="not JSON"):
        store.import_openfang(str(bad), into="x")
    bad.write_text('{"hello": 1}')
    with pytest.raises(ws.InvalidInputError, match="not an OpenFang"):
        store.import_openfang(str(bad), into="x")
    assert store.list_minds() == []

"""Format version 3's records on import: a malformed one imports nothing and names its line;
merging a file into a mind that has its own aliases, history and choices keeps the mind's; a
file of an older version still imports."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import waggle_store as ws
from tests.integration.test_transfer_complete import fill_every_kind, mind_rows

T0 = "2026-01-01T00:00:00+00:00"
T1 = "2026-02-01T00:00:00+00:00"


def _header(version: int = 3) -> dict[str, Any]:
    return {"type": "header", "format": "waggle-mind", "version": version, "mind": "hand",
            "exported_at": T0}


def _entity(eid: int, name: str, version: int = 2) -> dict[str, Any]:
    return {"type": "entity", "id": eid, "entity_type": "person", "name": name,
            "properties": {}, "valid_from": T0, "valid_to": None, "recorded_at": T1,
            "version": version}


def _entity_version(eid: int, version: int = 1) -> dict[str, Any]:
    return {"type": "entity_version", "entity_id": eid, "version": version,
            "entity_type": "person", "name": "Old name", "properties": {"a": 1},
            "valid_from": T0, "valid_to": None, "recorded_from": T0, "recorded_to": T1}


def _relation_version(rid: int, source: int, target: int) -> dict[str, Any]:
    return {"type": "relation_version", "relation_id": rid, "version": 1, "source_id": source,
            "target_id": target, "relation_type": "knows", "confidence": 0.5,
            "properties": {}, "valid_from": T0, "valid_to": None, "recorded_from": T0,
            "recorded_to": T1}


def _relation(rid: int, source: int, target: int) -> dict[str, Any]:
    return {"type": "relation", "id": rid, "source_id": source, "target_id": target,
            "relation_type": "knows", "confidence": 1.0, "properties": {}, "valid_from": T0,
            "valid_to": None, "recorded_at": T1, "version": 2}


def _alias(alias: str, canonical: str) -> dict[str, Any]:
    return {"type": "alias", "alias": alias, "canonical_name": canonical,
            "canonical_key": canonical.casefold(), "created_at": T0}


def _text(*records: dict[str, Any], version: int = 3) -> str:
    return "\n".join(json.dumps(r) for r in (_header(version), *records)) + "\n"


BAD = {
    "alias after an entity": ([_entity(1, "Ann"), _alias("Annie", "Ann")], 3, "before every"),
    "chained aliases": ([_alias("Bo", "Bob"), _alias("Bob", "Robert")], 3, "chains"),
    "alias of itself": ([_alias("Ann", "Ann")], 2, "resolves"),
    "version of no entity": ([_entity(1, "Ann"), _entity_version(7)], 3, "no earlier line"),
    "version not earlier": ([_entity(1, "Ann"), _entity_version(1, version=2)], 3,
                            "not earlier"),
    "version twice": ([_entity(1, "Ann", version=3), _entity_version(1),
                       _entity_version(1)], 4, "defined twice"),
    "relation version end": ([_entity(1, "Ann"), _entity(2, "Bob"), _relation(5, 1, 2),
                              _relation_version(5, 1, 9)], 5, "target_id 9"),
    "pending of no frame": ([{"type": "extraction_pending", "frame_id": 3, "error": "x",
                              "attempts": 1, "updated_at": T0}], 2, "frame 3"),
    "exclusive not a bool": ([{"type": "exclusive_relations",
                               "relation_types": {"works_at": "yes"}}], 2, "true or false"),
    "two exclusive records": ([{"type": "exclusive_relations", "relation_types": {}},
                               {"type": "exclusive_relations", "relation_types": {}}], 3,
                              "second"),
    "tombstone without hash": ([{"type": "harvest_tombstone", "source": "s",
                                 "forgotten_at": T0}], 2, "content_hash"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_record_imports_nothing_and_names_its_line(store: ws.Store, case: str) -> None:
    records, line, words = BAD[case]
    with pytest.raises(ws.InvalidInputError, match=rf"line {line}\b.*{words}"):
        store.import_mind(io.StringIO(_text(*records)))
    assert store.list_minds() == []


def test_versions_and_aliases_of_a_hand_written_file_arrive(store: ws.Store) -> None:
    report = store.import_mind(io.StringIO(_text(
        _alias("Annie", "Ann"), _entity(1, "Ann"), _entity(2, "Bob"), _relation(3, 1, 2),
        _entity_version(1), _relation_version(3, 1, 2))))
    assert report.problems == []
    kg = store.mind("hand").knowledge
    ann = kg.resolve("annie")
    assert ann is not None
    assert ann.name == "Ann"
    history = kg.history(ann.id)
    assert [(v.version, v.name) for v in history] == [(1, "Old name"), (2, "Ann")]


def test_older_versions_still_import(store: ws.Store) -> None:
    """A version 2 file has none of the new records nor the new fields: entities and relations
    arrive in their first version, harvest sources with no kind."""
    entity = _entity(1, "Ann")
    del entity["version"]
    source = {"type": "harvest_source", "source": "s", "display_name": "S",
              "source_path": None, "last_synced_at": None, "items_imported": 0,
              "frames_created": 0, "auto_sync": False, "sync_interval_hours": 24,
              "last_content_hash": None, "created_at": T0}
    store.import_mind(io.StringIO(_text(entity, source, version=2)))
    rows = mind_rows(store, "hand")
    assert [e["version"] for e in rows["waggle_knowledge_entities"]] == [1]
    assert [h["kind"] for h in rows["waggle_harvest_sources"]] == [None]


def test_merging_keeps_the_minds_own_and_adds_nothing_twice(
        store: ws.Store, tmp_path: Path) -> None:
    fill_every_kind(store, "every", tmp_path)
    exported = io.StringIO()
    store.export_mind("every", exported)
    text = exported.getvalue()
    before = mind_rows(store, "every")
    again = store.import_mind(io.StringIO(text), merge=True)  # into the source itself
    assert mind_rows(store, "every") == before
    assert any(p.startswith("1 x history of an entity the mind already has")
               for p in again.problems), again.problems
    assert any(p.startswith("1 x history of a relation the mind already has")
               for p in again.problems), again.problems

    # A mind with its own alias and exclusive choice keeps both.
    other = store.mind("own")
    other.knowledge.add_alias("Annie", "Anne Other")
    other.knowledge.set_exclusive("mentors", False)
    merged = store.import_mind(io.StringIO(text), into="own", merge=True)
    assert other.knowledge.resolve("Annie") is None  # the mind's alias, to no entity it has
    rows = mind_rows(store, "own")
    assert [(a["alias"], a["canonical_name"]) for a in rows["waggle_knowledge_aliases"]] == [
        ("Annie", "Anne Other")]
    assert rows["waggle_minds"][0]["settings"]["knowledge.exclusive_relations"] == {
        "mentors": False, "located_in": False}
    assert any("alias already set" in p for p in merged.problems), merged.problems
    assert any("exclusive relation type" in p for p in merged.problems), merged.problems

"""The set-based chunk write of cognify_batch (pipeline/ingest.py) and its item-by-item fallback.

The fallback only runs when the chunk's set-based write fails on an item of its own, which the
rule-based extractor and checked inputs make rare; here the set-based write is made to fail
after it wrote everything, so its savepoint must take all of it back before the fallback
writes the chunk again: each memory must end up stored exactly once, as the set-based write
would have stored it. The comparison is also the equivalence of the two paths: frame types,
``t``, dedup within the chunk (a repeat touches the frame), manifests and graph rows.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.pipeline import cognify as cognify_module

_ITEMS = ["Alice Jones works at Acme Corp in Paris.", "Bob Smith leads Project Apollo.",
          "Alice Jones works at Acme Corp in Paris.", "Carol King met Bob Smith in Berlin."]


def _rows(store: ws.Store, mind: ws.Mind) -> list[tuple[Any, ...]]:
    with store.read() as s:
        return [tuple(r) for r in s.execute(sa.text(
            "SELECT f.frame_type, f.t, f.content, f.access_count, e.status "
            "FROM waggle_memory_frames f JOIN waggle_frame_embeddings e ON e.frame_id = f.id "
            "JOIN waggle_minds m ON m.id = f.mind_id WHERE m.name = :name ORDER BY f.id"),
            {"name": mind.name})]


def _graph(store: ws.Store, mind: ws.Mind) -> list[int]:
    where = "JOIN waggle_minds m ON m.id = x.mind_id WHERE m.name = :name"
    with store.read() as s:
        return [int(s.execute(sa.text(sql), {"name": mind.name}).scalar_one()) for sql in (
            f"SELECT count(*) FROM waggle_knowledge_entities x {where}",
            f"SELECT count(*) FROM waggle_knowledge_relations x {where}",
            ("SELECT count(*) FROM waggle_entity_mentions n JOIN waggle_knowledge_entities x "
             f"ON x.id = n.entity_id {where}"))]


def _shape(ids: list[int | None]) -> list[int]:
    """Frame ids as the position of their first item: equal for two minds of one store."""
    return [ids.index(i) for i in ids]


def test_a_failed_chunk_write_leaves_nothing_and_the_fallback_stores_each_item_once(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = store.mind("reference")
    expected = reference.cognify_batch(_ITEMS)
    real = cognify_module.write_chunk

    def fails_after_writing(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        raise ws.InvalidInputError("an item of this chunk failed on its own")

    monkeypatch.setattr(cognify_module, "write_chunk", fails_after_writing)
    mind = store.mind("fallback")
    result = mind.cognify_batch(_ITEMS)
    assert result.failures == []
    assert _shape(result.frame_ids) == _shape(expected.frame_ids) == [0, 1, 0, 3]
    assert _rows(store, mind) == _rows(store, reference)
    assert _graph(store, mind) == _graph(store, reference)

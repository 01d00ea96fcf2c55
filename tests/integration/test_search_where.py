"""Memory metadata and filtered search: metadata stored by every write path and carried by
export/import; ``search(where=...)`` applied inside both lanes (a rare match still fills the
page); ``query_vector=`` used instead of embedding the query. Both dialects."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from sqlalchemy import update

import waggle_store as ws
from tests.conftest import only_postgres, only_sqlite
from waggle_store.dialects import postgres as postgres_adapter
from waggle_store.dialects import postgres_knn
from waggle_store.models import FrameRow

META = {"project": "apollo", "n": 3, "ok": True, "tags": ["a", "b"], "nested": {"k": [1, 2.5]}}


def test_metadata_round_trips_through_every_write_path(store: ws.Store) -> None:
    mind = store.mind("test")
    gop = mind.sessions.ensure("s").gop_id
    first = mind.frames.create_i(gop, "the launch window opens at dawn", metadata=META)
    delta = mind.frames.create_p(gop, "the window moved to noon", first.id,
                                 metadata={"project": "apollo", "rev": 2})
    cognified = mind.cognify("Houston confirmed the burn", metadata={"channel": "radio"})
    batch = mind.cognify_batch([ws.MemoryInput("plain memory"),
                                ws.MemoryInput("tagged memory", metadata={"k": "v"})])
    plain = mind.frames.create_i(gop, "a memory without metadata")
    assert first.metadata == META
    assert mind.frames.get(first.id).metadata == META
    assert mind.frames.get(delta.id).metadata == {"project": "apollo", "rev": 2}
    assert mind.frames.get(cognified.frame_id).metadata == {"channel": "radio"}
    b0, b1 = batch.frame_ids
    assert b0 is not None
    assert b1 is not None
    assert mind.frames.get(b0).metadata == {}
    assert mind.frames.get(b1).metadata == {"k": "v"}
    assert plain.metadata == {}
    assert mind.frames.get(plain.id).metadata == {}
    # Search results carry it too.
    hit = next(r for r in mind.search("launch window dawn", limit=5)
               if r.frame.id == first.id)
    assert hit.frame.metadata == META

    buffer = io.StringIO()
    store.export_mind(mind.name, buffer)
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    frames = {f["content"]: f for f in lines if f["type"] == "frame"}
    assert frames["the launch window opens at dawn"]["metadata"] == META
    assert frames["a memory without metadata"]["metadata"] == {}
    store.import_mind(io.StringIO(buffer.getvalue()), into="copy")
    copy = store.mind("copy")
    by_content = {f.content: f for f in copy.frames.recent(50)}
    assert by_content["the launch window opens at dawn"].metadata == META
    assert by_content["Houston confirmed the burn"].metadata == {"channel": "radio"}
    assert by_content["plain memory"].metadata == {}
    # The imported frames' metadata is searchable (SQLite: its side table filled on import).
    found = copy.search("Houston burn", limit=5, where={"metadata": {"channel": "radio"}})
    assert [r.frame.content for r in found] == ["Houston confirmed the burn"]

    # A file written before frames had metadata still imports (each frame's is {}).
    old = [json.dumps({k: v for k, v in line.items() if not (
        line["type"] == "frame" and k == "metadata")}) for line in lines]
    store.import_mind(io.StringIO("\n".join(old) + "\n"), into="old")
    assert all(f.metadata == {} for f in store.mind("old").frames.recent(50))


@pytest.mark.parametrize("bad", [
    "not a dict", {"k": float("nan")}, {"": 1}, {1: "x"}, {"k": object()},
    {"k": "x" * (64 * 1024)}, {"k": "nul\x00"},
    {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}},
])
def test_bad_metadata_is_refused_and_nothing_is_stored(mind: ws.Mind, bad: object) -> None:
    gop = mind.sessions.ensure("s").gop_id
    with pytest.raises(ws.InvalidInputError):
        mind.frames.create_i(gop, "refused memory", metadata=bad)  # type: ignore[arg-type]
    with pytest.raises(ws.InvalidInputError):
        mind.cognify("refused memory", metadata=bad)  # type: ignore[arg-type]
    assert mind.frames.recent(10) == []


def _ids(results: list[ws.SearchResult]) -> list[int]:
    return [r.frame.id for r in results]


@pytest.fixture
def filtered_mind(store: ws.Store) -> tuple[ws.Mind, dict[str, int]]:
    """Six frames about one topic, differing in source, importance, salience and metadata."""
    mind = store.mind("where")
    specs = [
        ("alpha", "user_stated", "normal", 0.9, {"team": "red", "n": 1, "live": True}),
        ("bravo", "tool_verified", "important", 0.5, {"team": "red", "n": 2}),
        ("charlie", "agent_inferred", "normal", 0.2, {"team": "blue", "n": 1.0}),
        ("delta", "import", "temporary", None, {"team": "blue", "live": False}),
        ("echo", "system", "critical", 0.7, {"team": "1", "n": "1"}),
        ("foxtrot", "user_stated", "normal", 0.3, {}),
    ]
    batch = mind.cognify_batch([
        ws.MemoryInput(f"the {name} rover crossed the crater rim", importance=imp, source=src,
                       metadata=meta)
        for name, src, imp, _, meta in specs])
    ids = {name: fid for (name, *_), fid in zip(specs, batch.frame_ids, strict=True)
           if fid is not None}
    with store.context.write() as session:
        for (name, _, _, sal, _) in specs:
            session.execute(update(FrameRow).where(FrameRow.id == ids[name]).values(salience=sal))
    return mind, ids


@pytest.mark.parametrize("lanes", [{"keyword"}, {"vector"}, None])
def test_each_where_key_filters_inside_each_lane(
        filtered_mind: tuple[ws.Mind, dict[str, int]], lanes: set[str] | None) -> None:
    mind, ids = filtered_mind
    cases: list[tuple[object, set[str]]] = [
        ({"source": "user_stated"}, {"alpha", "foxtrot"}),
        ({"source": ["import", "system"]}, {"delta", "echo"}),
        ({"importance": "normal"}, {"alpha", "charlie", "foxtrot"}),
        ({"importance": ["critical", "temporary"]}, {"delta", "echo"}),
        ({"min_salience": 0.5}, {"alpha", "bravo", "echo"}),
        ({"metadata": {"team": "red"}}, {"alpha", "bravo"}),
        ({"metadata": {"n": 1}}, {"alpha", "charlie"}),  # 1 == 1.0; "1" is a string
        ({"metadata": {"team": "1"}}, {"echo"}),
        ({"metadata": {"live": True}}, {"alpha"}),
        ({"metadata": {"live": False}}, {"delta"}),
        ({"metadata": {"team": "red", "n": 2}}, {"bravo"}),
        ({"metadata": {"team": "green"}}, set()),
        (ws.Where(source="user_stated", min_salience=0.5), {"alpha"}),
        (ws.Where(importance="normal", metadata={"team": "blue"}), {"charlie"}),
    ]
    names = {v: k for k, v in ids.items()}
    for where, expected in cases:
        results = mind.search("rover crater", limit=10, where=where, lanes=lanes)
        assert {names[i] for i in _ids(results)} == expected, where


def test_unknown_or_bad_where_is_invalid_input(
        filtered_mind: tuple[ws.Mind, dict[str, int]]) -> None:
    mind, _ = filtered_mind
    for bad in [{"sourse": "user_stated"}, {"source": "nobody"}, {"importance": []},
                {"min_salience": "high"}, {"metadata": {"k": [1]}}, {"metadata": {}},
                "source=user_stated"]:
        with pytest.raises(ws.InvalidInputError):
            mind.search("rover", where=bad)


@pytest.fixture
def rare_mind(store: ws.Store) -> ws.Mind:
    """2,000 frames about one topic; every 40th (50 of them) tagged ``{"rare": "yes"}`` and
    told by a tool."""
    mind = store.mind("rare")
    batch = mind.cognify_batch([
        ws.MemoryInput(f"status report {i}: the pump station runs at pressure {i % 97}",
                       source="tool_verified" if i % 40 == 7 else "user_stated",
                       metadata={"rare": "yes", "i": i} if i % 40 == 7 else {"i": i})
        for i in range(2000)])
    assert batch.failures == []
    return mind


@pytest.mark.parametrize("lanes", [{"keyword"}, {"vector"}])
def test_a_rare_filter_still_returns_a_full_page(rare_mind: ws.Mind, lanes: set[str]) -> None:
    for where in ({"metadata": {"rare": "yes"}}, {"source": "tool_verified"}):
        results = rare_mind.search("pump station pressure report", limit=20, where=where,
                                   lanes=lanes)
        assert len(results) == 20, (where, lanes)
        assert all(r.frame.metadata.get("rare") == "yes" for r in results)
    # Fewer matches than the page: every one of them.
    few = rare_mind.search("pump station pressure report", limit=20, lanes=lanes,
                           where={"metadata": {"rare": "yes", "i": 47}})
    assert [r.frame.metadata["i"] for r in few] == [47]


def test_query_vector_equals_the_embedders_own(store_factory: Callable[..., ws.Store]) -> None:
    store = store_factory()
    mind = store.mind("qv")
    mind.cognify_batch([f"the harbour crane lifted container {i} at {i % 7} knots of wind"
                        for i in range(60)])
    query = "crane container wind"
    embedder = store.context.embedder
    assert embedder is not None
    vector = embedder.embed_query(query)
    for lanes in ({"vector"}, None):
        own = mind.search(query, limit=15, lanes=lanes)
        given = mind.search(query, limit=15, lanes=lanes, query_vector=vector)
        assert [(r.frame.id, r.rrf_score) for r in given] == \
            [(r.frame.id, r.rrf_score) for r in own]
    # The vector is used, not the query text's embedding: another text, the same vector.
    moved = mind.search("zzz", limit=15, lanes={"vector"}, query_vector=vector)
    assert _ids(moved) == _ids(mind.search(query, limit=15, lanes={"vector"}))
    with pytest.raises(ws.InvalidInputError):
        mind.search(query, query_vector=vector[:-1])
    with pytest.raises(ws.InvalidInputError):
        mind.search(query, query_vector=[float("nan")] * len(vector))


@only_sqlite
def test_a_rare_filter_fills_the_page_through_vec0_too(
        store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process vector index turned off: vec0's KNN, widened as the check thins it."""
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_BYTES", "0")
    mind = store_factory().mind("vec0")
    mind.cognify_batch([
        ws.MemoryInput(f"status report {i}: the pump station runs at pressure {i % 97}",
                       metadata={"rare": "yes"} if i % 40 == 7 else None)
        for i in range(2000)])
    results = mind.search("pump station pressure report", limit=20, lanes={"vector"},
                          where={"metadata": {"rare": "yes"}})
    assert len(results) == 20
    assert all(r.frame.metadata == {"rare": "yes"} for r in results)


@only_postgres
def test_a_rare_filter_fills_the_page_through_the_hnsw_pages(
        rare_mind: ws.Mind, monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL answers a filter that fewer than 4,096 frames pass with an exact scan of
    them; as if more did, the HNSW pages are checked and widened until the page is full (the
    mind's vectors as if too many for an exact scan of them all)."""
    monkeypatch.setattr(postgres_adapter, "_few_pass", lambda session, where: False)
    monkeypatch.setattr(postgres_knn, "EXACT_SCAN_MAX", 0)
    for where in ({"metadata": {"rare": "yes"}}, {"source": "tool_verified"}):
        results = rare_mind.search("pump station pressure report", limit=20, where=where,
                                   lanes={"vector"})
        assert len(results) == 20
        assert all(r.frame.metadata.get("rare") == "yes" for r in results)

"""A search embeds its query before it reads anything, on the searching thread: a provider's
round trip (and its retries) never keeps the search's snapshot or pooled connection waiting.
An in-process model's query (``embeds_beside_reads``) is embedded on a thread beside the
keyword lane instead, with the same results and the same degradation when it fails.
Both dialects."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import waggle_store as ws
from waggle_store.embeddings import HashingEmbedder
from waggle_store.pipeline.embed import embed_frames


class WatchedEmbedder:
    """Hashing vectors; ``before_query`` runs first in every ``embed_query``."""

    provider = "watched-test"
    model = "hash-64"
    dimensions = 64

    def __init__(self) -> None:
        self._inner = HashingEmbedder(64)
        self.before_query: Callable[[], None] = lambda: None

    @property
    def model_id(self) -> str:
        return f"{self.provider}/{self.model}/{self.dimensions}"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.before_query()
        return self._inner.embed_query(text)


def test_the_query_is_embedded_before_the_search_reads(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = WatchedEmbedder()
    store = store_factory(embedder=embedder)
    mind = store.mind("m")
    gop = mind.sessions.ensure("s").gop_id
    ids = [mind.frames.create_i(gop, f"note {i}: the green kite flew over hill {i}").id
           for i in range(5)]
    assert embed_frames(store.context, ids).embedded == 5
    connections: list[str] = []
    real_keyword = store.adapter.keyword_search
    real_connection = store.context.read_connection

    def keyword(*args: Any, **kwargs: Any) -> Any:
        connections.append("keyword lane")
        return real_keyword(*args, **kwargs)

    def read_connection(*args: Any, **kwargs: Any) -> Any:
        connections.append("read connection")
        return real_connection(*args, **kwargs)

    monkeypatch.setattr(store.adapter, "keyword_search", keyword)
    monkeypatch.setattr(store.context, "read_connection", read_connection)
    seen: list[tuple[list[str], threading.Thread]] = []
    embedder.before_query = lambda: seen.append((list(connections),
                                                 threading.current_thread()))
    results = mind.search("green kite", limit=10)
    assert results
    assert results[0].explain["degraded"] == []
    assert seen == [([], threading.current_thread())]
    # Then the reads: on Postgres the vector lane takes a second connection (its statement sent
    # there beside the keyword lane: engine.HybridSearch._read).
    assert connections[0] == "read connection"
    lane_connections = 1 if store.engine.dialect.name == "postgresql" else 0
    assert sorted(connections) == sorted(
        ["read connection", "keyword lane"] + ["read connection"] * lane_connections)


class InProcessEmbedder(WatchedEmbedder):
    """The watched embedder, declaring itself an in-process model."""

    embeds_beside_reads = True


def _kite_mind(store: ws.Store) -> ws.Mind:
    mind = store.mind("m")
    gop = mind.sessions.ensure("s").gop_id
    ids = [mind.frames.create_i(gop, f"note {i}: the green kite flew over hill {i}").id
           for i in range(5)]
    ids.append(mind.frames.create_i(gop, "a red balloon drifted away").id)
    assert embed_frames(store.context, ids).embedded == 6
    return mind


def _ranking(results: Sequence[ws.SearchResult]) -> list[tuple[int, float, float | None]]:
    return [(r.frame.id, r.rrf_score, r.match_score) for r in results]


def test_an_in_process_model_embeds_the_query_beside_the_keyword_lane(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = InProcessEmbedder()
    store = store_factory(embedder=embedder)
    mind = _kite_mind(store)
    keyword_started = threading.Event()
    real_keyword = store.adapter.keyword_search

    def keyword(*args: Any, **kwargs: Any) -> Any:
        keyword_started.set()
        return real_keyword(*args, **kwargs)

    monkeypatch.setattr(store.adapter, "keyword_search", keyword)
    seen: list[tuple[str, bool]] = []

    def before_query() -> None:
        # Embedded before the reads, the keyword lane would not start while this waits: the
        # wait would time out and the test fail (not hang).
        seen.append((threading.current_thread().name, keyword_started.wait(timeout=10)))

    embedder.before_query = before_query
    beside = mind.search("green kite", limit=10)
    assert len(seen) == 1
    thread, overlapped = seen[0]
    assert thread.startswith("waggle-query-embed_")
    assert thread != threading.current_thread().name
    assert overlapped
    assert beside
    assert beside[0].explain["degraded"] == []
    assert beside[0].explain["lanes_run"] == ["keyword", "vector"]
    # The same ranking as the query embedded first, on the searching thread.
    monkeypatch.setattr(InProcessEmbedder, "embeds_beside_reads", False)
    seen.clear()
    embedder.before_query = lambda: seen.append((threading.current_thread().name, False))
    first = mind.search("green kite", limit=10)
    assert seen == [(threading.current_thread().name, False)]
    assert _ranking(beside) == _ranking(first)
    assert any("vector" in r.explain["lanes"] for r in beside)


def test_an_in_process_model_that_fails_leaves_the_keyword_results(
    store_factory: Callable[..., ws.Store]
) -> None:
    embedder = InProcessEmbedder()
    store = store_factory(embedder=embedder)
    mind = _kite_mind(store)

    def crash() -> None:
        raise RuntimeError("the model crashed")

    embedder.before_query = crash
    results = mind.search("green kite", limit=10)
    assert results
    assert "kite" in results[0].frame.content
    assert results[0].explain["degraded"] == [
        "vector lane off: the embedder failed: RuntimeError: the model crashed"]
    assert results[0].explain["lanes_run"] == ["keyword"]
    # The next search, with the model back, has both lanes again.
    embedder.before_query = lambda: None
    again = mind.search("green kite", limit=10)
    assert again[0].explain["degraded"] == []
    assert again[0].explain["lanes_run"] == ["keyword", "vector"]


def test_a_metered_in_process_model_embeds_before_the_search_reads(
    store_factory: Callable[..., ws.Store]
) -> None:
    """A store with a quota reserves each embedding in a write transaction of its own (a pooled
    connection): a search holding its read connection must not wait for one, so the query is
    embedded first, on the searching thread."""
    embedder = type("MeteredModel", (InProcessEmbedder,), {"provider": "local"})()
    store = store_factory(embedder=embedder, tier="FREE", user_id="ivy")
    mind = _kite_mind(store)
    seen: list[str] = []
    embedder.before_query = lambda: seen.append(threading.current_thread().name)
    used = store.quota_status().used
    results = mind.search("green kite", limit=10)
    assert seen == [threading.current_thread().name]
    assert results[0].explain["lanes_run"] == ["keyword", "vector"]
    assert store.quota_status().used == used + 1

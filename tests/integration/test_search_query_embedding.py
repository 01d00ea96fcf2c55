"""A search embeds its query before it reads anything, on the searching thread: a provider's
round trip (and its retries) never keeps the search's snapshot or pooled connection waiting.
An in-process model's query (``embeds_beside_reads``) is embedded the same way, and a failure
leaves the keyword results. Both dialects."""

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
    # Then the reads, both lanes on the search's one connection.
    assert connections == ["read connection", "keyword lane"]


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

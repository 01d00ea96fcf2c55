"""A query embedded by an in-process model is embedded while the keyword lane reads
(``embeds_beside_search``, ``search/engine.py``): on a worker thread, beside the keyword lane,
with the same page as when it is embedded first; a failure there leaves the keyword results and
says why. Any other embedder is still called first, on the searching thread, before the search
reads anything. Both dialects."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import waggle_store as ws
from waggle_store.embeddings import HashingEmbedder
from waggle_store.pipeline.embed import embed_frames

WAIT_S = 10.0


class InProcessEmbedder:
    """Hashing vectors from an embedder that says it may run beside the keyword lane;
    ``before_query`` runs first in every ``embed_query`` (on whatever thread calls it)."""

    provider = "inprocess-test"
    model = "hash-64"
    dimensions = 64

    def __init__(self, *, beside: bool = True) -> None:
        self.query_beside_search = beside
        self._inner = HashingEmbedder(64)
        self.before_query: Callable[[], None] = lambda: None
        self.fail = False

    @property
    def model_id(self) -> str:
        return f"{self.provider}/{self.model}/{self.dimensions}"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.before_query()
        if self.fail:
            raise ws.EmbeddingProviderError("model crashed", provider=self.provider)
        return self._inner.embed_query(text)


def _seeded(store_factory: Callable[..., ws.Store], embedder: InProcessEmbedder
            ) -> tuple[ws.Store, ws.Mind]:
    store = store_factory(embedder=embedder)
    mind = store.mind("m")
    gop = mind.sessions.ensure("s").gop_id
    ids = [mind.frames.create_i(gop, f"note {i}: the {('red', 'blue', 'green')[i % 3]} kite "
                                     f"flew over hill {i % 5}").id for i in range(30)]
    assert embed_frames(store.context, ids).embedded == 30
    return store, mind


def _page(results: list[ws.SearchResult]) -> list[tuple[int, float]]:
    return [(r.frame.id, r.final_score) for r in results]


def _watch_keyword_lane(store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """An event set once the keyword lane's statement has run."""
    done = threading.Event()
    real = store.adapter.keyword_search

    def keyword(*args: Any, **kwargs: Any) -> Any:
        try:
            return real(*args, **kwargs)
        finally:
            done.set()

    monkeypatch.setattr(store.adapter, "keyword_search", keyword)
    return done


def test_the_query_is_embedded_while_the_keyword_lane_reads(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedding waits until the keyword lane has run: embedded first, on the searching
    thread, it would wait in vain (and the test fails on the flag below)."""
    embedder = InProcessEmbedder()
    store, mind = _seeded(store_factory, embedder)
    embedder.query_beside_search = False
    first = _page(mind.search("red kite over hill 2", limit=10))
    embedder.query_beside_search = True
    keyword_done = _watch_keyword_lane(store, monkeypatch)
    seen: list[tuple[bool, str]] = []
    embedder.before_query = lambda: seen.append(
        (keyword_done.wait(WAIT_S), threading.current_thread().name))
    results = mind.search("red kite over hill 2", limit=10)
    assert len(seen) == 1
    assert seen[0][0], "the query was not embedded beside the keyword lane"
    assert seen[0][1].startswith("waggle-query-embed")
    assert results[0].explain["degraded"] == []
    assert "vector" in results[0].explain["lanes"]
    assert _page(results) == first


def test_an_embedding_failing_beside_the_keyword_lane_leaves_the_keyword_results(
    store_factory: Callable[..., ws.Store]
) -> None:
    embedder = InProcessEmbedder()
    _, mind = _seeded(store_factory, embedder)
    keyword_only = [r.frame.id for r in mind.search("blue kite", limit=10, lanes=("keyword",))]
    embedder.fail = True
    results = mind.search("blue kite", limit=10)
    assert [r.frame.id for r in results] == keyword_only
    degraded = results[0].explain["degraded"]
    assert any("the embedder failed: EmbeddingProviderError" in d and "model crashed" in d
               for d in degraded), degraded
    embedder.fail = False
    assert mind.search("blue kite", limit=10)[0].explain["degraded"] == []


def test_any_other_embedder_is_called_first_on_the_searching_thread(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider that does not say it may run beside the lanes (a remote one: a round trip and
    its retries) is called before the search reads anything, never inside its transaction."""
    embedder = InProcessEmbedder(beside=False)
    store, mind = _seeded(store_factory, embedder)
    keyword_done = _watch_keyword_lane(store, monkeypatch)
    seen: list[tuple[bool, threading.Thread]] = []
    embedder.before_query = lambda: seen.append(
        (keyword_done.is_set(), threading.current_thread()))
    assert mind.search("green kite", limit=10)
    assert seen == [(False, threading.current_thread())]
    assert keyword_done.is_set()

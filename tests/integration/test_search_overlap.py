"""The vector lane is started before the keyword lane and finished after it
(``SearchAdapter.start_vector_search``). On SQLite the scan runs on a worker thread meanwhile
(``VectorIndex.start``): the same answers as the scan on the calling thread, the two really
overlap, the searching thread computes what is left of the product once its keyword lane is
done, the index's lock is released whatever fails, and a forked child still searches. On both
dialects: a lane failing between start and finish fails that search only, and concurrent
searches agree with one-at-a-time."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import waggle_store as ws
from waggle_store.dialects import sqlite_vecindex
from waggle_store.dialects.sqlite import SQLiteAdapter
from waggle_store.pipeline.embed import embed_frames

from conftest import Target, forked_search, only_sqlite

WAIT_S = 10.0


@pytest.fixture
def worker_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every mind scanned on the worker thread, however small (the test minds are tiny)."""
    monkeypatch.setattr(sqlite_vecindex, "INLINE_SCAN_BELOW", 0)


def _seeded(store_factory: Callable[..., ws.Store], n: int = 60) -> tuple[ws.Store, ws.Mind]:
    store = store_factory()
    mind = store.mind("m")
    gop = mind.sessions.ensure("s").gop_id
    ids = [mind.frames.create_i(gop, f"memory number {i} about topic {i % 7}").id
           for i in range(n)]
    embed_frames(store.context, ids)
    return store, mind


def _page(mind: ws.Mind, query: str) -> list[tuple[int, float]]:
    return [(r.frame.id, r.final_score) for r in mind.search(query, limit=10)]


QUERIES = ("memory number 3", "topic 5", "about topic", "number 41 topic 6")


@only_sqlite
def test_the_worker_scan_gives_the_same_pages(store_factory: Callable[..., ws.Store],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _, mind = _seeded(store_factory)
    inline = {q: _page(mind, q) for q in QUERIES}
    monkeypatch.setattr(sqlite_vecindex, "INLINE_SCAN_BELOW", 0)
    for q in QUERIES:
        assert _page(mind, q) == inline[q], q
    assert all(inline.values())


@only_sqlite
def test_the_scan_runs_while_the_keyword_lane_does(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch, worker_scans: None
) -> None:
    """The scan waits for the keyword lane to have run: run one after the other on one thread,
    it would wait in vain."""
    store, mind = _seeded(store_factory)
    adapter = store.adapter
    assert isinstance(adapter, SQLiteAdapter)
    keyword_done = threading.Event()
    seen: list[tuple[bool, str]] = []
    real_scan, real_keyword = sqlite_vecindex._scan, adapter.keyword_search

    def scan(*args: Any) -> Any:
        seen.append((keyword_done.wait(WAIT_S), threading.current_thread().name))
        return real_scan(*args)

    def keyword(*args: Any, **kwargs: Any) -> Any:
        try:
            return real_keyword(*args, **kwargs)
        finally:
            keyword_done.set()

    monkeypatch.setattr(sqlite_vecindex, "_scan", scan)
    monkeypatch.setattr(adapter, "keyword_search", keyword)
    results = mind.search("memory number 3", limit=5)
    assert seen
    assert seen[0][0], "the scan did not run beside the keyword lane"
    assert seen[0][1].startswith("waggle-vector-scan")
    assert results[0].frame.content.startswith("memory number 3 ")


@only_sqlite
def test_the_searching_thread_computes_the_product_the_worker_has_not(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch, worker_scans: None
) -> None:
    """The product is shared in chunks: with the worker held back until the product is done,
    the searching thread (its keyword lane over) computes every chunk itself, and the page is
    the one-thread page. Without the sharing the worker would wait in vain."""
    _, mind = _seeded(store_factory)
    expected = _page(mind, "memory number 3")
    monkeypatch.setattr(sqlite_vecindex, "SCAN_CHUNK_ENTRIES", 64)  # many chunks
    real_scan = sqlite_vecindex._scan
    done_first: list[bool] = []

    def scan(*args: Any) -> Any:
        product = args[-1]
        done_first.append(product is not None and product._done.wait(WAIT_S))
        return real_scan(*args)

    monkeypatch.setattr(sqlite_vecindex, "_scan", scan)
    assert _page(mind, "memory number 3") == expected
    assert done_first == [True], "the searching thread did not compute the product"


def _search_in_thread(mind: ws.Mind, query: str) -> list[Any]:
    """A search with a deadline: a lock left held would hang it."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(mind.search(query, limit=5)),
                              daemon=True)
    worker.start()
    worker.join(WAIT_S)
    assert not worker.is_alive(), "the search hung: the index's lock was left held"
    return out[0]


def _fails_then_recovers(mind: ws.Mind, monkeypatch: pytest.MonkeyPatch, obj: object,
                         name: str) -> None:
    """``obj.name`` raises during one search: that search raises; the next one (on a deadline,
    every scan on the worker again) runs."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name} broke")

    monkeypatch.setattr(obj, name, broken)
    with pytest.raises(RuntimeError, match="broke"):
        mind.search("memory number 4", limit=5)
    monkeypatch.undo()
    monkeypatch.setattr(sqlite_vecindex, "INLINE_SCAN_BELOW", 0)
    results = _search_in_thread(mind, "memory number 4")
    assert results[0].frame.content.startswith("memory number 4 ")


def test_a_keyword_lane_failing_while_the_vector_lane_is_pending(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch, worker_scans: None
) -> None:
    """The vector lane is started (SQLite: its scan running, holding the index's lock) when the
    keyword lane raises: the search raises, and the next search runs."""
    store, mind = _seeded(store_factory)
    assert _search_in_thread(mind, "memory number 4")  # SQLite: the lane loaded
    _fails_then_recovers(mind, monkeypatch, store.adapter, "keyword_search")
    if isinstance(store.adapter, SQLiteAdapter):
        assert not store.adapter.vector_index._lock.locked()


@only_sqlite
def test_a_failing_scan_leaves_the_index_unlocked(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch, worker_scans: None
) -> None:
    """The scan fails on the worker: the search raises, the lock the scan held is released."""
    store, mind = _seeded(store_factory)
    assert _search_in_thread(mind, "memory number 4")
    adapter = store.adapter
    assert isinstance(adapter, SQLiteAdapter)
    _fails_then_recovers(mind, monkeypatch, sqlite_vecindex, "_scan")
    assert not adapter.vector_index._lock.locked()


def test_concurrent_searches_agree_with_one_at_a_time(
    store_factory: Callable[..., ws.Store], worker_scans: None
) -> None:
    _, mind = _seeded(store_factory)
    expected = {q: _page(mind, q) for q in QUERIES}
    failures: list[str] = []

    def run() -> None:
        for _ in range(15):
            for q in QUERIES:
                got = _page(mind, q)
                if got != expected[q]:
                    failures.append(f"{q}: {got} != {expected[q]}")

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert not failures, failures[:3]


@only_sqlite
def test_a_forked_child_scans_on_its_own_threads(
    store_factory: Callable[..., ws.Store], target: Target, worker_scans: None
) -> None:
    """The parent's scan threads do not exist in a forked child: it starts its own (a pool
    inherited from the parent would take the scan and never run it)."""
    _, mind = _seeded(store_factory)
    assert _page(mind, "memory number 5")  # the parent's pool exists now
    assert sqlite_vecindex.SCAN_THREADS._executor is not None
    contents = forked_search(target, "m", "memory number 5")
    assert contents[0].startswith("memory number 5 ")


@only_sqlite
def test_without_new_threads_the_scan_runs_inline(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch, worker_scans: None
) -> None:
    """At interpreter shutdown the pool takes no new work (``RuntimeError``): the search scans
    on its own thread instead of failing."""
    _, mind = _seeded(store_factory)
    expected = _page(mind, "memory number 6")

    class Closed:
        def submit(self, *args: Any) -> Any:
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(sqlite_vecindex, "SCAN_THREADS", Closed())
    assert _page(mind, "memory number 6") == expected
    assert _search_in_thread(mind, "memory number 6")  # and the lock is free

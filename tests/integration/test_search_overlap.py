"""A search's lanes run one after the other on the searching thread: a lane failing fails that
search only, and concurrent searches agree with one-at-a-time. Both dialects."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import waggle_store as ws
from waggle_store.pipeline.embed import embed_frames

WAIT_S = 10.0


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
    """``obj.name`` raises during one search: that search raises; the next one (on a deadline)
    runs."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name} broke")

    monkeypatch.setattr(obj, name, broken)
    with pytest.raises(RuntimeError, match="broke"):
        mind.search("memory number 4", limit=5)
    monkeypatch.undo()
    results = _search_in_thread(mind, "memory number 4")
    assert results[0].frame.content.startswith("memory number 4 ")


def test_a_keyword_lane_failing_fails_that_search_only(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword lane raises: the search raises, and the next search runs (no lock left
    held)."""
    store, mind = _seeded(store_factory)
    assert _search_in_thread(mind, "memory number 4")  # SQLite: the lane loaded
    _fails_then_recovers(mind, monkeypatch, store.adapter, "keyword_search")


def test_concurrent_searches_agree_with_one_at_a_time(
    store_factory: Callable[..., ws.Store]
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

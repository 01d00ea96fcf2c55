"""A plain SQLite store runs on its caller's threads: ingesting and searching start no thread,
also for a mind large enough for the vector index's coarse pass (its codes are built and the
mind calibrated on the searching thread)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import waggle_store as ws
from waggle_store.dialects.sqlite import SQLiteAdapter
from waggle_store.vectorindex import topk

from conftest import only_sqlite

pytestmark = only_sqlite

MEMORIES = 1000
SEARCHES = 30


def _threads() -> set[threading.Thread]:
    return set(threading.enumerate())


@pytest.mark.parametrize("coarse", [False, True], ids=["plain", "coarse-pass"])
def test_a_plain_sqlite_store_starts_no_thread(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch, coarse: bool
) -> None:
    if coarse:  # the mind counts as large: loading it builds and calibrates its codes
        monkeypatch.setattr(topk, "COARSE_MIN_ROWS", MEMORIES // 2)
    before, count = _threads(), threading.active_count()
    store = store_factory()
    mind = store.mind("m")
    done = mind.cognify_batch([f"note {i} about topic {i % 37} and item {i % 11}"
                               for i in range(MEMORIES)])
    assert not done.failures
    for i in range(SEARCHES):
        assert mind.search(f"topic {i % 37} item {i % 11}", limit=10)
    adapter = store.adapter
    assert isinstance(adapter, SQLiteAdapter)
    (rows,) = adapter.vector_index.loaded().values()  # the index answered the vector lane
    assert rows.n == MEMORIES
    assert (rows.decided_at == MEMORIES) is coarse  # calibrated (the codes kept or refused)
    assert _threads() == before
    assert threading.active_count() == count

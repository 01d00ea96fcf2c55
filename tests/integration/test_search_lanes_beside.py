"""Where a store's reads need no common transaction (``reads_per_statement``: Postgres in
autocommit), a search's vector lane runs on a connection of its own, on a ``LANE_THREADS``
worker, beside the keyword lane (``search/engine.py: _LaneBeside``); elsewhere (SQLite, whose
lanes read one snapshot) on the searching thread's connection. On both dialects: the same pages
as one lane after the other; the two lanes really overlap where they may; a full pool never
makes a search wait for a second connection (the searching thread takes the lane back)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.config import StoreConfig
from waggle_store.engine import create_engine
from waggle_store.pipeline.embed import embed_frames
from waggle_store.search import engine as search_engine

from conftest import Target

WAIT_S = 10.0
QUERIES = ("memory number 3", "topic 5", "about topic", "number 41 topic 6")


def _seed(store: ws.Store, n: int = 40) -> ws.Mind:
    mind = store.mind("m")
    gop = mind.sessions.ensure("s").gop_id
    ids = [mind.frames.create_i(gop, f"memory number {i} about topic {i % 7}").id
           for i in range(n)]
    assert embed_frames(store.context, ids).embedded == n
    return mind


def _pages(mind: ws.Mind) -> dict[str, list[tuple[int, float, float]]]:
    return {q: [(r.frame.id, r.rrf_score, r.final_score) for r in mind.search(q, limit=10)]
            for q in QUERIES}


class _Watch:
    """Records, per vector lane run, the thread and the DBAPI connection it ran on, and the
    keyword lane's."""

    def __init__(self, store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.vector: list[tuple[str, int]] = []
        self.keyword: list[tuple[str, int]] = []
        self.vector_started = threading.Event()
        adapter = store.adapter
        real_vector, real_keyword = adapter.start_vector_search, adapter.keyword_search
        self.keyword_waited: list[bool] = []
        self.wait_in_keyword = False

        def start_vector(conn: Any, **kwargs: Any) -> Any:
            self.vector.append((threading.current_thread().name, _dbapi(conn)))
            self.vector_started.set()
            return real_vector(conn, **kwargs)

        def keyword(conn: Any, **kwargs: Any) -> Any:
            self.keyword.append((threading.current_thread().name, _dbapi(conn)))
            if self.wait_in_keyword:
                self.keyword_waited.append(self.vector_started.wait(WAIT_S))
            return real_keyword(conn, **kwargs)

        monkeypatch.setattr(adapter, "start_vector_search", start_vector)
        monkeypatch.setattr(adapter, "keyword_search", keyword)


def _dbapi(conn: sa.Connection) -> int:
    return id(conn.connection.dbapi_connection)


def _beside(store: ws.Store) -> bool:
    return store.adapter.reads_per_statement(20 * search_engine.OVERFETCH)


def test_the_vector_lane_runs_beside_the_keyword_lane_where_reads_are_per_statement(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the lanes may overlap, they do: the keyword lane waits for the vector lane to have
    started (run one after the other on one thread it would wait in vain) and the two use two
    connections. Elsewhere both run on the searching thread and its one connection."""
    store = store_factory()
    mind = _seed(store)
    watch = _Watch(store, monkeypatch)
    beside = _beside(store)
    assert beside == (store.engine.dialect.name == "postgresql")
    watch.wait_in_keyword = beside
    results = mind.search("memory number 3", limit=10)
    assert results
    assert results[0].explain["degraded"] == []
    assert set(results[0].explain["lanes_run"]) == {"keyword", "vector"}
    (vector_thread, vector_conn), = watch.vector
    (keyword_thread, keyword_conn), = watch.keyword
    assert keyword_thread == threading.current_thread().name
    if beside:
        assert watch.keyword_waited == [True]
        assert vector_thread.startswith(search_engine.LANE_THREADS.name + "_")
        assert vector_conn != keyword_conn
    else:
        assert vector_thread == keyword_thread
        assert vector_conn == keyword_conn


def test_the_pages_are_those_of_one_lane_after_the_other(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_factory()
    mind = _seed(store)
    together = _pages(mind)

    class OneAfterTheOther:
        """The lane run on the searching thread's connection when its hits are asked for."""

        def __init__(self, store: Any, conn: sa.Connection,
                     run: Callable[[sa.Connection], Any]) -> None:
            self._conn, self._run = conn, run

        def result(self) -> Any:
            return self._run(self._conn)

    monkeypatch.setattr(search_engine, "_LaneBeside", OneAfterTheOther)
    assert _pages(mind) == together
    assert all(together.values())


@pytest.fixture
def small_pool_store(target: Target) -> Iterator[ws.Store]:
    """A store on an engine of waggle_store's own with a pool of two connections and no
    overflow; its checkout gives up after 5 s."""
    config = StoreConfig.from_env(target.url, target.schema)
    engine = create_engine(target.url, config=config, pool_size=2, max_overflow=0,
                           pool_timeout=5)
    store = ws.open_store(engine, schema=target.schema, embedder="hashing")
    try:
        yield store
    finally:
        store.close()
        engine.dispose()


def test_a_full_pool_never_makes_a_search_wait_for_a_second_connection(
    small_pool_store: ws.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every other pooled connection taken, the lane's worker cannot get one: the
    searching thread takes the lane back and runs it on its own connection, with the same page.
    The worker, once a connection is free, hands it back unused."""
    store = small_pool_store
    assert _beside(store) == (store.engine.dialect.name == "postgresql")
    mind = _seed(store)
    expected = _pages(mind)
    watch = _Watch(store, monkeypatch)
    with ExitStack() as held:
        held.enter_context(store.engine.connect())  # one of the two: the search takes the other
        got = _pages(mind)
    assert got == expected
    assert len(watch.vector) == len(QUERIES)
    me = threading.current_thread().name
    # Every lane ran on the searching thread and its connection, as the keyword lane did.
    assert watch.vector == watch.keyword
    assert all(thread == me for thread, _ in watch.vector)
    # The pool is whole again: the workers that got a connection late handed it back.
    search_engine.LANE_THREADS.submit(lambda: None).result()
    with store.engine.connect(), store.engine.connect():
        pass

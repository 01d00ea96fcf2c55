"""Where a store's reads need no common transaction (``reads_per_statement``: Postgres in
autocommit), a search's vector lane runs on a connection of its own, on a ``LANE_THREADS``
worker, beside the keyword lane (``search/engine.py: _LaneBeside``); elsewhere (SQLite, whose
lanes read one snapshot) on the searching thread's connection. On both dialects: the same pages
as one lane after the other; the two lanes really overlap where they may; a pool with no
connection to spare gives no second one; a lane no worker has begun is taken back by the
searching thread, or dropped if the search fails first."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.config import StoreConfig
from waggle_store.engine import create_engine
from waggle_store.pipeline.embed import embed_frames
from waggle_store.search import engine as search_engine

from conftest import Target, forked_search

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


@pytest.fixture
def lanes_beside(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every ``_LaneBeside`` a search makes (a vector lane sent to a lane thread)."""
    made: list[object] = []

    class Counted(search_engine._LaneBeside):
        def __init__(self, *args: Any) -> None:
            made.append(self)
            super().__init__(*args)

    monkeypatch.setattr(search_engine, "_LaneBeside", Counted)
    return made


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

        def cancel(self) -> None:
            pass

    monkeypatch.setattr(search_engine, "_LaneBeside", OneAfterTheOther)
    assert _pages(mind) == together
    assert all(together.values())


def _store_on(target: Target, **engine_options: Any) -> tuple[ws.Store, sa.Engine]:
    """A store on an engine of waggle_store's own, made with ``engine_options``."""
    config = StoreConfig.from_env(target.url, target.schema)
    engine = create_engine(target.url, config=config, **engine_options)
    return ws.open_store(engine, schema=target.schema, embedder="hashing"), engine


@pytest.fixture
def small_pool_store(target: Target) -> Iterator[ws.Store]:
    """A store with a pool of two connections and no overflow; a checkout gives up after 5 s."""
    store, engine = _store_on(target, pool_size=2, max_overflow=0, pool_timeout=5)
    try:
        yield store
    finally:
        store.close()
        engine.dispose()


def test_a_search_takes_no_second_connection_from_a_pool_with_none_to_spare(
    small_pool_store: ws.Store, monkeypatch: pytest.MonkeyPatch, lanes_beside: list[object]
) -> None:
    """With the other pooled connection taken, the vector lane runs on the searching thread's
    connection: the pool has no connection to spare (it would make the search wait)."""
    store = small_pool_store
    assert _beside(store) == (store.engine.dialect.name == "postgresql")
    mind = _seed(store)
    expected = _pages(mind)
    watch = _Watch(store, monkeypatch)
    sent = len(lanes_beside)
    assert (sent > 0) == _beside(store)  # with both connections free, the pool had one to spare
    with store.engine.connect():  # one of the two: the search takes the other
        got = _pages(mind)
    assert len(lanes_beside) == sent  # none sent to a lane thread
    assert got == expected
    assert len(watch.vector) == len(QUERIES)
    me = threading.current_thread().name
    assert watch.vector == watch.keyword
    assert all(thread == me for thread, _ in watch.vector)


def test_a_pool_that_connects_on_every_checkout_gives_no_second_connection(
    target: Target, monkeypatch: pytest.MonkeyPatch, lanes_beside: list[object]
) -> None:
    store, engine = _store_on(target, poolclass=sa.pool.NullPool)
    try:
        mind = _seed(store)
        watch = _Watch(store, monkeypatch)
        assert _pages(mind)["memory number 3"]
        assert lanes_beside == []
        assert len(watch.vector) == len(QUERIES)
        assert watch.vector == watch.keyword
    finally:
        store.close()
        engine.dispose()


def test_the_searching_thread_takes_the_lane_back_when_no_worker_has_begun_it(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch,
    lanes_beside: list[object]
) -> None:
    """Every lane thread busy: the lane's job waits in the queue, so the searching thread runs
    it on its own connection (same pages); the job, run later, hands its connection back."""
    store = store_factory()
    mind = _seed(store)
    expected = _pages(mind)
    watch = _Watch(store, monkeypatch)
    release = threading.Event()
    busy = [search_engine.LANE_THREADS.submit(release.wait, WAIT_S)
            for _ in range(search_engine.LANE_THREADS.max_workers)]
    sent = len(lanes_beside)
    try:
        got = _pages(mind)
    finally:
        release.set()
    # Sent to a lane thread where reads are per statement, and taken back.
    assert len(lanes_beside) - sent == (len(QUERIES) if _beside(store) else 0)
    assert all(job.result() for job in busy)
    assert got == expected
    assert watch.vector == watch.keyword
    assert all(thread == threading.current_thread().name for thread, _ in watch.vector)
    # The queued jobs ran once the threads were free, and gave their connections back.
    search_engine.LANE_THREADS.submit(lambda: None).result()
    pool = store.engine.pool
    assert isinstance(pool, sa.pool.QueuePool)
    assert pool.checkedout() == 0


def test_a_search_that_fails_before_its_vector_lane_leaves_no_lane_to_run(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch,
    lanes_beside: list[object]
) -> None:
    """The keyword lane raises while the vector lane's job waits for a lane thread: the search
    raises, and the job, run later, does not run the lane (nobody would read its hits)."""
    store = store_factory()
    mind = _seed(store)
    watch = _Watch(store, monkeypatch)
    real_keyword = store.adapter.keyword_search

    def failing(conn: Any, **kwargs: Any) -> Any:
        real_keyword(conn, **kwargs)
        raise RuntimeError("the keyword lane broke")

    monkeypatch.setattr(store.adapter, "keyword_search", failing)
    release = threading.Event()
    busy = [search_engine.LANE_THREADS.submit(release.wait, WAIT_S)
            for _ in range(search_engine.LANE_THREADS.max_workers)]
    try:
        with pytest.raises(RuntimeError, match="the keyword lane broke"):
            mind.search("memory number 3", limit=10)
    finally:
        release.set()
    assert all(job.result() for job in busy)
    assert len(lanes_beside) == (1 if _beside(store) else 0)
    for lane in lanes_beside:  # the job has run
        assert lane._future is not None  # type: ignore[attr-defined]
        assert lane._future.result(timeout=WAIT_S) is None  # type: ignore[attr-defined]
    # Where it runs beside, the lane never began; on SQLite it begins (its scan) on the searching
    # thread before the keyword lane.
    me = threading.current_thread().name
    assert [thread for thread, _ in watch.vector] == ([] if _beside(store) else [me])


def test_a_search_sends_its_lane_beside_only_when_it_reads_alone(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch,
    lanes_beside: list[object]
) -> None:
    """While another search of the process reads, the cores are busy with it: the vector lane
    runs on the searching thread's connection, with the same pages."""
    store = store_factory()
    mind = _seed(store)
    alone = _pages(mind)
    sent = len(lanes_beside)
    assert (sent > 0) == _beside(store)
    watch = _Watch(store, monkeypatch)
    with search_engine.READING:  # another search reading
        assert _pages(mind) == alone
    assert len(lanes_beside) == sent
    assert watch.vector == watch.keyword
    assert all(thread == threading.current_thread().name for thread, _ in watch.vector)


def test_a_forked_child_searches_whatever_the_parents_searches_were_doing(
    store_factory: Callable[..., ws.Store], target: Target
) -> None:
    """A search of another thread held the count of reading searches (its lock) when the process
    forked: the child, which has none of the parent's threads, starts from its own count."""
    store = store_factory()
    mind = _seed(store)
    expected = [r.frame.content for r in mind.search("memory number 3", limit=10)]
    with search_engine.READING._lock:  # as another thread's search entering or leaving
        assert forked_search(target, "m", "memory number 3") == expected

"""Where a store's reads need no common transaction (``reads_per_statement``: Postgres in
autocommit), a search's vector lane runs on a connection of its own: its statement is sent there
(psycopg's pipeline mode, ``dialects/lane_steps.py``) just after the keyword lane's first
statement, on the search's first connection, so the server runs both at once; elsewhere (SQLite,
whose lanes read one snapshot) on the search's one connection. On both dialects: the same pages
as one lane after the other; the lane's statement really runs during the keyword lane where it
may; a pool with no connection to spare gives no second one; a search that fails before its
lane's rows are read, a failing lane statement and a lost lane connection leave nothing behind.
On Postgres also: the rows that arrive first are read first (and rows that never come within
the wait are read in order from then on); the keyword lane's connection goes back before the
lane's rows are awaited; a mind whose vector lane ends last sends its statement first."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import text

import waggle_store as ws
from waggle_store.config import StoreConfig
from waggle_store.dialects import common, lane_steps
from waggle_store.dialects.base import vector_table_name
from waggle_store.engine import create_engine, engine_info
from waggle_store.models import MindEmbeddingModelRow
from waggle_store.pipeline.embed import embed_frames
from waggle_store.search import engine as search_engine

from conftest import Target, forked_search, only_postgres

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
    """Records, per vector lane begun, the thread and the DBAPI connection it began on, and the
    keyword lane's; ``on_vector``/``on_keyword`` run before the real lane."""

    def __init__(self, store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.vector: list[tuple[str, int]] = []
        self.keyword: list[tuple[str, int]] = []
        self.on_vector: Callable[[sa.Connection], None] = lambda conn: None
        self.on_keyword: Callable[[sa.Connection], None] = lambda conn: None
        adapter = store.adapter
        real_vector, real_keyword = adapter.start_vector_search, adapter.keyword_search

        def start_vector(conn: Any, **kwargs: Any) -> Any:
            self.vector.append((threading.current_thread().name, _dbapi(conn)))
            self.on_vector(conn)
            return real_vector(conn, **kwargs)

        def keyword(conn: Any, **kwargs: Any) -> Any:
            self.keyword.append((threading.current_thread().name, _dbapi(conn)))
            self.on_keyword(conn)
            return real_keyword(conn, **kwargs)

        monkeypatch.setattr(adapter, "start_vector_search", start_vector)
        monkeypatch.setattr(adapter, "keyword_search", keyword)

    def beside(self) -> int:
        """How many searches began their vector lane on another connection than their keyword
        lane's."""
        return sum(v != k for v, k in zip(self.vector, self.keyword, strict=True))


def _dbapi(conn: sa.Connection) -> int:
    return id(conn.connection.dbapi_connection)


def _beside(store: ws.Store) -> bool:
    return store.adapter.reads_per_statement(20 * search_engine.OVERFETCH)


def _outside(store: ws.Store) -> sa.Engine:
    """An engine outside the store's pool (its own connections are not the store's)."""
    return sa.create_engine(store.engine.url, poolclass=sa.pool.NullPool)


def test_the_vector_lane_runs_beside_the_keyword_lane_where_reads_are_per_statement(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the lanes may overlap, they do: the vector lane begins on a connection of its own,
    and its statement is sent while the keyword lane's first statement is in flight (its
    connection in pipeline mode, the statement sent, its rows not yet read), so the server has
    both at once (``pg_stat_activity``: each backend ran its lane's statement). Elsewhere both
    lanes run on the search's one connection. Everything on the searching thread."""
    store = store_factory()
    mind = _seed(store)
    watch = _Watch(store, monkeypatch)
    beside = _beside(store)
    assert beside == (store.engine.dialect.name == "postgresql")
    keyword_conns: list[Any] = []
    # The keyword connection's pipeline status at each call of send (the first sends; the
    # lane's result() calls it again, to send a lane not sent yet).
    in_flight: list[object] = []
    pids: dict[str, int] = {}
    if beside:
        real_send = lane_steps.SentLane.send

        def send(lane: lane_steps.SentLane) -> None:
            in_flight.append(keyword_conns[0].pgconn.pipeline_status)
            real_send(lane)

        def on_vector(conn: sa.Connection) -> None:
            pids["vector"] = conn.connection.dbapi_connection.info.backend_pid  # type: ignore[union-attr]

        def on_keyword(conn: sa.Connection) -> None:
            keyword_conns.append(conn.connection.dbapi_connection)
            pids["keyword"] = keyword_conns[0].info.backend_pid

        monkeypatch.setattr(lane_steps.SentLane, "send", send)
        watch.on_vector, watch.on_keyword = on_vector, on_keyword
    results = mind.search("memory number 3", limit=10)
    assert results
    assert results[0].explain["degraded"] == []
    assert set(results[0].explain["lanes_run"]) == {"keyword", "vector"}
    (vector_thread, vector_conn), = watch.vector
    (keyword_thread, keyword_conn), = watch.keyword
    assert vector_thread == keyword_thread == threading.current_thread().name
    assert (vector_conn != keyword_conn) == beside
    if beside:
        from psycopg import pq

        assert in_flight[0] == pq.PipelineStatus.ON
        with _outside(store).connect() as outside:
            seen = {lane: outside.execute(text(
                "SELECT query FROM pg_stat_activity WHERE pid = :pid"),
                {"pid": pid}).one() for lane, pid in pids.items()}
        # Each backend ran its lane's statement (which one the server starts first is its
        # scheduler's choice: both were there before either's rows were read).
        assert "plainto_tsquery" in seen["keyword"].query  # its last statement: the keyword one
        assert "waggle_frame_vectors_" in seen["vector"].query


def test_the_pages_are_those_of_one_lane_after_the_other(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no connection to spare, the lanes run one after the other on one connection: the
    same pages as beside."""
    store = store_factory()
    mind = _seed(store)
    watch = _Watch(store, monkeypatch)
    together = _pages(mind)
    assert watch.beside() == (len(QUERIES) if _beside(store) else 0)
    monkeypatch.setattr(store.db, "spare_connection", lambda: False)
    assert _pages(mind) == together
    assert watch.beside() == (len(QUERIES) if _beside(store) else 0)  # none more
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
    small_pool_store: ws.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the other pooled connection taken, the vector lane runs on the search's own
    connection: the pool has no connection to spare (the search would wait for one)."""
    store = small_pool_store
    assert _beside(store) == (store.engine.dialect.name == "postgresql")
    mind = _seed(store)
    watch = _Watch(store, monkeypatch)
    expected = _pages(mind)
    # With both connections free, the pool had one to spare.
    assert watch.beside() == (len(QUERIES) if _beside(store) else 0)
    watch.vector.clear()
    watch.keyword.clear()
    with store.engine.connect():  # one of the two: the search takes the other
        got = _pages(mind)
    assert got == expected
    assert len(watch.vector) == len(QUERIES)
    assert watch.vector == watch.keyword


def test_a_pool_that_connects_on_every_checkout_gives_no_second_connection(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, engine = _store_on(target, poolclass=sa.pool.NullPool)
    try:
        mind = _seed(store)
        watch = _Watch(store, monkeypatch)
        assert _pages(mind)["memory number 3"]
        assert len(watch.vector) == len(QUERIES)
        assert watch.vector == watch.keyword
    finally:
        store.close()
        engine.dispose()


def _pooled(store: ws.Store) -> list[Any]:
    """The DBAPI connections idle in the store's pool, checked out together and given back."""
    pool = store.engine.pool
    assert isinstance(pool, sa.pool.QueuePool)
    with ExitStack() as held:
        conns = [held.enter_context(store.read_connection()) for _ in range(pool.checkedin())]
        return [conn.connection.dbapi_connection for conn in conns]


def test_a_search_that_fails_before_its_vector_lane_is_read_gives_its_connections_back(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword lane raises after the vector lane's statement was sent: the search raises,
    both connections are back in the pool (not discarded as broken), none left in pipeline
    mode, and the next searches (on the same connections) find the same pages."""
    store = store_factory()
    mind = _seed(store)
    expected = _pages(mind)
    watch = _Watch(store, monkeypatch)
    used: list[Any] = []

    def broken(conn: sa.Connection) -> None:
        raise RuntimeError("the keyword lane broke")

    watch.on_vector = lambda conn: used.append(conn.connection.dbapi_connection)
    watch.on_keyword = broken
    returned: list[object] = []  # each connection's pipeline status as the pool takes it back

    def checkin(dbapi_conn: Any, record: Any) -> None:
        if dbapi_conn is not None and _beside(store):
            returned.append(dbapi_conn.pgconn.pipeline_status)

    sa.event.listen(store.engine.pool, "checkin", checkin)
    try:
        with pytest.raises(RuntimeError, match="the keyword lane broke"):
            mind.search("memory number 3", limit=10)
    finally:
        sa.event.remove(store.engine.pool, "checkin", checkin)
    assert watch.beside() == (1 if _beside(store) else 0)
    pool = store.engine.pool
    assert isinstance(pool, sa.pool.QueuePool)
    assert pool.checkedout() == 0
    if _beside(store):
        from psycopg import pq

        assert returned == [pq.PipelineStatus.OFF] * 2
        assert used[0] in _pooled(store)  # the lane's connection came back, not discarded
    watch.on_keyword = lambda conn: None
    assert _pages(mind) == expected


@only_postgres  # SQLite's index lane answers from its in-memory copy, whatever the table says
def test_a_failing_vector_statement_leaves_the_keyword_lane_and_says_so(
    store: ws.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vector table is gone (dropped by hand): the lane's statement, sent ahead on its own
    connection, fails, and the search returns the keyword lane's page, naming the failure;
    nothing is left broken on either connection (the second search uses them again)."""
    mind = _seed(store)
    keyword_only = [r.frame.id for r in mind.search("memory number 3", limit=10,
                                                    lanes={"keyword"})]
    assert mind.search("memory number 3", limit=10)  # warm: models and tables known
    with store.read() as session:
        model_id = session.execute(sa.select(MindEmbeddingModelRow.model_id)).scalar_one()
    with store.engine.begin() as conn:
        conn.execute(text(f"DROP TABLE {vector_table_name(model_id)}"))
    watch = _Watch(store, monkeypatch)
    for _ in range(2):  # the second on the connections the first gave back
        results = mind.search("memory number 3", limit=10)
        assert [r.frame.id for r in results] == keyword_only
        notes = results[0].explain["degraded"]
        assert any(note.startswith("vector lane off") for note in notes), notes
    assert watch.beside() == 2


@only_postgres  # an embedded SQLite file has no server connection to lose
def test_a_search_whose_lane_connection_was_lost_runs_again(
    store: ws.Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The server ended the idle pooled connection the vector lane will be sent on (within the
    ping window, so no ping finds it first): the lane's statement finds it lost, SQLAlchemy
    invalidates it, and the search, which only reads, runs once more on fresh connections, with
    both lanes and the same page — not a vector lane left out as if its index had failed."""
    from waggle_store.dialects import postgres_engine

    mind = _seed(store)
    expected = [r.frame.id for r in mind.search("memory number 3", limit=10)]
    monkeypatch.setattr(postgres_engine, "PING_AFTER_IDLE", 3600.0)
    store.engine.pool.dispose()
    with ExitStack() as held:  # two connections, given back first, then second: FIFO order
        first = held.enter_context(store.read_connection())
        second = held.enter_context(store.read_connection())
        pids = [c.exec_driver_sql("SELECT pg_backend_pid()").scalar() for c in (first, second)]
    watch = _Watch(store, monkeypatch)
    with _outside(store).connect() as other:
        assert other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pids[1]}).scalar()
    results = mind.search("memory number 3", limit=10)
    assert [r.frame.id for r in results] == expected
    assert results[0].explain["degraded"] == []
    assert set(results[0].explain["lanes_run"]) == {"keyword", "vector"}
    assert "lost its database connection, running it again" in caplog.text
    # The first try sent its lane on the lost connection, beside the keyword lane.
    assert watch.beside() == 2


def test_a_search_sends_its_lane_beside_only_when_it_reads_alone(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another search of the process reads, the cores are busy with it: the vector lane
    runs on the search's own connection, with the same pages."""
    store = store_factory()
    mind = _seed(store)
    watch = _Watch(store, monkeypatch)
    alone = _pages(mind)
    assert watch.beside() == (len(QUERIES) if _beside(store) else 0)
    watch.vector.clear()
    watch.keyword.clear()
    with search_engine.READING:  # another search reading
        assert _pages(mind) == alone
    assert watch.vector == watch.keyword


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


def _steps(sql: str, params: dict[str, Any]) -> lane_steps.LaneSteps:
    """A lane of one statement whose "hits" are its rows (what the dialect layer returns)."""
    rows = yield sql, params
    return rows  # type: ignore[return-value]  # rows stand for hits: nothing reads them here


@only_postgres  # statements sent ahead exist only there
@pytest.mark.parametrize("slow", ["keyword", "lane"])
def test_the_rows_that_arrive_first_are_read_first(store: ws.Store, slow: str) -> None:
    """The keyword statement and the lane's, sent one beside the other: the lane's rows are
    read while the keyword statement still runs when they arrive first (a slow keyword
    statement), and are left to be awaited by ``result()`` when the keyword rows come first (a
    slow lane). Either way each statement's own rows."""
    sleep = {"keyword": (0.3, 0.0), "lane": (0.0, 0.3)}[slow]
    with (store.db.read_connection(per_statement=True) as conn,
          store.db.read_connection(per_statement=True) as lane_conn):
        lane = lane_steps.SentLane(lane_conn, _steps(
            "SELECT 2 AS x FROM pg_sleep(:s)", {"s": sleep[1]}))
        with common.beside_next_statement(lane):
            rows = common.run_lane(conn, "SELECT 1 AS x FROM pg_sleep(:s)", {"s": sleep[0]})
        # Read already (nothing awaited) exactly when the lane's rows came first.
        assert (lane.awaited_socket() is None) == (slow == "keyword")
        assert [tuple(r) for r in rows] == [(1,)]
        assert [tuple(r) for r in lane.result()] == [(2,)]
        assert lane.awaited_socket() is None


@only_postgres  # statements sent ahead exist only there
def test_a_lane_that_fails_first_keeps_its_failure_for_its_result(store: ws.Store) -> None:
    """The lane's statement fails while the keyword statement still runs: its failure is read
    first and kept, the keyword rows come back, and ``result()`` raises the failure as
    SQLAlchemy raises a statement's; both connections go on working."""
    with (store.db.read_connection(per_statement=True) as conn,
          store.db.read_connection(per_statement=True) as lane_conn):
        lane = lane_steps.SentLane(lane_conn, _steps("SELECT 1 / (2 - :two) AS x", {"two": 2}))
        with common.beside_next_statement(lane):
            rows = common.run_lane(conn, "SELECT 1 AS x FROM pg_sleep(0.3)", {})
        assert lane.awaited_socket() is None  # read (its failure) before the keyword rows
        assert [tuple(r) for r in rows] == [(1,)]
        with pytest.raises(sa.exc.DataError, match="division by zero"):
            lane.result()
        assert [tuple(r) for r in common.run_lane(lane_conn, "SELECT 3", {})] == [(3,)]
        assert [tuple(r) for r in common.run_lane(conn, "SELECT 4", {})] == [(4,)]


def test_the_keyword_lanes_connection_goes_back_before_the_lanes_rows_are_awaited(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the vector lane on a connection of its own, the keyword lane's connection is back
    in the pool when the lane's hits are asked for (the pool takes it back while the server may
    still run the lane's statement); with one connection, that one is still out. Same pages."""
    store = store_factory()
    mind = _seed(store)
    expected = _pages(mind)
    pool = store.engine.pool
    assert isinstance(pool, sa.pool.QueuePool)
    out: list[int] = []  # connections checked out as each lane's hits are asked for
    for lane_class in (lane_steps.SentLane, search_engine.DeferredLane):
        real = lane_class.result

        def result(self: Any, real: Callable[[Any], Any] = real) -> Any:
            out.append(pool.checkedout())
            return real(self)

        monkeypatch.setattr(lane_class, "result", result)
    assert _pages(mind) == expected
    assert out == [1] * len(QUERIES)


@only_postgres  # statements sent ahead exist only there
def test_rows_that_do_not_come_within_the_wait_are_read_in_order_from_then_on(
    store: ws.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither statement's rows come within ``FIRST_ROWS_WAIT`` (as behind a pooler that holds
    rows until a sync): the rows are read in order, each statement's own, and the engine's
    searches no longer wait for the first rows (a lane arriving first is then left to its
    ``result()``)."""
    monkeypatch.setattr(common, "FIRST_ROWS_WAIT", 0.1)
    for slow_lane, read_first in ((0.3, False), (0.0, False)):
        with (store.db.read_connection(per_statement=True) as conn,
              store.db.read_connection(per_statement=True) as lane_conn):
            info = engine_info(conn.engine)  # (the store's read engine)
            assert info.first_rows == (slow_lane > 0)
            lane = lane_steps.SentLane(lane_conn, _steps(
                "SELECT 2 AS x FROM pg_sleep(:s)", {"s": slow_lane}))
            with common.beside_next_statement(lane):
                rows = common.run_lane(conn, "SELECT 1 AS x FROM pg_sleep(0.3)", {})
            assert (lane.awaited_socket() is None) == read_first
            assert [tuple(r) for r in rows] == [(1,)]
            assert [tuple(r) for r in lane.result()] == [(2,)]
        assert not info.first_rows


@only_postgres  # statements sent ahead exist only there
def test_a_minds_vector_lane_that_ends_last_is_sent_first(
    store: ws.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mind's first search sends its vector statement just after the keyword lane's first
    statement. While the vector statement is held up (its table locked by another transaction
    for a moment) its rows come after the keyword lane's; after such searches the mind's next
    search sends the vector statement before its keyword lane begins. The same pages."""
    mind = _seed(store)
    with store.read() as session:
        model_id = session.execute(sa.select(MindEmbeddingModelRow.model_id)).scalar_one()
    watch = _Watch(store, monkeypatch)
    # Per lane sent: whether its search's keyword lane had begun when it was sent.
    keyword_begun: list[bool] = []
    real_send = lane_steps.SentLane.send

    def send(lane: lane_steps.SentLane) -> None:
        if not lane._sent:
            keyword_begun.append(len(watch.keyword) == len(watch.vector))
        real_send(lane)

    monkeypatch.setattr(lane_steps.SentLane, "send", send)
    expected = _pages(mind)
    assert keyword_begun[0] is True  # the mind's first search: the keyword statement first
    keyword_begun.clear()
    for _ in range(3):
        with store.engine.connect() as locker:  # (a connection of the pool's, in a transaction)
            locker.execute(text(f"LOCK TABLE {vector_table_name(model_id)} "
                                "IN ACCESS EXCLUSIVE MODE"))
            release = threading.Timer(0.3, locker.rollback)
            release.start()
            try:
                assert mind.search("memory number 3", limit=10)
            finally:
                release.join()
    assert _pages(mind) == expected
    assert keyword_begun[3] is False  # the first search after: the vector statement first

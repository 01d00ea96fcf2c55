"""How the search's lanes meet the database: index failures, lost connections, prepared plans."""

from __future__ import annotations

import math
from contextlib import ExitStack

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import text

import waggle_store as ws
from waggle_store.dialects.base import LaneFilter
from waggle_store.pipeline.embed import embed_frames
from waggle_store.search.query import keyword_terms

from conftest import KeywordIndexProbe, only_postgres

TEXTS = [
    "alpha release notes for the payments service",
    "beta testers found a bug in the alpha build",
    "lunch on Friday with the design team",
]


def _seed(store: ws.Store, mind: ws.Mind) -> list[int]:
    gop = mind.sessions.ensure("g").gop_id
    ids = [mind.frames.create_i(gop, t).id for t in TEXTS]
    embed_frames(store.context, ids)
    return ids


def test_a_failing_keyword_index_falls_back_to_like(
    store: ws.Store, mind: ws.Mind, keyword_index: KeywordIndexProbe
) -> None:
    ids = _seed(store, mind)
    keyword_index.drop()
    results = mind.search("alpha", lanes=("keyword",), expand=False)
    assert {r.frame.id for r in results} == {ids[0], ids[1]}
    explain = results[0].explain
    assert explain["keyword_backend"] == "like"
    assert any("LIKE fallback used" in d for d in explain["degraded"])
    # The failed statement did not poison the transaction: the vector lane still runs after it.
    hybrid = mind.search("alpha release")
    assert hybrid
    assert "vector" in hybrid[0].explain["lanes_run"]
    assert hybrid[0].frame.content == TEXTS[0]


@only_postgres  # an embedded SQLite file has no server connection to lose
def test_a_lost_connection_is_invalidated_and_the_next_search_reconnects(
    store: ws.Store, mind: ws.Mind
) -> None:
    _seed(store, mind)
    with store.read_connection() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with store.engine.connect() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(sa_exc.DBAPIError) as raised:
            store.adapter.keyword_search(conn, terms=keyword_terms("alpha"),
                                         where=LaneFilter([mind.id]), limit=5)
        assert raised.value.connection_invalidated
        assert conn.invalidated
        conn.rollback()
    # The frame that says "payments" first; the next turn follows through its context.
    assert [r.frame.content for r in mind.search("payments", expand=False)] == [TEXTS[0], TEXTS[1]]


def _kill_the_pooled_connection(store: ws.Store) -> None:
    """Leave one connection in the store's pool, idle, and end its server process from outside
    the pool (the server restarting or an administrator's ``pg_terminate_backend``)."""
    store.engine.pool.dispose()
    with store.read_connection() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    _terminate(store, pid)


def _terminate(store: ws.Store, pid: object) -> None:
    """End the server process ``pid`` from a connection outside the store's pool."""
    outside = sa.create_engine(store.engine.url, poolclass=sa.pool.NullPool)
    try:
        with outside.connect() as other:
            assert other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
    finally:
        outside.dispose()


@only_postgres  # an embedded SQLite file has no server connection to lose
@pytest.mark.parametrize("idle", ["past the window", "within the window"])
def test_a_search_on_a_pooled_connection_killed_while_idle_succeeds(
    store: ws.Store, mind: ws.Mind, monkeypatch: pytest.MonkeyPatch, idle: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past the window the checkout pings, finds the connection lost and hands out a fresh
    one. Within it no ping is sent: the search's first statement finds the connection lost
    (SQLAlchemy invalidates it), and the search, which only reads, runs once more on a fresh
    connection — not a lane falling back to LIKE or left out as if its index had failed."""
    from waggle_store.dialects import postgres_engine

    _seed(store, mind)
    expected = [r.frame.content for r in mind.search("payments", expand=False)]
    window = 0.0 if idle == "past the window" else 3600.0
    monkeypatch.setattr(postgres_engine, "PING_AFTER_IDLE", window)
    _kill_the_pooled_connection(store)
    results = mind.search("payments", expand=False)
    assert [r.frame.content for r in results] == expected == [TEXTS[0], TEXTS[1]]
    assert results[0].explain["degraded"] == []
    assert results[0].explain["keyword_backend"] == "postgresql"
    assert set(results[0].explain["lanes_run"]) == {"keyword", "vector"}
    ran_again = "lost its database connection, running it again" in caplog.text
    assert ran_again == (idle == "within the window")


@only_postgres
def test_a_lost_connection_in_a_hosts_transaction_is_not_run_again(
    store: ws.Store, mind: ws.Mind
) -> None:
    """A store joined to a host's transaction does not retry: the host's transaction went with
    the connection, so the search raises instead of reading outside it."""
    _seed(store, mind)
    with store.engine.connect() as host:
        host.begin()
        joined = store.within(host).mind(mind.name)
        assert joined.search("payments")
        pid = host.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with store.engine.connect() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(ws.DatabaseUnavailableError, match="connection to the database"):
            joined.search("payments")


@only_postgres  # server-side prepared statements are a Postgres (psycopg) matter
def test_repeated_searches_run_prepared_statements(store: ws.Store, mind: ws.Mind) -> None:
    """psycopg prepares a statement after 5 runs and forgets them all on ROLLBACK: a search that
    rolled back its read transaction was parsed and planned afresh every time."""
    _seed(store, mind)
    for _ in range(30):  # enough for every pooled connection to pass psycopg's threshold (5)
        assert mind.search("alpha beta")
    # Each pooled connection's own: the vector lane may have run on a second connection, beside
    # the keyword lane (search/engine.py: HybridSearch._read), so all the idle ones are asked.
    prepared: list[str] = []
    with ExitStack() as held:
        for _ in range(store.engine.pool.checkedin()):  # type: ignore[attr-defined]
            conn = held.enter_context(store.read_connection())
            prepared += conn.exec_driver_sql(
                "SELECT statement FROM pg_prepared_statements").scalars().all()
    assert any("plainto_tsquery" in s for s in prepared)
    assert any("waggle_frame_vectors_" in s for s in prepared)


def test_the_keyword_lane_reuses_a_large_minds_frame_count_for_a_while(
    store: ws.Store, mind: ws.Mind, monkeypatch: pytest.MonkeyPatch
) -> None:
    """idf's N: counted in every keyword statement below FRAME_COUNT_EXACT_BELOW frames, reused
    for FRAME_COUNT_TTL seconds above (here the threshold is lowered to 3 frames). The score is
    the exact idf on both dialects: one formula."""
    from waggle_store.dialects import keyword_rank

    gop = mind.sessions.ensure("g").gop_id

    def add(texts: list[str]) -> None:
        for t in texts:
            mind.frames.create_i(gop, t)

    def alpha_score() -> float:
        # "beta two" follows "alpha one" in the session: found through its context, below it.
        hit, *_context_hits = mind.search("alpha", lanes=("keyword",))
        assert hit.frame.content == "alpha one"
        return float(hit.explain["lanes"]["keyword"]["score"])

    # df 2: "alpha" is said by one frame and is the context of the next ("beta two"); the
    # lane counts frames holding the term in either column.
    def idf(n: int, df: int = 2) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    add(["alpha one", "beta two"])
    assert alpha_score() == pytest.approx(idf(2))  # exact, and not remembered (below 3)
    add(["gamma three", "delta four"])
    assert alpha_score() == pytest.approx(idf(4))  # counted afresh
    monkeypatch.setattr(keyword_rank, "FRAME_COUNT_EXACT_BELOW", 3)
    assert alpha_score() == pytest.approx(idf(4))  # counted, and now remembered
    add(["epsilon five", "zeta six", "eta seven", "theta eight"])
    assert alpha_score() == pytest.approx(idf(4))  # the remembered count
    with monkeypatch.context() as expired:
        expired.setattr(keyword_rank, "FRAME_COUNT_TTL", 0.0)
        # Expired: the search's own statement counts the frames again ...
        assert alpha_score() == pytest.approx(idf(8))
    add(["iota nine", "kappa ten"])
    assert alpha_score() == pytest.approx(idf(8))  # ... and the searches after it reuse it
    # Inside a host's transaction an expired count is counted in the statement too.
    monkeypatch.setattr(keyword_rank, "FRAME_COUNT_TTL", 0.0)
    with store.engine.connect() as conn, conn.begin():
        hit, *_ = store.within(conn).mind(mind.name).search("alpha", lanes=("keyword",))
        assert float(hit.explain["lanes"]["keyword"]["score"]) == pytest.approx(idf(10))


def test_the_keyword_score_is_the_idf_sum_of_own_and_context_words(mind: ws.Mind) -> None:
    """The lane's formula (dialects/keyword_rank.py) on both dialects, for a query of more terms
    than one of SQLite's bit masks holds (sqlite.TERMS_PER_MASK = 31): a term in the frame's own
    words adds its idf, one only in its context (the preceding turn) half of it."""
    words = [f"kw{i:02d}x" for i in range(40)]
    first = mind.sessions.ensure("a").gop_id
    mind.frames.create_i(first, f"{words[0]} {words[35]}")
    mind.frames.create_i(first, f"{words[39]} tail")  # context: words 0 and 35
    second = mind.sessions.ensure("b").gop_id
    mind.frames.create_i(second, f"{words[35]} alone")
    mind.frames.create_i(second, "nothing here")  # context: word 35

    def idf(df: int, n: int = 4) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    # df counts own words or context: word 0 in 2 frames, 35 in all 4, 39 in 1.
    expected = {
        f"{words[0]} {words[35]}": idf(2) + idf(4),
        f"{words[39]} tail": idf(1) + 0.5 * idf(2) + 0.5 * idf(4),
        f"{words[35]} alone": idf(4),
        "nothing here": 0.5 * idf(4),
    }
    hits = mind.search(" ".join(words), lanes=("keyword",), limit=10)
    scores = {h.frame.content: h.explain["lanes"]["keyword"]["score"] for h in hits}
    assert scores == pytest.approx(expected, rel=1e-12)
    assert [h.frame.content for h in hits] == sorted(expected, key=lambda c: -expected[c])


def test_tied_keyword_frames_go_shorter_first_in_utf8_bytes(mind: ws.Mind) -> None:
    """Equal idf sums: the shorter frame first, by the UTF-8 bytes of content plus context (what
    both databases know without reading the text through: dialects/keyword_rank.py), then the
    lower id. "kite ééééé" is shorter in characters (10 against 13) and longer in bytes."""
    gops = [mind.sessions.ensure(f"s{i}").gop_id for i in range(3)]  # no context: one a session
    accented = mind.frames.create_i(gops[0], "kite ééééé").id
    plain = mind.frames.create_i(gops[1], "kite abcdefgh").id
    twin = mind.frames.create_i(gops[2], "kite ijklmnop").id  # the same length: by id
    hits = mind.search("kite", lanes=("keyword",), limit=10)
    assert len({h.explain["lanes"]["keyword"]["score"] for h in hits}) == 1  # a tie
    assert [h.frame.id for h in hits] == [plain, twin, accented]

"""How a search uses its connection: Postgres lanes without BEGIN/COMMIT on the store's own
engine (pgvector's settings are its connections' startup options), a transaction where a setting
must last for it (a wide page, a host's engine), and nothing of either left on the pool."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.dialects import postgres_knn
from waggle_store.models import MindRow

from conftest import Target, only_postgres, only_sqlite

FACTS = [
    "the pelican initiative ships on friday",
    "the heron project moved to tuesday",
    "lunch with the pelican team at noon",
    "a quiet week for the osprey group",
]


def _fill(store: ws.Store) -> ws.Mind:
    mind = store.mind("conn")
    for fact in FACTS:
        mind.cognify(fact)
    store.reconcile()
    return mind


def _found(mind: ws.Mind, query: str, limit: int) -> list[str]:
    results = mind.search(query, limit=limit)
    assert all("vector" in r.explain["lanes_run"] for r in results), "the vector lane ran"
    return [r.frame.content for r in results]


def _write_then_fail(store: ws.Store) -> None:
    with store.write() as session:
        session.add(MindRow(name="ghost", kind="workspace"))
        session.flush()
        raise RuntimeError("abort")


def test_searches_leave_the_pooled_connection_transactional(store_factory: object) -> None:
    store = store_factory()  # type: ignore[operator]
    mind = _fill(store)
    for limit in (20, 30):  # the default page, and one wider than the connections' ef_search
        found = _found(mind, "pelican initiative", limit)
        assert found[0] == FACTS[0]
        assert set(found) <= set(FACTS)
        assert FACTS[2] in found
    # A write after the searches, on the pool they used, still rolls back as a whole.
    with pytest.raises(RuntimeError, match="abort"):
        _write_then_fail(store)
    with store.read() as session:
        assert session.scalar(sa.select(sa.func.count()).where(MindRow.name == "ghost")) == 0


@only_postgres
def test_postgres_settings_are_per_search_and_never_leak(
        target: Target, store_factory: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # Through the HNSW index, which the settings are for (a mind this small is scanned exactly).
    monkeypatch.setattr(postgres_knn, "EXACT_SCAN_MAX", 0)
    store = store_factory()  # type: ignore[operator]
    mind = _fill(store)
    own = {limit: _found(mind, "pelican heron", limit) for limit in (20, 30)}
    # The vector lane sets pgvector's settings for its own transaction only.
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW hnsw.iterative_scan").scalar() == "off"
        assert conn.exec_driver_sql("SHOW hnsw.ef_search").scalar() == "40"
        assert conn.connection.dbapi_connection.autocommit is False  # type: ignore[union-attr]
    # A host's engine: its searches find the same frames, and leave the host's connections as
    # they were.
    host = sa.create_engine(target.url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with ws.open_store(host, schema=target.schema, embedder="hashing") as hosted:
            hosted_mind = hosted.mind("conn")
            for limit in (20, 30):
                assert _found(hosted_mind, "pelican heron", limit) == own[limit]
        with host.connect() as conn:
            assert conn.exec_driver_sql("SHOW hnsw.iterative_scan").scalar() == "off"
            assert conn.connection.dbapi_connection.autocommit is False  # type: ignore[union-attr]
    finally:
        host.dispose()


@only_sqlite
def test_a_sqlite_read_that_cannot_begin_raises_sqlalchemys_error(store: ws.Store) -> None:
    # A read's BEGIN DEFERRED goes to the DBAPI connection directly (no execution context); its
    # failure must still surface as SQLAlchemy's error, as the write's BEGIN IMMEDIATE does.
    for mode in ("read", "write"):
        with store.engine.execution_options(waggle_txn=mode).connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            raw.execute("BEGIN")  # already in a transaction: SQLite refuses another BEGIN
            with pytest.raises(sa.exc.OperationalError, match="within a transaction"):
                conn.begin()
            if raw.in_transaction:  # (SQLAlchemy's handling of the write's error rolled back)
                raw.execute("ROLLBACK")
    mind = store.mind("after")
    mind.cognify("the pool is still usable")
    assert mind.search("pool usable")[0].frame.content == "the pool is still usable"

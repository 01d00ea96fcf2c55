"""``store.within(connection_or_session)`` and ``open_store(engine)``: waggle_store inside a host's
transaction and on a host's engine, leaving both as they were."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

import waggle_store as ws
from waggle_store.models import FrameRow, MindRow

from conftest import Target, only_postgres, only_sqlite


def _frames(store: ws.Store) -> int:
    with store.read() as s:
        return int(s.scalar(sa.select(sa.func.count()).select_from(FrameRow)) or 0)


def test_within_a_session_commits_and_rolls_back_with_it(store: ws.Store) -> None:
    with Session(store.engine) as session:
        session.begin()
        store.within(session).mind("w").cognify("Grace Hopper found the first bug in 1947.")
        session.rollback()
    assert store.list_minds() == []
    assert _frames(store) == 0
    with Session(store.engine) as session, session.begin():
        result = store.within(session).mind("w").cognify("Grace Hopper found the first bug.")
        # The host's own ORM sees waggle_store's rows in the same transaction.
        assert session.scalar(sa.select(MindRow.name)) == "w"
    assert result.vector_status == "pending"
    assert _frames(store) == 1
    assert store.reconcile().vectors_fixed == 1


def test_a_failed_operation_rolls_back_only_itself(store: ws.Store) -> None:
    with store.engine.connect() as conn, conn.begin():
        view = store.within(conn)
        mind = view.mind("w")
        mind.cognify("kept: the first memory")
        with pytest.raises(ws.NotFoundError):
            mind.cognify("refused: unknown session", gop_id="no-such-session")
        mind.cognify("kept: the host's transaction is still usable")
    assert _frames(store) == 2


@only_postgres
def test_within_leaves_the_hosts_search_path_and_options(store: ws.Store) -> None:
    with store.engine.connect() as conn, conn.begin():
        path = conn.exec_driver_sql("SELECT current_setting('search_path')").scalar()
        options = dict(conn.get_execution_options())
        store.within(conn).mind("w").cognify("a memory written inside the host's transaction")
        store.within(conn).mind("w").search("memory")
        assert conn.exec_driver_sql("SELECT current_setting('search_path')").scalar() == path
        assert dict(conn.get_execution_options()) == options


@only_sqlite
def test_open_store_on_a_plain_host_engine(target: Target, tmp_path: Path) -> None:
    """A host's own ``sqlalchemy.create_engine`` engine (the stdlib driver, its default
    transaction handling): used as is, prepared per transaction, never disposed by close()."""
    engine = sa.create_engine(target.url)
    try:
        with ws.open_store(engine, embedder="hashing") as store:
            mind = store.mind("plain")
            mind.cognify("the pelican initiative ships on friday")
            assert [h.frame.content for h in mind.search("pelican initiative")] == [
                "the pelican initiative ships on friday"
            ]
            health = store.health()
            assert health.keyword_search is True
            if not health.vector_search:  # a driver that cannot load sqlite-vec says so
                assert any("vector search off" in r for r in health.reasons)
            with store.write() as s:  # cascades need foreign keys on the host's connection
                s.execute(sa.delete(MindRow).where(MindRow.name == "plain"))
            assert _frames(store) == 0
        with engine.connect() as conn:  # close() left the engine to its owner
            assert conn.exec_driver_sql("SELECT count(*) FROM waggle_minds").scalar() == 0
    finally:
        engine.dispose()


def test_within_refuses_what_is_not_a_connection(store: ws.Store) -> None:
    with pytest.raises(ws.InvalidInputError):
        store.within("not a connection")  # type: ignore[arg-type]

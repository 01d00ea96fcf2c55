"""Storage failures are reported by cause, and a failed call leaves nothing behind.

SQLite's ``max_page_count`` is a real size limit enforced by SQLite itself: reaching it fails a
write with SQLITE_FULL exactly as a full disk does, and SQLite then rolls the whole transaction
back (so a savepoint release afterwards fails: the error must still say "full").
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

import waggle_store as ws
from waggle_store.unitofwork import translate_error


def _page_count(store: ws.Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.exec_driver_sql("PRAGMA page_count").scalar_one())


def _frames(store: ws.Store) -> int:
    with store.read() as s:
        return int(s.execute(sa.text("SELECT count(*) FROM waggle_memory_frames")).scalar_one())


def _cap_pages(store: ws.Store, pages: int) -> None:
    """Every new connection of the store's pool gets the page limit; old ones are dropped."""

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")

    event.listen(store.engine, "connect", on_connect)
    store.engine.dispose()


@pytest.mark.parametrize("call", ["cognify", "create_i"])
def test_sqlite_size_limit_reports_full_and_stores_nothing(tmp_path: Any, call: str) -> None:
    store = ws.open_store(f"sqlite:///{tmp_path / 'full.db'}", embedder="hashing")
    try:
        mind = store.mind("m")
        mind.cognify("Sarah Chen leads Project Apollo.")
        _cap_pages(store, _page_count(store) + 2)
        before = _frames(store)
        big = " ".join(f"Word{i} Entity{i} visited Place{i}." for i in range(3000))
        gop = mind.sessions.ensure_active().gop_id
        write = (mind.cognify if call == "cognify"
                 else (lambda text: mind.frames.create_i(gop, text)))
        with pytest.raises(ws.StorageFullError) as info:
            write(big)
        assert "full" in str(info.value)
        assert "savepoint" not in str(info.value)
        assert isinstance(info.value, ws.StorageError)
        _cap_pages(store, 1_000_000)
        assert _frames(store) == before
        assert mind.search("Word17 Entity17", limit=5) == []
    finally:
        store.close()


def test_savepoint_mask_is_seen_through() -> None:
    """The error raised by a failed ROLLBACK TO SAVEPOINT is translated by the error it hid."""

    class FullError(Exception):
        sqlite_errorname = "SQLITE_FULL"

    def fail() -> None:
        try:
            raise sa.exc.OperationalError("INSERT ...", {}, FullError("database or disk is full"))
        except sa.exc.OperationalError:
            raise sa.exc.OperationalError("ROLLBACK TO SAVEPOINT sa_savepoint_1", {},
                                          Exception("no such savepoint: sa_savepoint_1")) from None

    with pytest.raises(sa.exc.OperationalError) as info:
        fail()
    # ``from None`` suppresses the display, not the chain: __context__ still holds the cause.
    translated = translate_error(info.value)
    assert isinstance(translated, ws.StorageFullError)
    assert "database or disk is full" in str(translated)


def test_unclassified_driver_error_stays_a_plain_storage_error() -> None:
    error = sa.exc.OperationalError("SELECT 1", {}, Exception("something odd"))
    translated = translate_error(error)
    assert type(translated) is ws.StorageError
    assert "something odd" in str(translated)

"""SQLite stores read through a memory map (``PRAGMA mmap_size``, ``WAGGLE_SQLITE_MMAP_BYTES``):
on by default on every pooled connection, off with 0, a negative size refused at open."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import waggle_store as ws
from waggle_store.config import DEFAULT_SQLITE_MMAP_BYTES

from conftest import only_sqlite

pytestmark = only_sqlite


def _mmap_size(store: ws.Store) -> int:
    with store.read_connection() as conn:
        return int(conn.exec_driver_sql("PRAGMA mmap_size").scalar_one())


def test_stores_read_through_a_memory_map_by_default(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WAGGLE_SQLITE_MMAP_BYTES", raising=False)
    store = store_factory()
    # SQLite caps the size at its build's maximum (SQLITE_MAX_MMAP_SIZE).
    assert 0 < _mmap_size(store) <= DEFAULT_SQLITE_MMAP_BYTES
    store.mind("m").frames.create_i(store.mind("m").sessions.ensure("s").gop_id, "mapped words")
    assert [r.frame.content for r in store.mind("m").search("mapped", lanes=("keyword",))] == [
        "mapped words"]


def test_the_map_is_set_by_the_environment(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAGGLE_SQLITE_MMAP_BYTES", "0")
    assert _mmap_size(store_factory()) == 0
    monkeypatch.setenv("WAGGLE_SQLITE_MMAP_BYTES", str(64 * 1024**2))
    assert _mmap_size(store_factory()) == 64 * 1024**2
    monkeypatch.setenv("WAGGLE_SQLITE_MMAP_BYTES", "-1")
    with pytest.raises(ws.InvalidInputError, match="mmap"):
        store_factory()

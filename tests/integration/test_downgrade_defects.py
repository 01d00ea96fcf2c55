"""Downgrades in a database shared with a host application: below revision 0004 the store's
tables would take back their unprefixed names, so a host table with one of them stops the
downgrade before it changes anything; ``downgrade base`` leaves nothing of the store behind."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store import migrate
from waggle_store.engine import create_engine

from conftest import Target


def _tables(target: Target) -> set[str]:
    engine = create_engine(target.url)
    try:
        with engine.connect() as conn:
            return set(sa.inspect(conn).get_table_names(schema=target.schema))
    finally:
        engine.dispose()


def _host_table(target: Target, name: str) -> None:
    engine = sa.create_engine(target.url)
    qualified = f'"{target.schema}"."{name}"' if target.schema else f'"{name}"'
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {qualified} (id INTEGER PRIMARY KEY, note TEXT)")
        conn.exec_driver_sql(f"INSERT INTO {qualified} VALUES (1, 'the host''s row')")
    engine.dispose()


@pytest.mark.parametrize("name", ["sessions", "minds", "memory_frames"])
def test_a_host_table_with_an_old_name_stops_the_downgrade(target: Target, name: str) -> None:
    with target.open(embedder="hashing") as store:
        store.mind("m").cognify("kept through the refused downgrade")
    _host_table(target, name)
    head = migrate.current(target.url, schema=target.schema)
    with pytest.raises(ws.MigrationError, match=rf"already have them \(.*{name}"):
        migrate.downgrade(target.url, "0003", schema=target.schema)
    assert migrate.current(target.url, schema=target.schema) == head
    assert name in _tables(target)
    with target.open(embedder="hashing") as store:
        assert [h.frame.content for h in store.mind("m").search("refused downgrade")] == [
            "kept through the refused downgrade"]


def test_downgrade_base_leaves_nothing_of_the_store(target: Target) -> None:
    with target.open(embedder="hashing") as store:
        store.mind("m").cognify("a memory with a vector")
        store.mind("m").search("memory")  # the SQLite vector index's change log exists now
    _host_table(target, "host_notes")
    migrate.downgrade(target.url, "base", schema=target.schema)
    left = _tables(target) - {"sqlite_sequence"}
    assert left == {"host_notes"}
    assert migrate.current(target.url, schema=target.schema) is None

"""A host application's engine and transactions beside the store: an export runs in the host's
transaction; a write through the store that would wait for the thread's own host transaction
fails in bounded time naming ``within()``; a connect timeout a host's engine cannot honour is
refused, not ignored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.engine import pick_sqlite_driver

from conftest import Target, only_sqlite


@pytest.fixture
def host_engine(target: Target) -> Iterator[sa.Engine]:
    """An engine the host made itself, with SQLAlchemy's defaults (on SQLite a driver that can
    load sqlite-vec, which a store with vectors needs to delete them)."""
    module = pick_sqlite_driver()[0] if target.dialect == "sqlite" else None
    engine = sa.create_engine(target.url, **({"module": module} if module else {}))
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.mark.parametrize("own_engine", [True, False], ids=["store-engine", "host-engine"])
def test_a_write_beside_the_threads_own_transaction_names_within(
        target: Target, host_engine: sa.Engine, own_engine: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAGGLE_SQLITE_BUSY_TIMEOUT_MS", "300")
    monkeypatch.setenv("WAGGLE_LOCK_TIMEOUT_MS", "300")
    source = target.url if own_engine else host_engine
    with ws.open_store(source, schema=target.schema, embedder="hashing") as store:
        store.mind("w").cognify("the first memory")
        with (store.engine if own_engine else host_engine).connect() as conn, conn.begin():
            store.within(conn).mind("w").frames.update(1, "changed in the host's transaction")
            with pytest.raises(ws.StorageBusyError, match=r"store\.within\("):
                store.mind("w").frames.update(1, "changed beside it")
        assert store.mind("w").frames.get(1).content == "changed in the host's transaction"  # type: ignore[union-attr]


def test_a_connect_timeout_for_a_host_engine_is_refused(target: Target,
                                                        host_engine: sa.Engine) -> None:
    with pytest.raises(ws.InvalidInputError, match="connect_args"):
        ws.open_store(host_engine, schema=target.schema, connect_timeout=2)


@only_sqlite
def test_a_host_engine_without_sqlite_vec_says_how_to_delete_vectors(target: Target) -> None:
    """The stdlib driver of many Pythons cannot load sqlite-vec: deleting a frame whose vectors
    it cannot reach fails naming the fix, not with SQLite's "no such module"."""
    with target.open(embedder="hashing") as store:
        store.mind("v").cognify("a memory with a vector")
    plain = sa.create_engine(target.url)
    try:
        with ws.open_store(plain, embedder=None) as store:
            with pytest.raises(ws.MissingExtensionError, match="sqlite-vec") as failed:
                store.drop_mind("v")
            assert "no such module" not in str(failed.value).split("(")[0]
            assert [m.name for m in store.list_minds()] == ["v"]
    finally:
        plain.dispose()


def test_an_export_inside_the_hosts_transaction_sees_its_uncommitted_rows(
        target: Target, host_engine: sa.Engine, tmp_path: Path) -> None:
    """The host's transaction keeps the isolation the host chose: an export run in it reads
    what the transaction wrote, committed or not."""
    with ws.open_store(host_engine, schema=target.schema, embedder="hashing") as store:
        store.mind("x").cognify("committed before the host's transaction")
        with host_engine.connect() as conn, conn.begin():
            inside = store.within(conn)
            inside.mind("x").cognify("written in the host's transaction")
            report = inside.export_mind("x", tmp_path / "x.jsonl")
            inside.export_openfang("x", tmp_path / "x.json")
            conn.rollback()
        assert report.frames == 2
        assert "written in the host's transaction" in (tmp_path / "x.json").read_text("utf-8")
        assert [r.frame.content for r in store.mind("x").search("transaction")] == [
            "committed before the host's transaction"]

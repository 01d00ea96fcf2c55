"""Forgetting reaches the disk: after delete + ``store.purge()`` the deleted text is not in the
database's files (SQLite: the file and its WAL; PostgreSQL: the files of the store's tables,
indexes and TOAST, read by the server)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import waggle_store as ws
from tests.interfaces.cli_runner import cli_for


def _secret() -> bytes:
    return f"zqx{uuid.uuid4().hex}secretword".encode()


def _sqlite_bytes(store: ws.Store) -> bytes:
    path = Path(str(store.engine.url.database))
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


def _postgres_bytes(store: ws.Store) -> bytes:
    """The first segment of every relation file of the store's schema, as the server reads it
    after a checkpoint (superuser: the test database's role)."""
    engine = sa.create_engine(store.engine.url)
    try:
        with engine.connect() as conn:
            auto = conn.execution_options(isolation_level="AUTOCOMMIT")
            auto.exec_driver_sql("CHECKPOINT")
            paths = auto.execute(sa.text(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE (n.nspname = :schema OR c.oid IN (SELECT reltoastrelid FROM pg_class "
                "  t JOIN pg_namespace tn ON tn.oid = t.relnamespace WHERE tn.nspname = :schema)"
                "  OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT "
                "  reltoastrelid FROM pg_class t JOIN pg_namespace tn ON tn.oid = t.relnamespace "
                "  WHERE tn.nspname = :schema))) "
                "AND pg_relation_filepath(c.oid) IS NOT NULL"), {"schema": store.schema}).scalars()
            return b"".join(bytes(auto.execute(sa.text("SELECT pg_read_binary_file(:p)"),
                                               {"p": p}).scalar() or b"") for p in paths)
    finally:
        engine.dispose()


def _files(store: ws.Store) -> bytes:
    return _sqlite_bytes(store) if store.engine.dialect.name == "sqlite" else _postgres_bytes(store)


def test_deleted_text_is_gone_from_the_files_after_purge(store: ws.Store) -> None:
    mind = store.mind("purged")
    secret = _secret()
    gop = mind.sessions.ensure("notes").gop_id
    mind.frames.create_i(gop, "An ordinary memory before the secret")
    doomed = mind.frames.create_i(gop, f"The vault code is {secret.decode()} do not share")
    mind.frames.create_i(gop, "An ordinary memory after the secret")  # its context held it
    mind.kv.set("temp", f"kv copy {secret.decode()}")
    mind.frames.delete(doomed.id)
    mind.kv.delete("temp")
    assert mind.search(secret.decode()) == []
    assert secret in _files(store)  # the scan can see deleted text: it is there before purge

    report = store.purge()

    assert isinstance(report, ws.PurgeReport)
    assert report.bytes_before > 0
    assert report.bytes_after > 0
    assert secret not in _files(store)
    assert len(mind.frames.gop(gop)) == 2  # what was not deleted is all there
    assert mind.search("ordinary memory")


def test_purge_command(store: ws.Store, target: Any, tmp_path: Path) -> None:
    mind = store.mind("default")
    secret = _secret()
    doomed = mind.frames.create_i(mind.sessions.ensure("s").gop_id, f"pin {secret.decode()}")
    mind.frames.delete(doomed.id)
    store.close()  # the command is its own process: this one holds no connection
    report = cli_for(target, tmp_path).json("purge")
    assert set(report) == {"bytes_before", "bytes_after"}
    reopened = target.open(embedder=None)
    try:
        assert secret not in _files(reopened)
    finally:
        reopened.close()

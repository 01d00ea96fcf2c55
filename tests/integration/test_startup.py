"""Startup hygiene: concurrent first opens, unreachable servers, wrong URLs, missing drivers and
extras, the SQLite fallbacks, and the exported Alembic filters."""

from __future__ import annotations

import multiprocessing as mp
import socket
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store import migrate
from waggle_store.engine import create_engine

from conftest import Target, only_sqlite

REPO = Path(__file__).resolve().parents[2]


def _first_open(url: str, schema: str | None, barrier: Any, out: Any) -> None:
    barrier.wait()
    try:
        with ws.open_store(url, schema=schema, embedder=None) as store:
            store.mind("shared").frames  # noqa: B018 - the mind row is created (race-free)
        out.put("ok")
    except Exception as exc:  # noqa: BLE001 - every failure is reported to the parent
        out.put(f"{type(exc).__name__}: {exc}")


def test_eight_processes_open_a_fresh_store_at_once(target: Target) -> None:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_first_open, args=(target.url, target.schema, barrier, out))
             for _ in range(8)]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok"] * 8
    assert migrate.current(target.url, schema=target.schema) == migrate.head()


def _first_migrate_plain(url: str, barrier: Any, out: Any) -> None:
    barrier.wait()
    engine = sa.create_engine(url, connect_args={"timeout": 120})  # a host's plain engine
    try:
        with engine.connect() as conn:
            migrate.upgrade(conn)
            conn.commit()
        out.put("ok")
    except Exception as exc:  # noqa: BLE001 - every failure is reported to the parent
        out.put(f"{type(exc).__name__}: {exc}")
    finally:
        engine.dispose()


@only_sqlite
def test_eight_host_connections_migrate_a_fresh_sqlite_file_at_once(target: Target) -> None:
    """A host's own pysqlite connections begin lazily; the migration takes the write lock first
    (BEGIN IMMEDIATE), so concurrent migrators queue and the later ones find the schema done."""
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_first_migrate_plain, args=(target.url, barrier, out))
             for _ in range(8)]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok"] * 8
    assert migrate.check(target.url) == []


@pytest.fixture
def blackhole() -> Iterator[int]:
    """A port that accepts TCP connections (the kernel's backlog) and never answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@pytest.mark.postgres
def test_blackholed_port_fails_with_the_waggle_error(blackhole: int) -> None:
    url = f"postgresql+psycopg://app:s3cretpw@127.0.0.1:{blackhole}/appdb"
    with pytest.raises(ws.DatabaseUnavailableError) as info:
        ws.open_store(url, embedder=None, connect_timeout=2)
    message = str(info.value)
    assert f"127.0.0.1:{blackhole}" in message
    assert "s3cretpw" not in message


@pytest.mark.postgres
def test_refused_port_names_host_and_port_not_the_password() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = sa.URL.create("postgresql+psycopg", username="app", password="s3cretpw",
                        host="127.0.0.1", port=port, database="appdb")
    with pytest.raises(ws.DatabaseUnavailableError) as info:
        ws.open_store(url, embedder=None)
    assert f"127.0.0.1:{port}" in str(info.value)
    assert "s3cretpw" not in str(info.value)


@pytest.mark.parametrize(
    ("url", "error", "needle"),
    [
        ("not a url at all", ws.InvalidInputError, "not a database URL"),
        ("postgresql://app:pw@host:notaport/db", ws.InvalidInputError, "app:***@"),
        ("postgresql+psycopg2://app:pw@host/db", ws.UnsupportedDialectError,
         "pip install 'waggle-store[postgres]'"),
        ("postgresql+asyncpg://app:pw@host/db", ws.UnsupportedDialectError, "postgresql+psycopg://"),
        ("mysql://app:pw@host/db", ws.UnsupportedDialectError, "does not support"),
    ],
)
def test_wrong_urls_raise_waggle_errors_naming_the_fix(url: str, error: type[Exception],
                                                      needle: str) -> None:
    with pytest.raises(error) as info:
        ws.open_store(url, embedder=None)
    assert needle in str(info.value)
    assert ":pw@" not in str(info.value)


def test_url_objects_keep_their_password() -> None:
    url = sa.URL.create("postgresql+psycopg", username="app", password="s3cretpw",
                        host="127.0.0.1", port=1, database="appdb")
    engine = create_engine(url)
    try:
        assert engine.url.password == "s3cretpw"  # str(url) would have made it "***"
    finally:
        engine.dispose()


def _run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=180, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})


def test_missing_postgres_extra_names_the_install_command(tmp_path: Path) -> None:
    done = _run_python("""
        import sys
        sys.modules["psycopg"] = None  # as if waggle-store[postgres] was not installed
        import waggle_store as ws
        try:
            ws.open_store("postgresql+psycopg://app@127.0.0.1:1/db", embedder=None)
        except ws.MissingExtensionError as exc:
            print("MissingExtensionError:", exc)
    """, tmp_path)
    assert "MissingExtensionError:" in done.stdout, done.stderr
    assert "pip install 'waggle-store[postgres]'" in done.stdout


@pytest.mark.sqlite
def test_sqlite_without_an_extension_capable_driver_opens_keyword_only(tmp_path: Path) -> None:
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        pytest.skip("this Python's sqlite3 can load extensions: there is no fallback to take")
    done = _run_python(f"""
        import sys
        for name in ("sqlean", "sqlean.dbapi2", "pysqlite3", "pysqlite3.dbapi2"):
            sys.modules[name] = None  # as if waggle-store[sqlite] was not installed
        import waggle_store as ws
        with ws.open_store("sqlite:///{tmp_path / 'kw.db'}", embedder="hashing") as store:
            health = store.health()
            mind = store.mind("m")
            mind.cognify("the pelican initiative ships on friday")
            hits = mind.search("pelican initiative")
            print("driver", health.driver)
            print("vector", health.vector_search, "keyword", health.keyword_search)
            print("reasons", health.reasons)
            print("hits", len(hits))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "driver sqlite3" in done.stdout
    assert "vector False keyword True" in done.stdout
    assert "pip install 'waggle-store[sqlite]'" in done.stdout
    assert "hits 1" in done.stdout


@pytest.mark.sqlite
def test_wal_reset_warning_once_per_process_at_the_callers_line(tmp_path: Path) -> None:
    done = _run_python(f"""
        import warnings
        import waggle_store as ws
        from waggle_store.engine import engine_info, sqlite_wal_reset_affected
        from waggle_store.errors import WaggleStoreWarning
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            a = ws.open_store("sqlite:///{tmp_path / 'a.db'}", embedder=None)  # line 8
            b = ws.open_store("sqlite:///{tmp_path / 'b.db'}", embedder=None)
        info = engine_info(a.engine)
        version = tuple(int(p) for p in info.sqlite_version.split("."))
        ours = [w for w in seen if w.category is WaggleStoreWarning]
        print("affected", sqlite_wal_reset_affected(version))
        print("warnings", len(ours), [(w.filename.endswith("probe.py"), w.lineno) for w in ours])
        print("in health", any("WAL-reset" in r for r in b.health().reasons))
        a.close(); b.close()
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    if "affected True" in done.stdout:
        assert "warnings 1 [(True, 8)]" in done.stdout
        assert "in health True" in done.stdout
    else:
        assert "warnings 0" in done.stdout


@pytest.mark.parametrize("name", [
    "waggle_minds", "waggle_alembic_version", "waggle_memory_frames_fts",
    "waggle_memory_frames_fts_data", "waggle_memory_frames_fts_idx",
    "waggle_memory_frames_fts_content", "waggle_memory_frames_fts_docsize",
    "waggle_memory_frames_fts_config", "waggle_frame_vectors_3", "waggle_frame_vectors_3_chunks",
    "waggle_frame_vectors_3_rowids", "waggle_frame_vectors_3_vector_chunks00",
])
def test_host_filters_ignore_every_waggle_object(name: str) -> None:
    assert migrate.include_name(name, "table", {"schema_name": None}) is False
    assert migrate.include_name("ix_x", "index", {"table_name": name}) is False
    table = sa.Table(name, sa.MetaData(), sa.Column("id", sa.Integer))
    assert migrate.include_object(table, name, "table", True, None) is False


def test_host_filters_keep_the_hosts_objects() -> None:
    for name in ("users", "sessions", "notes", "alembic_version"):
        assert migrate.include_name(name, "table", {"schema_name": None}) is True
    assert migrate.include_name("waggle", "schema", {}) is False
    assert migrate.include_name("public", "schema", {}) is True
    users = sa.Table("users", sa.MetaData(), sa.Column("id", sa.Integer))
    assert migrate.include_object(users, "users", "table", True, None) is True


@only_sqlite
def test_a_host_connection_without_sqlite_vec_reads_and_writes_its_own(store: ws.Store,
                                                                      target: Target) -> None:
    mind = store.mind("m")
    mind.cognify("the pelican initiative ships on friday")  # a vec0 table now exists
    path = sa.make_url(target.url).database
    assert path is not None
    conn = sqlite3.connect(path)  # the stdlib driver: no sqlite-vec here
    try:
        rows = conn.execute("SELECT content FROM waggle_memory_frames").fetchall()
        assert rows == [("the pelican initiative ships on friday",)]
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, mind_id INTEGER, body TEXT)")
        conn.execute("INSERT INTO notes(mind_id, body) VALUES (?, 'x')", (mind.id,))
        conn.commit()
        assert conn.execute("SELECT count(*) FROM notes").fetchone() == (1,)
    finally:
        conn.close()

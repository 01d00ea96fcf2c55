"""Single-dialect facts: SQLite transactional DDL, the pgvector-less server, wheel installs."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store import migrate
from waggle_store.engine import pick_sqlite_driver, sqlite_wal_reset_affected

from conftest import IN_CI, PLAIN_PG_URL

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.sqlite
def test_failed_sqlite_migration_leaves_nothing(tmp_path: Path) -> None:
    """A migration that fails half-way rolls back every table it made and stamps no version."""
    db = tmp_path / "broken.db"
    conn = sqlite3.connect(db)
    # A table the migration will try to create, late in its run: the CREATE fails there.
    conn.execute("CREATE TABLE waggle_entity_mentions (x INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(ws.MigrationError):
        migrate.upgrade(f"sqlite:///{db}")
    conn = sqlite3.connect(db)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert "waggle_minds" not in names
    assert "waggle_memory_frames" not in names
    assert names <= {"waggle_entity_mentions", "waggle_alembic_version"}
    assert migrate.current(f"sqlite:///{db}") is None


@pytest.mark.sqlite
def test_driver_choice_can_load_extensions() -> None:
    module, label = pick_sqlite_driver()
    conn = module.connect(":memory:")
    conn.enable_load_extension(True)
    conn.close()
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        assert label != "sqlite3"


@pytest.mark.sqlite
def test_wal_reset_version_ranges() -> None:
    assert sqlite_wal_reset_affected((3, 50, 4))
    assert sqlite_wal_reset_affected((3, 7, 0))
    assert not sqlite_wal_reset_affected((3, 44, 6))
    assert not sqlite_wal_reset_affected((3, 50, 7))
    assert not sqlite_wal_reset_affected((3, 51, 3))
    assert not sqlite_wal_reset_affected((3, 6, 23))


def _no_plain_pg(reason: str) -> NoReturn:
    """Outside CI a developer may lack the server; in CI (.ci/run starts it) that is a failure,
    or the keyword-only path would silently go untested."""
    if IN_CI:
        pytest.fail(f"{reason}; CI requires it (.ci/run starts the PostgreSQL 15 cluster)")
    pytest.skip(reason)


@pytest.fixture
def plain_pg_schema() -> Iterator[str]:
    """A fresh schema on the pgvector-less PostgreSQL 15 of this machine."""
    engine = sa.create_engine(PLAIN_PG_URL)
    try:
        with engine.connect() as conn:
            has_vector = conn.exec_driver_sql(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
            ).scalar()
    except sa.exc.OperationalError as exc:
        engine.dispose()
        _no_plain_pg(f"no PostgreSQL without pgvector at {PLAIN_PG_URL}: {exc}")
    if has_vector:
        engine.dispose()
        _no_plain_pg(f"{PLAIN_PG_URL} has pgvector; the degraded path needs a server without it")
    schema = "t_" + uuid.uuid4().hex[:12]
    try:
        yield schema
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


@pytest.mark.postgres
def test_postgres_without_pgvector_is_keyword_only(plain_pg_schema: str) -> None:
    with ws.open_store(PLAIN_PG_URL, schema=plain_pg_schema, embedder=None) as store:
        health = store.health()
        assert health.keyword_search is True
        assert health.vector_search is False
        assert any("pgvector" in r for r in health.reasons)
        assert migrate.check(store.engine, schema=plain_pg_schema) == []
        # Degraded, not broken: a frame written here is found by the keyword lane alone.
        mind = store.mind("plain")
        gop = mind.sessions.ensure("g").gop_id
        frame = mind.frames.create_i(gop, "the pelican initiative ships on Friday")
        hits = mind.search("pelican initiative")
        assert [h.frame.id for h in hits] == [frame.id]
        assert hits[0].explain["lanes_run"] == ["keyword"]


@pytest.mark.slow
@pytest.mark.sqlite
def test_migrations_run_from_an_installed_wheel(tmp_path: Path) -> None:
    """Build the wheel, install it (not editable) into a fresh venv, migrate from elsewhere."""
    dist = tmp_path / "dist"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if build.returncode != 0 and "hatchling" in build.stderr:
        build = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(REPO)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(dist.glob("waggle_store-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    inst = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", f"{wheel}[sqlite]"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert inst.returncode == 0, inst.stderr[-2000:]
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    code = (
        "import waggle_store, waggle_store.migrate as m, pathlib;"
        "loc = m.script_location(); assert '_alembic' in str(loc), loc;"
        "assert 'site-packages' in str(waggle_store.__file__), waggle_store.__file__;"
        "m.upgrade('sqlite:///w.db'); print(m.current('sqlite:///w.db'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [str(py), "-c", code], cwd=workdir, capture_output=True, text=True, timeout=300, env=env
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().endswith(migrate.head())

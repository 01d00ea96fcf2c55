"""The example host (``examples/host_app``) on both dialects: its Alembic migrates both schemas,
its ``alembic check`` is clean, its own tables land in its own schema, and a host row and a
memory commit or roll back together.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from waggle_store import migrate
from waggle_store.models import FrameRow

from conftest import Target

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "examples" / "host_app"


@pytest.fixture
def host_env(target: Target, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The host's settings: its database URL (on PostgreSQL with its own schema first on the
    search_path) and waggle_store's schema (the test's)."""
    env = {}
    host_schema = None
    if target.schema is None:
        env["HOST_DATABASE_URL"] = target.url
    else:
        host_schema = "h_" + uuid.uuid4().hex[:12]
        admin = sa.create_engine(target.url)
        with admin.begin() as c:
            c.exec_driver_sql(f'CREATE SCHEMA "{host_schema}"')
        sep = "&" if "?" in target.url else "?"
        env["HOST_DATABASE_URL"] = f"{target.url}{sep}options=-csearch_path%3D{host_schema}"
        env["WAGGLE_PG_SCHEMA"] = target.schema
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(HOST))
    try:
        yield env
    finally:
        if host_schema is not None:
            with admin.begin() as c:
                c.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{host_schema}" CASCADE')
            admin.dispose()


def _alembic(env: dict[str, str], *args: str,
             order: str = "before") -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, **env, HOST_WAGGLE_ORDER=order,
                PYTHONPATH=os.pathsep.join([str(HOST), str(REPO)]))
    return subprocess.run([sys.executable, "-m", "alembic", *args], cwd=HOST, env=full,
                          capture_output=True, text=True, timeout=180)


def _names(engine: sa.Engine, schema: str | None) -> set[str]:
    return set(sa.inspect(engine).get_table_names(schema=schema))


def test_host_alembic_migrates_both_schemas_and_checks_clean(target: Target,
                                                              host_env: dict[str, str]) -> None:
    from host_app.db import make_engine

    up = _alembic(host_env, "upgrade", "head")
    assert up.returncode == 0, up.stderr
    engine = make_engine()
    try:
        host_tables = _names(engine, None)  # the host's default schema
        assert {"users", "notes", "alembic_version"} <= host_tables
        waggle_tables = _names(engine, target.schema)
        assert {"waggle_minds", "waggle_memory_frames", "waggle_alembic_version"} <= waggle_tables
        if target.schema is not None:  # the schemas are apart: nothing of one in the other
            assert not any(t.startswith("waggle_") for t in host_tables)
            assert not {"users", "notes"} & waggle_tables
    finally:
        engine.dispose()
    assert migrate.current(target.url, schema=target.schema) == migrate.head()
    check = _alembic(host_env, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "No new upgrade operations detected" in check.stdout + check.stderr
    # Every schema compared (PostgreSQL's include_schemas): waggle_store's schema is skipped.
    every = _alembic({**host_env, "HOST_INCLUDE_SCHEMAS": "1"}, "check")
    assert every.returncode == 0, every.stdout + every.stderr
    # waggle_store's own check ignores the host's tables.
    assert migrate.check(target.url, schema=target.schema) == []


def test_waggle_migrated_after_the_hosts_own_migrations(target: Target,
                                                        host_env: dict[str, str]) -> None:
    migrate.upgrade(target.url, schema=target.schema)
    up = _alembic(host_env, "upgrade", "head", order="after")
    assert up.returncode == 0, up.stderr
    check = _alembic(host_env, "check", order="after")
    assert check.returncode == 0, check.stdout + check.stderr


def test_host_create_all_lands_in_its_own_schema(target: Target, host_env: dict[str, str]) -> None:
    from host_app.db import make_engine
    from host_app.models import HostBase

    engine = make_engine()
    try:
        with engine.begin() as conn:
            migrate.upgrade(conn, schema=target.schema)  # inside the host's transaction
            HostBase.metadata.create_all(conn)
            conn.exec_driver_sql("CREATE TABLE host_extra (id integer)")
        host_tables = _names(engine, None)
        assert {"users", "notes", "host_extra"} <= host_tables
        assert "waggle_minds" in _names(engine, target.schema)
        if target.schema is not None:
            assert not {"users", "notes", "host_extra"} & _names(engine, target.schema)
    finally:
        engine.dispose()


def _count(engine: sa.Engine, table: str) -> int:
    with engine.connect() as c:
        return int(c.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one())


def test_host_row_and_memory_commit_or_roll_back_together(target: Target,
                                                          host_env: dict[str, str]) -> None:
    from host_app.db import make_engine, open_memory
    from host_app.models import Note, User

    assert _alembic(host_env, "upgrade", "head").returncode == 0
    engine = make_engine()
    store = open_memory(engine)
    try:
        with engine.connect() as conn:
            tx = conn.begin()
            conn.execute(sa.insert(User).values(id=1, email="ada@example.com"))
            mind = store.within(conn).mind("ada")
            mind.cognify("Ada Lovelace prefers morning meetings in London.")
            conn.execute(sa.insert(Note).values(user_id=1, mind_id=mind.id, body="met Ada"))
            tx.rollback()
        assert _count(engine, "users") == 0
        assert store.list_minds() == []
        with store.read() as s:
            assert s.scalar(sa.select(sa.func.count()).select_from(FrameRow)) == 0

        with engine.connect() as conn, conn.begin():
            conn.execute(sa.insert(User).values(id=1, email="ada@example.com"))
            mind = store.within(conn).mind("ada")
            result = mind.cognify("Ada Lovelace prefers morning meetings in London.")
            conn.execute(sa.insert(Note).values(user_id=1, mind_id=mind.id, body="met Ada"))
        # No provider call inside the host's transaction: the vector waits for reconcile.
        assert result.vector_status == "pending"
        assert _count(engine, "notes") == 1
        assert [m.name for m in store.list_minds()] == ["ada"]
        assert store.reconcile().vectors_fixed == 1
        hits = store.mind("ada").search("morning meetings", limit=3)
        assert [h.frame.id for h in hits] == [result.frame_id]
    finally:
        store.close()
    # close() left the host's engine alone.
    assert _count(engine, "users") == 1
    engine.dispose()

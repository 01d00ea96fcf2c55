"""PostgreSQL least privilege: the owner migrates and grants, a DML-only runtime role runs the
store with ``upgrade=False`` and never needs (or tries) DDL."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from pg_roles import login_role

import waggle_store as ws
from tests.conftest import Target, only_postgres
from waggle_store import migrate

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def runtime(target: Target) -> Iterator[tuple[str, sa.URL]]:
    with login_role(target.url) as found:
        yield found


def _as_role(url: sa.URL, schema: str | None, sql: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'SET LOCAL search_path TO "{schema}"')
            conn.exec_driver_sql(sql)
    finally:
        engine.dispose()


@only_postgres
def test_a_dml_only_role_runs_every_operation(target: Target,
                                              runtime: tuple[str, sa.URL]) -> None:
    role, url = runtime
    migrate.upgrade(target.url, schema=target.schema)
    migrate.ensure_vector_table(target.url, "hashing", schema=target.schema)
    migrate.grant_runtime(target.url, role, schema=target.schema)

    store = ws.open_store(url, schema=target.schema, embedder="hashing", upgrade=False)
    try:
        mind = store.mind("tenant")
        kept = mind.cognify("Alice moved the billing service to Postgres")
        gone = mind.cognify("a memory the user asks to forget about lunch")
        assert kept.vector_status == "ready"
        mind.knowledge.create_entity("person", "Alice", {"role": "engineer"})
        mind.kv.set("k", {"v": 1})
        mind.awareness.add("task", "review the migration")
        hits = mind.search("billing Postgres", limit=5)
        assert [h.frame.id for h in hits][:1] == [kept.frame_id]
        mind.frames.delete(gone.frame_id)
        assert mind.frames.get(gone.frame_id) is None
        report = store.reconcile()
        assert report.vectors_fixed == 0
        store.drop_mind("tenant")
        assert store.list_minds() == []
    finally:
        store.close()

    for ddl in ("CREATE TABLE waggle_evil (id int)",
                "DROP TABLE waggle_memory_frames",
                "ALTER TABLE waggle_memory_frames DISABLE ROW LEVEL SECURITY",
                "TRUNCATE waggle_memory_frames",
                "UPDATE waggle_alembic_version SET version_num = '0001'"):
        with pytest.raises(sa.exc.ProgrammingError, match=r"permission denied|must be owner"):
            _as_role(url, target.schema, ddl)


@only_postgres
def test_a_missing_vector_table_keeps_vectors_pending_without_ddl(
        target: Target, runtime: tuple[str, sa.URL]) -> None:
    role, url = runtime
    migrate.upgrade(target.url, schema=target.schema)
    migrate.grant_runtime(target.url, role, schema=target.schema)

    store = ws.open_store(url, schema=target.schema, embedder="hashing", upgrade=False)
    try:
        result = store.mind("m").cognify("stored even though its vector table is missing")
        assert result.vector_status == "pending"
        assert "migrate vector-table" in (result.vector_error or "")
        assert "upgrade=False" in (result.vector_error or "")
        assert store.reconcile().vectors_fixed == 0

        # The owner's admin step, from the CLI; the new table gets the owner's default
        # privileges for the runtime role (grant_runtime set them).
        env = {**os.environ, "PYTHONPATH": str(REPO), "WAGGLE_DATABASE_URL": target.url,
               "WAGGLE_PG_SCHEMA": target.schema or ""}
        done = subprocess.run(
            [sys.executable, "-m", "waggle_store", "--embedder", "hashing", "migrate",
             "vector-table"], env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        assert "vector table of model" in done.stdout
        assert store.reconcile().vectors_fixed == 1
        hits = store.mind("m").search("vector table missing", limit=3)
        assert hits
        assert hits[0].frame.id == result.frame_id
    finally:
        store.close()


@only_postgres
def test_grant_runtime_refuses_a_hostile_role_name(target: Target) -> None:
    migrate.upgrade(target.url, schema=target.schema)
    with pytest.raises(ws.InvalidInputError, match="role name"):
        migrate.grant_runtime(target.url, 'x"; DROP SCHEMA public; --', schema=target.schema)

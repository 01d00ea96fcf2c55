"""Where vectors cannot be stored, the store says why at open (once), in every cognify's
``vector_error`` and in ``health()``: PostgreSQL without pgvector, pgvector available but not
installed and a role that may not install it, SQLite without sqlite-vec."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

import waggle_store as ws
from tests.integration.test_degraded_and_migrations import plain_pg_schema  # noqa: F401
from waggle_store import store_support
from waggle_store.errors import WaggleStoreWarning

from conftest import PLAIN_PG_URL, Target, only_postgres, only_sqlite


def _opened_with_warnings(*args: object, **kwargs: object) -> tuple[ws.Store, list[str]]:
    store_support._vector_warnings.clear()  # once per process: this test's own first open
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = ws.open_store(*args, **kwargs)  # type: ignore[arg-type]
    return store, [str(w.message) for w in caught if issubclass(w.category, WaggleStoreWarning)]


@pytest.mark.postgres
def test_postgres_without_pgvector_warns_and_says_why_vectors_stay_pending(
        plain_pg_schema: str) -> None:  # noqa: F811
    store, said = _opened_with_warnings(PLAIN_PG_URL, schema=plain_pg_schema, embedder="hashing")
    with store:
        assert any("pgvector" in s for s in said), said
        result = store.mind("m").cognify("a memory that cannot have a vector here")
        assert result.vector_status == "pending"
        assert result.vector_error is not None
        assert "pgvector" in result.vector_error


@only_sqlite
def test_sqlite_without_sqlite_vec_warns_and_says_why(target: Target) -> None:
    plain = sa.create_engine(target.url)  # the stdlib driver: no extension loading here
    try:
        store, said = _opened_with_warnings(plain, embedder="hashing")
        with store:
            if store.health().vector_search:
                pytest.skip("this Python's sqlite3 loads sqlite-vec")
            assert any("sqlite-vec" in s for s in said), said
            result = store.mind("m").cognify("a memory without sqlite-vec")
            assert result.vector_error is not None
            assert "sqlite" in result.vector_error
    finally:
        plain.dispose()


@pytest.fixture
def role_without_create_extension(target: Target) -> Iterator[str]:
    """A URL of a new database without pgvector installed, as a role that owns nothing but may
    create schemas there (not a superuser: CREATE EXTENSION vector is refused)."""
    admin = sa.create_engine(target.url, isolation_level="AUTOCOMMIT")
    name = "w_" + uuid.uuid4().hex[:10]
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
            conn.exec_driver_sql(f"CREATE ROLE {name} LOGIN PASSWORD 'pw' NOSUPERUSER")
            conn.exec_driver_sql(f"GRANT CREATE, CONNECT ON DATABASE {name} TO {name}")
        url = sa.make_url(target.url).set(database=name, username=name, password="pw")
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.exec_driver_sql(f"DROP ROLE IF EXISTS {name}")
        admin.dispose()


@only_postgres
def test_a_role_that_may_not_install_pgvector_opens_keyword_only(
        role_without_create_extension: str) -> None:
    store, said = _opened_with_warnings(role_without_create_extension, embedder="hashing")
    with store:
        health = store.health()
        assert health.keyword_search
        assert not health.vector_search
        assert any("CREATE EXTENSION vector" in r for r in health.reasons), health.reasons
        assert any("CREATE EXTENSION vector" in s for s in said), said
        hit = store.mind("m").cognify("kept without a vector")
        assert hit.vector_status == "pending"
        assert [h.frame.id for h in store.mind("m").search("kept without")] == [hit.frame_id]

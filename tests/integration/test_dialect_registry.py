"""The dialect registry: supported backends by name, a clear error for every other one.

Before the registry, everything that was not SQLite was taken for Postgres: a ``mysql://`` URL
failed on a missing driver module, and an Engine of another backend got Postgres SQL.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

import waggle_store as ws
from waggle_store import migrate
from waggle_store.dialects import (
    DialectSpec,
    dialect_spec,
    get_adapter,
    register_dialect,
    spec_for_url,
    supported_dialects,
)
from waggle_store.engine import create_engine

from conftest import Target, only_postgres

PASSWORD = "s3cret-pw"
UNSUPPORTED_URLS = [
    f"mysql://u:{PASSWORD}@db.example/app",
    f"mysql+pymysql://u:{PASSWORD}@db.example/app",
    "duckdb:///x.duckdb",
    f"mssql+pyodbc://u:{PASSWORD}@db.example/app",
]
#: Driver modules of those URLs: none may be imported on the way to the error.
DRIVER_MODULES = ("MySQLdb", "pymysql", "duckdb", "duckdb_engine", "pyodbc")


def _drivers_loaded() -> set[str]:
    return {name for name in DRIVER_MODULES if name in sys.modules}


def _assert_clear(error: ws.UnsupportedDialectError, url: str) -> None:
    message = str(error)
    assert isinstance(error, ws.InvalidInputError)
    assert PASSWORD not in message
    assert repr(make_url(url).drivername) in message  # names what was asked for
    for name in supported_dialects():
        assert name in message  # and what would work


@pytest.mark.parametrize("url", UNSUPPORTED_URLS)
def test_open_store_refuses_another_backend_before_importing_its_driver(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative duckdb path would land here
    before = _drivers_loaded()
    with pytest.raises(ws.UnsupportedDialectError) as caught:
        ws.open_store(url)
    _assert_clear(caught.value, url)
    assert _drivers_loaded() == before
    assert list(tmp_path.iterdir()) == []  # nothing was created


@pytest.mark.parametrize("url", UNSUPPORTED_URLS)
def test_engine_and_migrations_refuse_another_backend(url: str) -> None:
    with pytest.raises(ws.UnsupportedDialectError) as caught:
        create_engine(url)
    _assert_clear(caught.value, url)
    # Not wrapped into "migration failed": the caller's URL is the problem, not a migration.
    with pytest.raises(ws.UnsupportedDialectError):
        migrate.upgrade(url)


def test_an_engine_of_another_backend_gets_no_adapter() -> None:
    """A host's Engine of another backend: refused, not handed the Postgres adapter. (The Engine
    never connects; ``module`` only spares SQLAlchemy importing a MySQL driver.)"""
    engine = sa.create_engine(f"mysql+pymysql://u:{PASSWORD}@db.example/app", module=sqlite3)
    try:
        with pytest.raises(ws.UnsupportedDialectError) as caught:
            get_adapter(engine)
        assert "'mysql'" in str(caught.value)
        assert PASSWORD not in str(caught.value)
    finally:
        engine.dispose()


def test_supported_backends_and_their_url_spellings() -> None:
    assert supported_dialects() == ("postgresql", "sqlite")
    assert spec_for_url(make_url("sqlite:///x.db")) is dialect_spec("sqlite")
    for url in ("postgresql://u@h/db", "postgresql+psycopg://u@h/db", "postgres://u@h/db"):
        assert spec_for_url(make_url(url)) is dialect_spec("postgresql"), url
    with pytest.raises(ws.UnsupportedDialectError):
        dialect_spec("mysql")


def test_a_name_cannot_be_registered_twice_with_another_spec() -> None:
    spec = dialect_spec("sqlite")
    register_dialect("sqlite", spec)  # the same spec again: harmless
    other = DialectSpec(adapter=spec.adapter, create_engine=spec.create_engine,
                        example_url=spec.example_url)
    with pytest.raises(ValueError, match="already registered"):
        register_dialect("sqlite", other)
    assert dialect_spec("sqlite") is spec


def test_each_backend_gets_its_own_adapter_and_traits(engine: sa.Engine, target: Target) -> None:
    """The spec's traits describe the migrated database: where a backend has schemas, the
    version table lives in the store's schema; where it has none, in the database itself."""
    spec = dialect_spec(engine.dialect.name)
    adapter = get_adapter(engine)
    assert type(adapter) is spec.adapter
    assert adapter.dialect == engine.dialect.name
    schema = target.schema if spec.has_schemas else None
    assert sa.inspect(engine).has_table(migrate.VERSION_TABLE, schema=schema)
    assert migrate.current(engine, schema=target.schema) == migrate.head()
    assert migrate.check(engine, schema=target.schema) == []


@only_postgres  # the one backend with schemas, hence a search path to keep
def test_check_leaves_the_connections_search_path_alone(engine: sa.Engine, target: Target) -> None:
    """``check`` enters the store's schema for its own transaction only: a host's pooled
    connection keeps the search path it had (a guest never changes the host's session)."""
    assert dialect_spec(engine.dialect.name).has_schemas
    with engine.connect() as conn:
        conn.exec_driver_sql("SET search_path TO public")
        conn.commit()
        assert migrate.check(conn, schema=target.schema) == []
        conn.commit()
        assert conn.exec_driver_sql("SHOW search_path").scalar() == "public"

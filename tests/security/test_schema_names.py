"""Schema names are checked on every path before any SQL: a URL's store, a host's Engine or
Connection, ``migrate.upgrade``/``check``/``current``/``downgrade`` and ``open_store``."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

import waggle_store as ws
from tests.conftest import Target, only_postgres
from waggle_store import migrate

HOSTILE = 'x";COMMIT;CREATE TABLE waggle_pwned (id int);--'


def _pwned_exists(engine: sa.Engine) -> bool:
    with engine.connect() as conn:
        return bool(conn.exec_driver_sql(
            "SELECT count(*) FROM pg_class WHERE relname = 'waggle_pwned'").scalar())


@only_postgres
def test_hostile_schema_refused_on_every_path(target: Target) -> None:
    engine = sa.create_engine(target.url)
    try:
        with engine.connect() as conn:
            for call in (
                lambda: migrate.upgrade(engine, schema=HOSTILE),
                lambda: migrate.upgrade(conn, schema=HOSTILE),
                lambda: migrate.upgrade(target.url, schema=HOSTILE),
                lambda: migrate.downgrade(engine, "base", schema=HOSTILE),
                lambda: migrate.check(engine, schema=HOSTILE),
                lambda: migrate.current(conn, schema=HOSTILE),
                lambda: ws.open_store(engine, schema=HOSTILE, embedder=None),
                lambda: ws.open_store(target.url, schema=HOSTILE, embedder=None),
            ):
                with pytest.raises(ws.InvalidInputError, match="schema name"):
                    call()
            assert not conn.in_transaction()  # nothing was sent on the caller's connection
        assert not _pwned_exists(engine)
    finally:
        engine.dispose()


@only_postgres
def test_schema_from_the_environment_is_checked(target: Target,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAGGLE_PG_SCHEMA", HOSTILE)
    engine = sa.create_engine(target.url)
    try:
        with pytest.raises(ws.InvalidInputError, match="schema name"):
            migrate.upgrade(engine)
        assert not _pwned_exists(engine)
    finally:
        engine.dispose()

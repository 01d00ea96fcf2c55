"""Postgres engines and schemas: psycopg 3, a ping after idle, waggle_store's own schema.

Every waggle_store object lives in its own schema (``StoreConfig.schema``); the engine puts it
first on the ``search_path`` of its connections so unqualified names resolve there, with
``public`` after it for the pgvector types when the extension lives there.
"""

from __future__ import annotations

import math
import re
import time
from functools import partial
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import Connection
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from waggle_store.config import StoreConfig
from waggle_store.dialects.info import engine_info
from waggle_store.errors import InvalidInputError
from waggle_store.models.base import schema_translate_map

#: A plain lower-case identifier: it is written into ``options`` and DDL, never bound.
SCHEMA_RE: Final = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: The setting a bound store's transactions carry (its mind's id), read by the row-level
#: security policies of every table holding mind rows.
BOUND_MIND_SETTING: Final = "waggle.bound_mind"

#: A pooled connection checked in less than this many seconds ago is handed out without a ping
#: (HikariCP's ``aliveBypassWindowMs`` is the same 500 ms): SQLAlchemy's ``pool_pre_ping`` pings
#: on every checkout, a round trip that was a third of a default search's. A connection lost
#: inside the window fails its first statement instead; that invalidates it and the pool's
#: older connections, and a search, which only reads, runs once more on a fresh one
#: (:mod:`waggle_store.search.engine`).
PING_AFTER_IDLE: Final = 0.5
_LAST_USED: Final = "waggle_last_used"


def _ping_when_idle(engine: Engine) -> None:
    """``pool_pre_ping`` (the pessimistic check of SQLAlchemy's "Disconnect Handling") for a
    connection idle longer than :data:`PING_AFTER_IDLE`: a ping that finds it lost raises
    ``InvalidatePoolError``, on which the pool discards it and every older pooled connection
    (as ``pool_pre_ping`` does) and hands out a fresh one."""
    dialect = engine.dialect

    def used(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info[_LAST_USED] = time.monotonic()

    def checkout(dbapi_connection: Any, record: ConnectionPoolEntry,
                 proxy: PoolProxiedConnection) -> None:
        last = record.info.get(_LAST_USED)
        if last is not None and time.monotonic() - last < PING_AFTER_IDLE:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                raise sa_exc.InvalidatePoolError(f"ping after idle failed: {exc}") from exc
            raise

    sa.event.listen(engine, "connect", used)  # a fresh connection needs no ping
    sa.event.listen(engine, "checkin", used)
    sa.event.listen(engine, "checkout", checkout)


def check_schema_name(schema: object) -> str:
    """``schema`` if it is a plain lower-case identifier, else :class:`InvalidInputError`
    (before any SQL: the name is written into connection options and DDL). Every path that
    takes a schema name (URL, Engine, Connection, ``migrate``, ``open_store``) calls this."""
    if not isinstance(schema, str) or not SCHEMA_RE.match(schema):
        raise InvalidInputError(
            f"Postgres schema name must match {SCHEMA_RE.pattern}, got {schema!r}"
        )
    return schema


def _quoted(connection: Connection, schema: str) -> str:
    """The schema name checked and quoted by the dialect's own identifier preparer."""
    return connection.dialect.identifier_preparer.quote_schema(check_schema_name(schema))


def create_postgres_engine(url: sa.URL, config: StoreConfig, /, **kwargs: Any) -> Engine:
    """A psycopg engine whose connections search ``config.schema`` first."""
    check_schema_name(config.schema)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    connect_args = dict(kwargs.pop("connect_args", {}))
    # TimeZone=UTC first (a host's own ``options`` may set another): the store's times are
    # timestamptz, the same instants in any session zone, and in UTC psycopg returns them with
    # ``datetime.UTC`` itself, which the models' UTCDateTime hands back as is (converting every
    # time read from a ZoneInfo zone cost a search ~0.15 ms).
    if config.prepared_statements:
        connect_args["options"] = (
            f"-c TimeZone=UTC {connect_args.get('options', '')} "
            f"-c search_path={config.schema},public "
            f"-c lock_timeout={int(config.lock_timeout_ms)}"
        )
    else:
        # Behind a transaction-pooling PgBouncer: no server-side prepared statements, and no
        # startup options (PgBouncer refuses them): every transaction sets its own settings.
        connect_args["prepare_threshold"] = None
    # libpq counts whole seconds and treats less than 2 as 2.
    connect_args.setdefault("connect_timeout", max(2, math.ceil(config.connect_timeout)))
    # The models' tables (schema "waggle") land in this engine's schema, for a host's ORM too.
    options = {"schema_translate_map": schema_translate_map(config.schema),
               **kwargs.pop("execution_options", {})}
    engine = sa.create_engine(url, connect_args=connect_args, execution_options=options,
                              **kwargs)
    _ping_when_idle(engine)
    if not config.prepared_statements:
        sa.event.listen(engine, "begin", partial(_set_per_transaction, schema=config.schema,
                                                      lock_timeout_ms=config.lock_timeout_ms))
    info = engine_info(engine)
    info.driver = engine.dialect.driver
    info.schema = config.schema
    info.configured = True
    return engine


def _set_per_transaction(conn: Connection, *, schema: str, lock_timeout_ms: int) -> None:
    """What the startup options set on a connection of its own, for this transaction only:
    behind a transaction pooler the next transaction may run on another server connection."""
    conn.exec_driver_sql(
        "SELECT set_config('search_path', %(path)s, true), "
        "set_config('TimeZone', 'UTC', true), set_config('lock_timeout', %(lock)s, true)",
        {"path": f'"{schema}", public', "lock": f"{int(lock_timeout_ms)}ms"},
    )


def create_schema(connection: Connection, schema: str) -> None:
    connection.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {_quoted(connection, schema)}")


def lock_schema(connection: Connection, schema: str) -> None:
    """Serialise migrations of one schema across processes until the transaction ends:
    ``CREATE SCHEMA IF NOT EXISTS`` and the first ``CREATE TABLE`` race otherwise (unique
    violations on ``pg_namespace``), and a second migrator must see the first one's version."""
    if engine_info(connection.engine).configured:
        # A migrator waits for another's migration as long as it takes, not lock_timeout.
        connection.exec_driver_sql("SET LOCAL lock_timeout = 0")
    connection.execute(
        sa.text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"waggle_store:{schema}"}
    )


def enter_schema(connection: Connection, schema: str) -> str:
    """Put ``schema`` first on the ``search_path`` for the current transaction only and return
    the previous ``search_path``, which :func:`leave_schema` puts back: a caller's transaction
    (a host's Alembic run) must not keep waggle_store's schema as its default."""
    previous = str(connection.exec_driver_sql("SELECT current_setting('search_path')").scalar())
    connection.exec_driver_sql(f"SET LOCAL search_path TO {_quoted(connection, schema)}, public")
    return previous


def leave_schema(connection: Connection, previous: str) -> None:
    """Restore the ``search_path`` :func:`enter_schema` returned (for the rest of the
    transaction; the session's own value comes back at its end in any case)."""
    connection.execute(sa.text("SELECT set_config('search_path', :p, true)"), {"p": previous})


def bind_mind(connection: Connection, mind_id: int) -> None:
    """Set the bound mind for the current transaction only (``set_config(..., true)``): the
    row-level security policies then show and accept only that mind's rows. Transaction-local,
    so it never outlives the transaction on a pooled connection, and behind PgBouncer's
    transaction pooling it travels with the transaction."""
    connection.execute(sa.text("SELECT set_config(:name, :m, true)"),
                       {"name": BOUND_MIND_SETTING, "m": str(int(mind_id))})

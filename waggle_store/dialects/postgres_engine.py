"""Postgres engines and schemas: psycopg 3, a ping after idle, waggle_store's own schema.

Every waggle_store object lives in its own schema (``StoreConfig.schema``); the engine puts it
first on the ``search_path`` of its connections so unqualified names resolve there, with
``public`` after it for the pgvector types when the extension lives there.
"""

from __future__ import annotations

import math
import re
import time
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
#: pgvector's search settings for the vector lane, set once per connection at its start (a
#: startup option, like the ``search_path``): the lane's default page (``limit=20``, over-fetched
#: to 40) then needs no ``set_config`` statement, a round trip per search. Before pgvector's
#: library is loaded in a session they are placeholders, which it adopts when it loads; a
#: server without pgvector keeps them as inert placeholders. A host's own engine lacks them,
#: and its searches set them per transaction as before (:mod:`waggle_store.dialects.postgres`).
HNSW_EF_SEARCH: Final = 40
HNSW_OPTIONS: Final = (
    f"-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search={HNSW_EF_SEARCH}"
)

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


def create_postgres_engine(url: sa.URL, config: StoreConfig, /, **kwargs: Any) -> Engine:
    """A psycopg engine whose connections search ``config.schema`` first."""
    if not SCHEMA_RE.match(config.schema):
        raise InvalidInputError(
            f"Postgres schema name must match {SCHEMA_RE.pattern}, got {config.schema!r}"
        )
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    connect_args = dict(kwargs.pop("connect_args", {}))
    # TimeZone=UTC first (a host's own ``options`` may set another): the store's times are
    # timestamptz, the same instants in any session zone, and in UTC psycopg returns them with
    # ``datetime.UTC`` itself, which the models' UTCDateTime hands back as is (converting every
    # time read from a ZoneInfo zone cost a search ~0.15 ms).
    connect_args["options"] = (
        f"-c TimeZone=UTC {connect_args.get('options', '')} "
        f"-c search_path={config.schema},public -c lock_timeout={int(config.lock_timeout_ms)} "
        f"{HNSW_OPTIONS}"
    )
    # libpq counts whole seconds and treats less than 2 as 2.
    connect_args.setdefault("connect_timeout", max(2, math.ceil(config.connect_timeout)))
    # The models' tables (schema "waggle") land in this engine's schema, for a host's ORM too.
    options = {"schema_translate_map": schema_translate_map(config.schema),
               **kwargs.pop("execution_options", {})}
    engine = sa.create_engine(url, connect_args=connect_args, execution_options=options,
                              **kwargs)
    _ping_when_idle(engine)
    info = engine_info(engine)
    info.driver = engine.dialect.driver
    info.schema = config.schema
    info.configured = True
    info.hnsw_options = True
    return engine


def create_schema(connection: Connection, schema: str) -> None:
    connection.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


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
    connection.exec_driver_sql(f'SET LOCAL search_path TO "{schema}", public')
    return previous


def leave_schema(connection: Connection, previous: str) -> None:
    """Restore the ``search_path`` :func:`enter_schema` returned (for the rest of the
    transaction; the session's own value comes back at its end in any case)."""
    connection.execute(sa.text("SELECT set_config('search_path', :p, true)"), {"p": previous})

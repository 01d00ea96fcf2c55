"""Postgres engines and schemas: psycopg 3, ``pool_pre_ping``, waggle_store's own schema.

Every waggle_store object lives in its own schema (``StoreConfig.schema``); the engine puts it
first on the ``search_path`` of its connections so unqualified names resolve there, with
``public`` after it for the pgvector types when the extension lives there.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

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


def create_postgres_engine(url: sa.URL, config: StoreConfig, /, **kwargs: Any) -> Engine:
    """A psycopg engine whose connections search ``config.schema`` first."""
    if not SCHEMA_RE.match(config.schema):
        raise InvalidInputError(
            f"Postgres schema name must match {SCHEMA_RE.pattern}, got {config.schema!r}"
        )
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    connect_args = dict(kwargs.pop("connect_args", {}))
    connect_args["options"] = (
        f"{connect_args.get('options', '')} -c search_path={config.schema},public "
        f"{HNSW_OPTIONS}".strip()
    )
    # libpq counts whole seconds and treats less than 2 as 2.
    connect_args.setdefault("connect_timeout", max(2, math.ceil(config.connect_timeout)))
    # The models' tables (schema "waggle") land in this engine's schema, for a host's ORM too.
    options = {"schema_translate_map": schema_translate_map(config.schema),
               **kwargs.pop("execution_options", {})}
    engine = sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args,
                              execution_options=options, **kwargs)
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

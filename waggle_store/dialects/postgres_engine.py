"""Postgres engines and schemas: psycopg 3, ``pool_pre_ping``, waggle_store's own schema.

Every waggle_store object lives in its own schema (``StoreConfig.schema``); the engine puts it
first on the ``search_path`` of its connections so unqualified names resolve there, with
``public`` after it for the pgvector types when the extension lives there.
"""

from __future__ import annotations

import re
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from waggle_store.config import StoreConfig
from waggle_store.dialects.info import engine_info
from waggle_store.errors import InvalidInputError

#: A plain lower-case identifier: it is written into ``options`` and DDL, never bound.
SCHEMA_RE: Final = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


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
        f"{connect_args.get('options', '')} -c search_path={config.schema},public".strip()
    )
    engine = sa.create_engine(url, pool_pre_ping=True, connect_args=connect_args, **kwargs)
    info = engine_info(engine)
    info.driver = engine.dialect.driver
    info.schema = config.schema
    return engine


def create_schema(connection: Connection, schema: str) -> None:
    connection.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


def enter_schema(connection: Connection, schema: str) -> None:
    """``SET LOCAL``: the setting ends with the transaction, the pooled connection keeps its own."""
    connection.exec_driver_sql(f'SET LOCAL search_path TO "{schema}", public')

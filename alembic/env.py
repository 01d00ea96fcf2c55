"""Alembic environment for waggle_store.

The URL comes from a caller's connection (``config.attributes["connection"]``, set by
``waggle_store.migrate``), else ``-x url=...``, else WAGGLE_DATABASE_URL. It is never printed.
No SQL runs before ``context.begin_transaction()``: SQL issued earlier opens an implicit
transaction that Alembic then never commits, and the upgrade silently does nothing.
"""

from __future__ import annotations

import os

import sqlalchemy as sa

from alembic import context
from waggle_store.config import StoreConfig
from waggle_store.dialects import spec_of
from waggle_store.engine import create_engine
from waggle_store.errors import MigrationError
from waggle_store.migrate import VERSION_TABLE, include_name, include_object
from waggle_store.models import Base

config = context.config
x_args = context.get_x_argument(as_dictionary=True)


def _schema() -> str:
    return str(
        config.attributes.get("schema")
        or x_args.get("schema")
        or os.environ.get("WAGGLE_PG_SCHEMA")
        or StoreConfig().schema
    )


def _run(connection: sa.Connection) -> None:
    # The dialect's traits, not its name: an unregistered backend raises UnsupportedDialectError
    # here, before any SQL (and so before Alembic's transaction).
    spec = spec_of(connection)
    schema = _schema() if spec.has_schemas else None
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        version_table_schema=schema,
        include_name=include_name,
        include_object=include_object,
        render_as_batch=spec.batch_alter,
        transactional_ddl=True,
        compare_type=True,
    )
    context.config.attributes["waggle_schema"] = schema
    with context.begin_transaction():
        if spec.schemas is not None and schema is not None:
            spec.schemas.create(connection, schema)
            spec.schemas.enter(connection, schema)
        context.run_migrations()


def main() -> None:
    if context.is_offline_mode():
        raise MigrationError("waggle_store migrations run online only (they inspect the server)")
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = x_args.get("url") or os.environ.get("WAGGLE_DATABASE_URL")
    if not url:
        raise MigrationError(
            "no database URL: pass `-x url=...` or set WAGGLE_DATABASE_URL"
        )
    engine = create_engine(url, config=StoreConfig.from_env(url, _schema()))
    try:
        with engine.connect() as conn:
            _run(conn)
    finally:
        engine.dispose()


main()

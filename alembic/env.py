"""Alembic environment for waggle_store (``alembic upgrade head`` from this repository).

The URL comes from a caller's connection (``config.attributes["connection"]``), else
``-x url=...``, else WAGGLE_DATABASE_URL; it is never printed. The migration itself is
:func:`waggle_store.migrate.run_in_context`, the same body ``waggle_store.migrate.upgrade`` runs
from code (lock, schema, search_path put back). A host application does not point its own
Alembic at this file: it calls ``waggle_store.migrate.upgrade(connection)`` from its ``env.py``
(see docs/use-in-your-app.md).
"""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context
from waggle_store.config import StoreConfig
from waggle_store.engine import create_engine
from waggle_store.errors import MigrationError
from waggle_store.migrate import run_in_context

config = context.config
x_args = context.get_x_argument(as_dictionary=True)
if config.config_file_name is not None and config.attributes.get("connection") is None:
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _schema() -> str | None:
    return config.attributes.get("schema") or x_args.get("schema") or None


def main() -> None:
    if context.is_offline_mode():
        raise MigrationError("waggle_store migrations run online only (they inspect the server)")
    connection = config.attributes.get("connection")
    if connection is not None:
        run_in_context(context, connection, _schema())
        return
    url = x_args.get("url") or os.environ.get("WAGGLE_DATABASE_URL")
    if not url:
        raise MigrationError("no database URL: pass `-x url=...` or set WAGGLE_DATABASE_URL")
    engine = create_engine(url, config=StoreConfig.from_env(None, _schema()))
    try:
        with engine.connect() as conn:
            run_in_context(context, conn, _schema())
            if conn.in_transaction():
                conn.commit()
    finally:
        engine.dispose()


main()

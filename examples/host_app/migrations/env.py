"""The host's Alembic environment: waggle_store's schema first, then the host's own migrations,
in one transaction on one connection.

``migrate.upgrade(connection)`` runs inside the transaction ``context.begin_transaction()``
opened (it commits with the host's), leaves the host's ``alembic.context`` as it was and puts the
``search_path`` back, so the host's tables land in the host's schema. ``include_object`` /
``include_name`` make ``alembic check`` ignore every waggle_store object.
"""

from __future__ import annotations

import os

from host_app.db import make_engine, waggle_schema
from host_app.models import HostBase

from alembic import context
from waggle_store import migrate

ORDER = os.environ.get("HOST_WAGGLE_ORDER", "before")  # or "after" the host's own migrations
#: Compare every schema of the database (PostgreSQL): the filters skip waggle_store's.
INCLUDE_SCHEMAS = os.environ.get("HOST_INCLUDE_SCHEMAS") == "1"


def run() -> None:
    engine = make_engine()
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=HostBase.metadata,
                include_object=migrate.include_object,
                include_name=migrate.include_name,
                include_schemas=INCLUDE_SCHEMAS,
            )
            with context.begin_transaction():
                if ORDER == "before":
                    migrate.upgrade(connection, schema=waggle_schema())
                context.run_migrations()
                if ORDER == "after":
                    migrate.upgrade(connection, schema=waggle_schema())
                # The vector table of the app's embedding model: the app opens its store with
                # upgrade=False, which runs no DDL (a runtime role may not), so it is made here.
                migrate.ensure_vector_table(connection, "hashing", schema=waggle_schema())
    finally:
        engine.dispose()


run()

"""Which schema revision a database is at, answered without importing Alembic.

Opening a store that is already migrated is the common case, and it should cost one query:
``SELECT version_num FROM waggle_alembic_version``, compared with :data:`HEAD_REVISION`. Only
when that does not say "at head" (a new database, an older schema, a version table that cannot
be read) does ``open_store`` import :mod:`waggle_store.migrate` and let Alembic decide, under its
locks. Importing Alembic (and Mako, and every Alembic dialect module) costs about 80 ms, a
tenth of a cold start.

:data:`HEAD_REVISION` is written by hand, so it can fall behind the migration scripts; a test
(``tests/integration/test_cold_start.py``) asserts it equals Alembic's head, and a new
migration must update it (if it did not, stores at the old head would be opened without being
upgraded).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

#: The revision of the newest migration in ``alembic/versions`` (Alembic's single head).
HEAD_REVISION = "0015"

#: Alembic's version table for waggle_store's migrations (in the store's schema on PostgreSQL).
VERSION_TABLE = "waggle_alembic_version"


def version_table(schema: str | None) -> sa.TableClause:
    """The version table as a Core construct (quoted correctly for any schema name)."""
    return sa.table(VERSION_TABLE, sa.column("version_num", sa.String), schema=schema)


def read_revisions(conn: sa.Connection, schema: str | None) -> list[str] | None:
    """The revisions recorded in the version table (one row at a single head), or None when
    the table cannot be read: it does not exist yet, or the query failed. None means "ask
    Alembic", never "at head"; a caller that needs the failure itself runs Alembic, which
    reports it. On PostgreSQL the failed statement aborts ``conn``'s transaction: use a
    connection of its own and close it."""
    try:
        rows = conn.execute(sa.select(version_table(schema).c.version_num)).scalars().all()
    except sa_exc.DBAPIError:
        return None
    return sorted(str(r) for r in rows)


def describe(revisions: list[str] | None) -> str | None:
    """The revision for messages and ``health()``: None for none, several joined by commas."""
    return ",".join(revisions) if revisions else None


def at_head(revisions: list[str] | None) -> bool:
    """Whether the database is exactly at :data:`HEAD_REVISION` (nothing to migrate)."""
    return revisions == [HEAD_REVISION]


__all__ = ["HEAD_REVISION", "VERSION_TABLE", "at_head", "describe", "read_revisions",
           "version_table"]

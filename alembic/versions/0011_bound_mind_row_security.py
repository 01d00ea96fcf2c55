"""row-level security: a bound store's connections see only its mind's rows

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05 21:30:00.000000

PostgreSQL only. Every waggle_store table of the schema that holds mind rows (a ``mind_id``
column: frames, knowledge, sessions, awareness, identity, kv, usage, harvest sources, the
per-mind model choice, each ``frame_vectors_N`` table; and ``waggle_minds`` itself by ``id``)
gets ROW LEVEL SECURITY, enabled but not forced (the owner, the role that migrates, is exempt;
the runtime roles a deployment grants DML to are held to it), with one policy:
every row while ``waggle.bound_mind`` is unset or empty (an unbound store, a migration, an
admin's psql), only that mind's rows, for reads and writes alike, while it is set. A store
opened with ``bound_mind=NAME`` sets it at the start of each of its transactions
(``set_config(..., true)``, which behind PgBouncer's transaction pooling stays with the
transaction). Vector tables created later get the same policy when they are created.

The tables are found in the catalog rather than listed here, so the tables of every earlier
revision are covered whatever their order; a later revision that adds a table with mind rows
adds the policy itself (``waggle_store.dialects.postgres_maint.rls_statements``).
SQLite has no roles and no row security: a bound store is confined by the library alone there.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from waggle_store.dialects.postgres_maint import RLS_POLICY, rls_statements

revision: str = '0011'
down_revision: str | Sequence[str] | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MIND_TABLES = sa.text(
    "SELECT c.relname, a.attname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
    "WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
    "AND c.relkind IN ('r', 'p') "
    "AND NOT a.attisdropped AND c.relname LIKE 'waggle\\_%' "
    "AND ((a.attname = 'mind_id' AND c.relname <> 'waggle_minds') "
    "     OR (c.relname = 'waggle_minds' AND a.attname = 'id')) "
    "ORDER BY c.relname"
)
_WITH_POLICY = sa.text(
    "SELECT c.relname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid "
    "WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
    "AND p.polname = :policy "
    "ORDER BY c.relname"
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == 'sqlite':
        return
    quote = bind.dialect.identifier_preparer.quote
    for table, column in bind.execute(_MIND_TABLES).all():
        for statement in rls_statements(quote(table), quote(column)):
            op.execute(statement)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == 'sqlite':
        return
    quote = bind.dialect.identifier_preparer.quote
    for (table,) in bind.execute(_WITH_POLICY, {"policy": RLS_POLICY}).all():
        op.execute(f"DROP POLICY IF EXISTS {RLS_POLICY} ON {quote(table)}")
        op.execute(f"ALTER TABLE {quote(table)} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {quote(table)} DISABLE ROW LEVEL SECURITY")

"""row-level security through the parent row: frame manifests, staging, entity mentions

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06 03:00:00.000000

PostgreSQL only. The bound-mind policy of revision 0011 covers the tables with a ``mind_id``
column; three tables of mind rows have none, and a bound store's runtime role could read and
write other minds' rows there: ``waggle_frame_embeddings`` (each frame's vector manifest),
``waggle_frame_embedding_staging`` (a model switch's staged vectors) and
``waggle_entity_mentions``. Each gets ROW LEVEL SECURITY (enabled, not forced, as in 0011) and a
policy of the same name and meaning said through its parent: every row while
``waggle.bound_mind`` is unset or empty; while it is set, only rows whose frame (and, for a
mention written, whose entity as well) belongs to that mind
(``waggle_store.dialects.postgres_rls``). ``waggle_conversation_messages`` has had such a
policy since revision 0012. The store-wide tables (the version table, ``waggle_store_meta``,
``waggle_embedding_models``, ``waggle_embedding_usage``, ``waggle_agents``) hold no mind's rows
and stay without row security.

SQLite has no roles and no row security: nothing to do there.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from waggle_store.dialects.postgres_rls import (
    CHILD_TABLES,
    child_rls_statements,
    drop_child_rls_statements,
)

revision: str = '0015'
down_revision: str | Sequence[str] | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        return
    for table in CHILD_TABLES:
        for statement in child_rls_statements(table):
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        return
    for table in CHILD_TABLES:
        for statement in drop_child_rls_statements(table):
            op.execute(statement)

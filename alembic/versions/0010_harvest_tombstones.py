"""forgotten harvested memories leave a tombstone

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05 21:00:00.000000

A harvest sync skips the memories a mind already holds; a memory the user deleted was no longer
held, so the next sync of its source (once the source's file had changed) stored it again.
``waggle_harvest_tombstones`` keeps (mind, source, content hash) of every deleted frame of a
harvest session (``harvest:<source>``), and a sync skips those hashes of that source.

The rows are written by an ``AFTER DELETE`` trigger on ``waggle_memory_frames``, so every way a
frame is deleted (the API, the MCP ``forget_memory`` tool, the CLI, raw SQL) leaves one. A frame
deleted because its whole mind is dropped leaves none: the mind row is gone by then (the
``EXISTS`` test), and the tombstones of a dropped mind are dropped with it (``ON DELETE
CASCADE``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | Sequence[str] | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = 'waggle_harvest_tombstones'
_TRIGGER = 'waggle_harvest_tombstone_ad'
_FUNCTION = 'waggle_harvest_tombstone()'
_PREFIX = "'harvest:'"

_SQLITE_TRIGGER = (
    f"CREATE TRIGGER IF NOT EXISTS {_TRIGGER} AFTER DELETE ON waggle_memory_frames "
    f"WHEN substr(old.gop_id, 1, 8) = {_PREFIX} BEGIN "
    f"INSERT OR IGNORE INTO {_TABLE} (mind_id, source, content_hash, forgotten_at) "
    "SELECT old.mind_id, substr(old.gop_id, 9), old.content_hash, "
    "strftime('%Y-%m-%d %H:%M:%f', 'now') || '000' "
    "WHERE EXISTS (SELECT 1 FROM waggle_minds WHERE id = old.mind_id); END"
)
_PG_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {_FUNCTION} RETURNS trigger LANGUAGE plpgsql "
    "SET search_path FROM CURRENT AS $$ BEGIN "
    f"IF left(OLD.gop_id, 8) = {_PREFIX} "
    "AND EXISTS (SELECT 1 FROM waggle_minds WHERE id = OLD.mind_id) THEN "
    f"INSERT INTO {_TABLE} (mind_id, source, content_hash, forgotten_at) "
    "VALUES (OLD.mind_id, substr(OLD.gop_id, 9), OLD.content_hash, now()) "
    "ON CONFLICT DO NOTHING; "
    "END IF; RETURN NULL; END $$"
)
_PG_TRIGGER = (
    f"CREATE TRIGGER {_TRIGGER} AFTER DELETE ON waggle_memory_frames "
    f"FOR EACH ROW EXECUTE FUNCTION {_FUNCTION}"
)


def upgrade() -> None:
    op.create_table(
        _TABLE,
        sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('source', sa.String(length=255), nullable=False),
        sa.Column('content_hash', sa.String(length=64), nullable=False),
        sa.Column('forgotten_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['mind_id'], ['waggle_minds.id'],
                                name='fk_waggle_harvest_tombstones_mind_id', ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('mind_id', 'source', 'content_hash',
                                name='pk_waggle_harvest_tombstones'),
    )
    if op.get_bind().dialect.name == 'sqlite':
        op.execute(_SQLITE_TRIGGER)
        return
    op.execute(_PG_FUNCTION)
    op.execute(_PG_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        op.execute(f"DROP TRIGGER IF EXISTS {_TRIGGER}")
    else:
        op.execute(f"DROP TRIGGER IF EXISTS {_TRIGGER} ON waggle_memory_frames")
        op.execute(f"DROP FUNCTION IF EXISTS {_FUNCTION}")
    op.drop_table(_TABLE)

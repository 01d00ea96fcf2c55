"""memory frames carry the caller's metadata: a JSON object, filtered by search

Revision ID: 0014
Revises: 0009
Create Date: 2026-12-05 22:00:00.000000

``waggle_memory_frames.metadata``: NULL for none, else a JSON object (at most 64 KiB, validated
by the library before it is written). PostgreSQL stores it as ``jsonb`` with a GIN index
(``jsonb_path_ops``), which answers the search filter's containment test ``metadata @> {...}``;
SQLite stores the JSON text, which the filter reads with ``json_each`` on the frames a lane
already narrowed to its mind (measured in ``benchmarks/filtered_search.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0014'
down_revision: str | Sequence[str] | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = 'ix_waggle_memory_frames_metadata'


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('ALTER TABLE waggle_memory_frames ADD COLUMN metadata TEXT')
        return
    op.execute('ALTER TABLE waggle_memory_frames ADD COLUMN IF NOT EXISTS metadata jsonb')
    op.execute(f'CREATE INDEX IF NOT EXISTS {_INDEX} ON waggle_memory_frames '
               'USING gin (metadata jsonb_path_ops)')


def downgrade() -> None:
    if op.get_bind().dialect.name != 'sqlite':
        op.execute(f'DROP INDEX IF EXISTS {_INDEX}')
    op.execute('ALTER TABLE waggle_memory_frames DROP COLUMN metadata')

"""memory lifecycle: a frame's salience (consolidation) and a harvest source's kind

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 16:50:00.000000

Both columns are nullable additions, so the upgrade is a plain ``ADD COLUMN`` on both dialects
(no table rebuild: SQLite's FTS triggers on ``memory_frames`` stay as they are).

* ``memory_frames.salience``: the value :func:`waggle_store.pipeline.consolidate.consolidate`
  last computed for the frame; NULL = never consolidated.
* ``harvest_sources.kind``: which adapter reads the source (chatgpt, claude, markdown, jsonl);
  NULL for rows imported from a Waggle ``.mind`` file, where ``source`` names the kind.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = '0003'
down_revision: str | Sequence[str] | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('memory_frames', sa.Column('salience', sa.Float(), nullable=True))
    op.add_column('harvest_sources', sa.Column('kind', sa.String(length=20), nullable=True))


def downgrade() -> None:
    op.drop_column('harvest_sources', 'kind')
    op.drop_column('memory_frames', 'salience')

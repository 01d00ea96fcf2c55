"""how each stored vector was made from its frame's text

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 16:00:00.000000

A local model now embeds a memory as the mean of its sentences' vectors (the ``"sentences"``
text form, ``waggle_store/embeddings/sentences.py``); every vector stored before was one
embedding of the whole text. ``waggle_frame_embeddings.text_form`` records which, so that
``store.reconcile()`` re-embeds the vectors its embedder would now make differently (and
``waggle_frame_embedding_staging.text_form``, so that a switch resumed by an embedder of another
form embeds again what it had staged). Existing rows get ``'whole'``, which is what they are.
A plain ``ADD COLUMN`` with a constant default on both dialects (no table rebuild; SQLite's
triggers on the manifest stay as they are).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: str | Sequence[str] | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


#: The manifest, and the staging rows of a switch in progress (their vectors too were made whole).
_TABLES = ('waggle_frame_embeddings', 'waggle_frame_embedding_staging')


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table,
                      sa.Column('text_form', sa.String(16), nullable=False, server_default='whole'))


def downgrade() -> None:
    # A plain DROP COLUMN (SQLite >= 3.35): a batch rebuild would drop the triggers on the table.
    for table in _TABLES:
        op.execute(f'ALTER TABLE {table} DROP COLUMN text_form')

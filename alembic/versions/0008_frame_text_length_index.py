"""frames in the keyword lane's tie order: an index on each mind's frame lengths

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 18:00:00.000000

Among frames of equal score the keyword lane puts the shorter first (the UTF-8 bytes of content
plus context, then the id: ``waggle_store/dialects/keyword_rank.py``). A query made only of words
most frames hold (a speaker's name alone) scores every such frame alike, so its page is the
shortest frames holding them; without an index in that order the lane read and sorted every
frame holding the word (0.15–0.3 s at 100k frames). ``(mind_id, <length>, id)`` lets it walk a
mind's frames shortest first and stop at its page. An index on an expression, which must be the
very expression the lane orders by (``TEXT_BYTES`` of each adapter); frozen here as migrations
keep their statements. A plain ``CREATE INDEX`` on both dialects (SQLite: its rowid, the id,
ends every index entry already).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0008'
down_revision: str | Sequence[str] | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = 'ix_waggle_memory_frames_mind_id_text_bytes'
_SQLITE = ('CREATE INDEX IF NOT EXISTS ix_waggle_memory_frames_mind_id_text_bytes '
           'ON waggle_memory_frames (mind_id, (length(CAST(content AS BLOB)) '
           '+ coalesce(length(CAST(search_context AS BLOB)), 0)))')
_POSTGRES = ('CREATE INDEX IF NOT EXISTS ix_waggle_memory_frames_mind_id_text_bytes '
             'ON waggle_memory_frames (mind_id, (octet_length(content) '
             '+ coalesce(octet_length(search_context), 0)), id)')


def upgrade() -> None:
    op.execute(_SQLITE if op.get_bind().dialect.name == 'sqlite' else _POSTGRES)


def downgrade() -> None:
    op.execute(f'DROP INDEX IF EXISTS {_INDEX}')

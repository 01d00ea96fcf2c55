"""an index for a session's latest I-frame

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 17:20:00.000000

``frame_type = 'I' ORDER BY t DESC LIMIT 1`` over the ``(mind_id, gop_id, t)`` unique index
walked back through every P-frame after the session's last I-frame, so each ingested turn cost
more than the one before it. With ``(mind_id, gop_id, frame_type, t)`` the lookup is one index
seek. A plain ``CREATE INDEX`` on both dialects (no table rebuild: SQLite's FTS triggers on
``waggle_memory_frames`` stay as they are).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0005'
down_revision: str | Sequence[str] | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = 'ix_waggle_memory_frames_mind_id_gop_id_frame_type_t'


def upgrade() -> None:
    op.create_index(_INDEX, 'waggle_memory_frames', ['mind_id', 'gop_id', 'frame_type', 't'])


def downgrade() -> None:
    op.drop_index(_INDEX, table_name='waggle_memory_frames')

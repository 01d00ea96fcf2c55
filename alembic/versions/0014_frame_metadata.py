"""memory frames carry the caller's metadata: a JSON object, filtered by search

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05 22:00:00.000000

``waggle_memory_frames.metadata``: NULL for none, else a JSON object (at most 64 KiB, validated
by the library before it is written). PostgreSQL stores it as ``jsonb`` with a GIN index
(``jsonb_path_ops``), which answers the search filter's containment test ``metadata @> {...}``.

SQLite stores the JSON text, and triggers keep a side table of its top-level entries,
``waggle_frame_metadata(frame_id, mind_id, key, type, value)``, indexed by (frame_id, key) for the
check of one candidate and by (mind_id, key, value) for "which frames of this mind have it". A
rare filter is answered from that index (0.6 ms for 2,500 frames of 100k); reading the JSON of
every frame of the mind with JSON1 (``json_extract``/``json_each``) cost 70-90 ms at 100k.
Triggers, so every write path (single writes, batches, imports, deletes) keeps it in step.
``(mind_id, source)`` and ``(mind_id, importance)`` indexes (both dialects) answer those filters
the same way (a rare source read through the frames of a 100k SQLite mind cost ~450 ms: a row
lookup each).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0014'
down_revision: str | Sequence[str] | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = 'ix_waggle_memory_frames_metadata'
_SIDE = 'waggle_frame_metadata'
_ENTRIES = ('INSERT INTO waggle_frame_metadata (frame_id, mind_id, key, type, value) '
            'SELECT new.id, new.mind_id, j.key, j.type, j.atom FROM json_each(new.metadata) j '
            'WHERE json_type(new.metadata) = \'object\'; ')
_INDEXES = (
    'CREATE INDEX IF NOT EXISTS ix_waggle_memory_frames_mind_id_source '
    'ON waggle_memory_frames (mind_id, source)',
    'CREATE INDEX IF NOT EXISTS ix_waggle_memory_frames_mind_id_importance '
    'ON waggle_memory_frames (mind_id, importance)',
)
_SQLITE = (
    'ALTER TABLE waggle_memory_frames ADD COLUMN metadata JSON',
    'CREATE TABLE IF NOT EXISTS waggle_frame_metadata (frame_id INTEGER NOT NULL, '
    'mind_id INTEGER NOT NULL, key TEXT NOT NULL, type TEXT NOT NULL, value, '
    'PRIMARY KEY (frame_id, key)) WITHOUT ROWID',
    'CREATE INDEX IF NOT EXISTS ix_waggle_frame_metadata_mind_key_value '
    'ON waggle_frame_metadata (mind_id, key, value)',
    'CREATE TRIGGER IF NOT EXISTS waggle_frame_metadata_ai AFTER INSERT ON waggle_memory_frames '
    f'WHEN new.metadata IS NOT NULL BEGIN {_ENTRIES}END',
    'CREATE TRIGGER IF NOT EXISTS waggle_frame_metadata_ad AFTER DELETE ON waggle_memory_frames '
    'BEGIN DELETE FROM waggle_frame_metadata WHERE frame_id = old.id; END',
    'CREATE TRIGGER IF NOT EXISTS waggle_frame_metadata_au AFTER UPDATE OF metadata, mind_id '
    'ON waggle_memory_frames BEGIN DELETE FROM waggle_frame_metadata WHERE frame_id = old.id; '
    f'{_ENTRIES}END',
)


def upgrade() -> None:
    for statement in _INDEXES:
        op.execute(statement)
    if op.get_bind().dialect.name == 'sqlite':
        for statement in _SQLITE:
            op.execute(statement)
        return
    op.execute('ALTER TABLE waggle_memory_frames ADD COLUMN IF NOT EXISTS metadata jsonb')
    op.execute(f'CREATE INDEX IF NOT EXISTS {_INDEX} ON waggle_memory_frames '
               'USING gin (metadata jsonb_path_ops)')


def downgrade() -> None:
    for column in ('source', 'importance'):
        op.execute(f'DROP INDEX IF EXISTS ix_waggle_memory_frames_mind_id_{column}')
    if op.get_bind().dialect.name == 'sqlite':
        for trigger in ('ai', 'ad', 'au'):
            op.execute(f'DROP TRIGGER IF EXISTS waggle_frame_metadata_{trigger}')
        op.execute(f'DROP TABLE IF EXISTS {_SIDE}')
    else:
        op.execute(f'DROP INDEX IF EXISTS {_INDEX}')
    op.execute('ALTER TABLE waggle_memory_frames DROP COLUMN metadata')

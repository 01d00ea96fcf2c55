"""the frame-context triggers plan their lookups per row

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 07:30:00.000000

PostgreSQL only. The two trigger functions of revision 0006 look up the frame before and after a
written frame in its session. PL/pgSQL cached a generic plan of those lookups after a
connection's fifth call; on a new store the frames table then held a handful of rows, the planner
could take the ``(mind_id, created_at)`` index with a filter and a sort instead of the
``(mind_id, gop_id, t)`` seek, and kept that plan until the table was analyzed: each written
frame read every frame of its mind, and a new store's first ingest was quadratic until
autovacuum's first analyze. ``plan_cache_mode = force_custom_plan`` on the functions plans each
lookup with its values and the table's current size (``waggle_store/dialects/context_index.py``:
``CUSTOM_PLANS``). The functions' bodies are unchanged; SQLite has no plan cache to pin.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0009'
down_revision: str | Sequence[str] | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FUNCTIONS = ('waggle_memory_frames_ctx_before()', 'waggle_memory_frames_ctx_after()')


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        return
    for function in _FUNCTIONS:
        op.execute(_if_present(function, 'SET plan_cache_mode = force_custom_plan'))


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        return
    for function in _FUNCTIONS:
        op.execute(_if_present(function, 'RESET plan_cache_mode'))


def _if_present(function: str, change: str) -> str:
    # A store whose derived objects were dropped (health() reports the triggers missing) still
    # upgrades; reconcile(repair=True) recreates the functions with the setting.
    return (f"DO $$ BEGIN IF to_regprocedure('{function}') IS NOT NULL THEN "
            f"ALTER FUNCTION {function} {change}; END IF; END $$")

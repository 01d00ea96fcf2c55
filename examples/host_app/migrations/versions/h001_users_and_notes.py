"""the host's users and notes (a note belongs to a waggle_store mind)

Revision ID: h001
Revises:
Create Date: 2026-11-30 17:30:00
"""

from __future__ import annotations

import sqlalchemy as sa

from alembic import op
from waggle_store.models import MindRow

revision = "h001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("email", sa.String(200), nullable=False, unique=True),
    )
    op.create_table(
        "notes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"),
                  nullable=False),
        # The mind's table is waggle_store's: referenced by its Column, so the schema (and, on
        # PostgreSQL, the schema_translate_map of the connection) applies.
        sa.Column("mind_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                  sa.ForeignKey(MindRow.id, ondelete="CASCADE"), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("notes")
    op.drop_table("users")

"""embedding model per mind: mind_embedding_models, and the staging table of model switches

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 16:55:00

Until 0001 the active embedding model was store-wide (``store_meta.active_embedding_model``): a
single write through a store with another embedder retired it for every mind. From here each
mind has its own. An existing store keeps what it had: every mind with vectors ready in the
store-wide active model gets that model as its active one; a mind without vectors gets one on
its first embedded write.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = '0002'
down_revision: str | Sequence[str] | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'mind_embedding_models',
        sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('model_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  nullable=False),
        sa.Column('status', sa.String(length=10), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('active', 'switching', 'retired')",
                           name=op.f('ck_mind_embedding_models_status')),
        sa.ForeignKeyConstraint(['mind_id'], ['minds.id'],
                                name=op.f('fk_mind_embedding_models_mind_id_minds'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['model_id'], ['embedding_models.id'],
                                name=op.f('fk_mind_embedding_models_model_id_embedding_models'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('mind_id', 'model_id', name=op.f('pk_mind_embedding_models')),
    )
    for status in ('active', 'switching'):
        op.create_index(
            f'uq_mind_embedding_models_{status}', 'mind_embedding_models', ['mind_id'],
            unique=True,
            sqlite_where=sa.text(f"status = '{status}'"),
            postgresql_where=sa.text(f"status = '{status}'"),
        )
    op.create_table(
        'frame_embedding_staging',
        sa.Column('frame_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  nullable=False),
        sa.Column('model_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  nullable=False),
        sa.Column('content_hash', sa.String(length=64), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['frame_id'], ['memory_frames.id'],
                                name=op.f('fk_frame_embedding_staging_frame_id_memory_frames'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(
            ['model_id'], ['embedding_models.id'],
            name=op.f('fk_frame_embedding_staging_model_id_embedding_models'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('frame_id', 'model_id', name=op.f('pk_frame_embedding_staging')),
    )
    # Existing stores: the store-wide active model (until now exactly one row of
    # embedding_models was 'active', the others 'retired') becomes the active model of every
    # mind that has vectors ready in it.
    op.execute(sa.text(
        "INSERT INTO mind_embedding_models (mind_id, model_id, status, updated_at) "
        "SELECT DISTINCT f.mind_id, e.model_id, 'active', CURRENT_TIMESTAMP "
        "FROM frame_embeddings e JOIN memory_frames f ON f.id = e.frame_id "
        "JOIN embedding_models m ON m.id = e.model_id AND m.status = 'active' "
        "WHERE e.status = 'ready'"
    ))
    # Every registered model can serve some mind now: "active" on embedding_models only means
    # registered and usable (which mind uses it is in mind_embedding_models).
    op.execute(sa.text("UPDATE embedding_models SET status = 'active' WHERE status = 'retired'"))


def downgrade() -> None:
    op.drop_table('frame_embedding_staging')
    op.drop_index('uq_mind_embedding_models_switching', table_name='mind_embedding_models')
    op.drop_index('uq_mind_embedding_models_active', table_name='mind_embedding_models')
    op.drop_table('mind_embedding_models')

"""initial schema: every table, the keyword index, and (Postgres) the vector extension

Revision ID: 0001
Revises: 
Create Date: 2026-11-29 17:54:19.373295
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op
from waggle_store.errors import (
    PGVECTOR_NOT_INSTALLED,
    MigrationError,
    WaggleStoreWarning,
    warn_at_caller,
)

revision: str = '0001'
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


#: The backends this migration has branches for; every dialect-specific step below is an explicit
#: ``if``/``elif`` over them. A new dialect adds itself here and a branch to each chain.
_DIALECTS = ("sqlite", "postgresql")


def _no_branch(dialect: str) -> MigrationError:
    return MigrationError(
        f"migration 0001 has no branch for the {dialect!r} backend (it covers {', '.join(_DIALECTS)})"
    )


def _dialect() -> str:
    """The backend's name, checked before anything is created: a backend without a branch stops
    here instead of getting another backend's SQL, or half a schema where DDL is not transactional."""
    name = op.get_bind().dialect.name
    if name not in _DIALECTS:
        raise _no_branch(name)
    return name


def upgrade() -> None:
    dialect = _dialect()
    op.create_table('embedding_models',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('provider', sa.String(length=50), nullable=False),
    sa.Column('model', sa.String(length=255), nullable=False),
    sa.Column('dimensions', sa.Integer(), nullable=False),
    sa.Column('metric', sa.String(length=20), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('status', sa.String(length=10), nullable=False),
    sa.CheckConstraint("status IN ('building', 'active', 'retired')", name=op.f('ck_embedding_models_status')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_embedding_models')),
    sa.UniqueConstraint('provider', 'model', 'dimensions', name=op.f('uq_embedding_models_provider_model_dimensions'))
    )
    op.create_table('embedding_usage',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('user_id', sa.String(length=255), nullable=False),
    sa.Column('year_month', sa.String(length=7), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_embedding_usage')),
    sa.UniqueConstraint('user_id', 'year_month', name=op.f('uq_embedding_usage_user_id_year_month'))
    )
    op.create_table('minds',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('settings', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.CheckConstraint("kind IN ('workspace', 'personal')", name=op.f('ck_minds_kind')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_minds')),
    sa.UniqueConstraint('name', name=op.f('uq_minds_name'))
    )
    op.create_table('store_meta',
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_store_meta'))
    )
    op.create_table('awareness',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('category', sa.String(length=20), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('priority', sa.Integer(), nullable=False),
    sa.Column('metadata', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("category IN ('task', 'action', 'pending', 'flag')", name=op.f('ck_awareness_category')),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_awareness_mind_id_minds'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_awareness'))
    )
    op.create_index('ix_awareness_mind_id_priority', 'awareness', ['mind_id', 'priority'], unique=False)
    op.create_table('harvest_sources',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('source', sa.String(length=255), nullable=False),
    sa.Column('display_name', sa.Text(), nullable=False),
    sa.Column('source_path', sa.Text(), nullable=True),
    sa.Column('last_synced_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('items_imported', sa.Integer(), nullable=False),
    sa.Column('frames_created', sa.Integer(), nullable=False),
    sa.Column('auto_sync', sa.Boolean(), nullable=False),
    sa.Column('sync_interval_hours', sa.Integer(), nullable=False),
    sa.Column('last_content_hash', sa.String(length=64), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_harvest_sources_mind_id_minds'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_harvest_sources')),
    sa.UniqueConstraint('mind_id', 'source', name=op.f('uq_harvest_sources_mind_id_source'))
    )
    op.create_table('identity',
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('role', sa.Text(), nullable=False),
    sa.Column('department', sa.Text(), nullable=False),
    sa.Column('personality', sa.Text(), nullable=False),
    sa.Column('capabilities', sa.Text(), nullable=False),
    sa.Column('system_prompt', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_identity_mind_id_minds'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('mind_id', name=op.f('pk_identity'))
    )
    op.create_table('knowledge_entities',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('entity_type', sa.String(length=100), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('name_key', sa.Text(), nullable=False),
    sa.Column('properties', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('valid_from', sa.DateTime(timezone=True), nullable=False),
    sa.Column('valid_to', sa.DateTime(timezone=True), nullable=True),
    sa.Column('recorded_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_knowledge_entities_mind_id_minds'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_knowledge_entities'))
    )
    op.create_index('ix_knowledge_entities_mind_id_entity_type_name_key', 'knowledge_entities', ['mind_id', 'entity_type', 'name_key'], unique=False)
    op.create_index('ix_knowledge_entities_mind_id_name', 'knowledge_entities', ['mind_id', 'name'], unique=False)
    op.create_table('kv_store',
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('key', sa.String(length=500), nullable=False),
    sa.Column('value', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_kv_store_mind_id_minds'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('mind_id', 'key', name=op.f('pk_kv_store'))
    )
    op.create_table('sessions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('gop_id', sa.String(length=255), nullable=False),
    sa.Column('project_id', sa.String(length=255), nullable=True),
    sa.Column('kind', sa.String(length=10), nullable=False),
    sa.Column('status', sa.String(length=10), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('summary', sa.Text(), nullable=True),
    sa.CheckConstraint("kind IN ('auto', 'named')", name=op.f('ck_sessions_kind')),
    sa.CheckConstraint("status IN ('active', 'closed', 'archived')", name=op.f('ck_sessions_status')),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_sessions_mind_id_minds'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_sessions')),
    sa.UniqueConstraint('mind_id', 'gop_id', name=op.f('uq_sessions_mind_id_gop_id'))
    )
    op.create_index('ix_sessions_mind_id_project_id_started_at', 'sessions', ['mind_id', 'project_id', 'started_at'], unique=False)
    # One active auto session per (mind, project): a database fact, not a check-then-insert.
    op.create_index(
        'uq_sessions_one_active',
        'sessions',
        ['mind_id', sa.text("coalesce(project_id, '')")],
        unique=True,
        sqlite_where=sa.text("status = 'active' AND kind = 'auto'"),
        postgresql_where=sa.text("status = 'active' AND kind = 'auto'"),
    )
    op.create_table('usage_log',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('model', sa.String(length=255), nullable=False),
    sa.Column('prompt_tokens', sa.Integer(), nullable=False),
    sa.Column('completion_tokens', sa.Integer(), nullable=False),
    sa.Column('total_tokens', sa.Integer(), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_usage_log_mind_id_minds'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_usage_log'))
    )
    op.create_index('ix_usage_log_mind_id_created_at', 'usage_log', ['mind_id', 'created_at'], unique=False)
    op.create_table('knowledge_relations',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('source_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('target_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('relation_type', sa.String(length=100), nullable=False),
    sa.Column('confidence', sa.Float(), nullable=False),
    sa.Column('properties', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('valid_from', sa.DateTime(timezone=True), nullable=False),
    sa.Column('valid_to', sa.DateTime(timezone=True), nullable=True),
    sa.Column('recorded_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_knowledge_relations_mind_id_minds'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['source_id'], ['knowledge_entities.id'], name=op.f('fk_knowledge_relations_source_id_knowledge_entities'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['target_id'], ['knowledge_entities.id'], name=op.f('fk_knowledge_relations_target_id_knowledge_entities'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_knowledge_relations'))
    )
    op.create_index('ix_knowledge_relations_mind_id', 'knowledge_relations', ['mind_id'], unique=False)
    op.create_index('ix_knowledge_relations_source_id_relation_type', 'knowledge_relations', ['source_id', 'relation_type'], unique=False)
    op.create_index('ix_knowledge_relations_target_id_relation_type', 'knowledge_relations', ['target_id', 'relation_type'], unique=False)
    op.create_table('memory_frames',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('mind_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('frame_type', sa.String(length=1), nullable=False),
    sa.Column('gop_id', sa.String(length=255), nullable=False),
    sa.Column('t', sa.Integer(), nullable=False),
    sa.Column('base_frame_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('importance', sa.String(length=20), nullable=False),
    sa.Column('source', sa.String(length=20), nullable=False),
    sa.Column('access_count', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_accessed', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("frame_type IN ('I', 'P', 'B')", name=op.f('ck_memory_frames_frame_type')),
    sa.CheckConstraint("importance IN ('critical', 'important', 'normal', 'temporary', 'deprecated')", name=op.f('ck_memory_frames_importance')),
    sa.CheckConstraint("source IN ('user_stated', 'tool_verified', 'agent_inferred', 'import', 'system')", name=op.f('ck_memory_frames_source')),
    sa.ForeignKeyConstraint(['base_frame_id'], ['memory_frames.id'], name=op.f('fk_memory_frames_base_frame_id_memory_frames'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['mind_id', 'gop_id'], ['sessions.mind_id', 'sessions.gop_id'], name='fk_memory_frames_mind_id_gop_id_sessions', ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['mind_id'], ['minds.id'], name=op.f('fk_memory_frames_mind_id_minds'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_frames')),
    sa.UniqueConstraint('mind_id', 'gop_id', 't', name=op.f('uq_memory_frames_mind_id_gop_id_t')),
    sqlite_autoincrement=True
    )
    op.create_index('ix_memory_frames_base_frame_id', 'memory_frames', ['base_frame_id'], unique=False)
    op.create_index('ix_memory_frames_mind_id_content_hash', 'memory_frames', ['mind_id', 'content_hash'], unique=False)
    op.create_index('ix_memory_frames_mind_id_created_at', 'memory_frames', ['mind_id', 'created_at'], unique=False)
    op.create_table('entity_mentions',
    sa.Column('entity_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('frame_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.ForeignKeyConstraint(['entity_id'], ['knowledge_entities.id'], name=op.f('fk_entity_mentions_entity_id_knowledge_entities'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['frame_id'], ['memory_frames.id'], name=op.f('fk_entity_mentions_frame_id_memory_frames'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('entity_id', 'frame_id', name=op.f('pk_entity_mentions'))
    )
    op.create_index('ix_entity_mentions_frame_id', 'entity_mentions', ['frame_id'], unique=False)
    op.create_table('frame_embeddings',
    sa.Column('frame_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('model_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=10), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("status IN ('pending', 'ready', 'failed')", name=op.f('ck_frame_embeddings_status')),
    sa.ForeignKeyConstraint(['frame_id'], ['memory_frames.id'], name=op.f('fk_frame_embeddings_frame_id_memory_frames'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['model_id'], ['embedding_models.id'], name=op.f('fk_frame_embeddings_model_id_embedding_models'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('frame_id', name=op.f('pk_frame_embeddings'))
    )
    op.create_index('ix_frame_embeddings_status_model_id', 'frame_embeddings', ['status', 'model_id'], unique=False)

    _create_keyword_index(dialect)


def downgrade() -> None:
    _drop_derived_indexes(_dialect())
    op.drop_index('ix_frame_embeddings_status_model_id', table_name='frame_embeddings')
    op.drop_table('frame_embeddings')
    op.drop_index('ix_entity_mentions_frame_id', table_name='entity_mentions')
    op.drop_table('entity_mentions')
    op.drop_index('ix_memory_frames_mind_id_created_at', table_name='memory_frames')
    op.drop_index('ix_memory_frames_mind_id_content_hash', table_name='memory_frames')
    op.drop_index('ix_memory_frames_base_frame_id', table_name='memory_frames')
    op.drop_table('memory_frames')
    op.drop_index('ix_knowledge_relations_target_id_relation_type', table_name='knowledge_relations')
    op.drop_index('ix_knowledge_relations_source_id_relation_type', table_name='knowledge_relations')
    op.drop_index('ix_knowledge_relations_mind_id', table_name='knowledge_relations')
    op.drop_table('knowledge_relations')
    op.drop_index('ix_usage_log_mind_id_created_at', table_name='usage_log')
    op.drop_table('usage_log')
    op.drop_index('ix_sessions_mind_id_project_id_started_at', table_name='sessions')
    op.drop_index('uq_sessions_one_active', table_name='sessions')
    op.drop_table('sessions')
    op.drop_table('kv_store')
    op.drop_index('ix_knowledge_entities_mind_id_name', table_name='knowledge_entities')
    op.drop_index('ix_knowledge_entities_mind_id_entity_type_name_key', table_name='knowledge_entities')
    op.drop_table('knowledge_entities')
    op.drop_table('identity')
    op.drop_table('harvest_sources')
    op.drop_index('ix_awareness_mind_id_priority', table_name='awareness')
    op.drop_table('awareness')
    op.drop_table('store_meta')
    op.drop_table('minds')
    op.drop_table('embedding_usage')
    op.drop_table('embedding_models')


def _create_keyword_index(dialect: str) -> None:
    if dialect == "sqlite":
        _create_fts5_index()
    elif dialect == "postgresql":
        _create_tsvector_index()
    else:
        raise _no_branch(dialect)


def _create_fts5_index() -> None:
    # The FTS table keeps its own copy of the text (as Waggle's does) so that
    # reconcile can compare it with memory_frames; triggers keep it in step in the same
    # transaction as every write.
    op.execute(
        "CREATE VIRTUAL TABLE memory_frames_fts USING fts5("
        "content, tokenize='porter unicode61')"
    )
    op.execute(
        "CREATE TRIGGER memory_frames_fts_ai AFTER INSERT ON memory_frames BEGIN "
        "INSERT INTO memory_frames_fts(rowid, content) VALUES (new.id, new.content); END"
    )
    op.execute(
        "CREATE TRIGGER memory_frames_fts_ad AFTER DELETE ON memory_frames BEGIN "
        "DELETE FROM memory_frames_fts WHERE rowid = old.id; END"
    )
    op.execute(
        "CREATE TRIGGER memory_frames_fts_au AFTER UPDATE OF content ON memory_frames BEGIN "
        "DELETE FROM memory_frames_fts WHERE rowid = old.id; "
        "INSERT INTO memory_frames_fts(rowid, content) VALUES (new.id, new.content); END"
    )


def _create_tsvector_index() -> None:
    # pgvector when the server has it; without it the store runs keyword-only and says so in
    # health(). A savepoint keeps a refused CREATE EXTENSION from aborting the upgrade.
    bind = op.get_bind()
    available = bind.exec_driver_sql(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    ).scalar()
    if available:
        installed = bind.exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'vector'").scalar()
        if not installed:
            try:
                with bind.begin_nested():
                    bind.exec_driver_sql(
                        "CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
            except sa.exc.DBAPIError as exc:
                if getattr(exc.orig, "sqlstate", None) != "42501":  # insufficient privilege
                    raise
                warn_at_caller(PGVECTOR_NOT_INSTALLED, WaggleStoreWarning)
    op.execute(
        "ALTER TABLE memory_frames ADD COLUMN content_tsv tsvector "
        "GENERATED ALWAYS AS (to_tsvector('english', content)) STORED"
    )
    op.execute("CREATE INDEX ix_memory_frames_content_tsv ON memory_frames USING gin (content_tsv)")


def _drop_derived_indexes(dialect: str) -> None:
    """Drop the keyword index and every per-model vector table the adapters created at runtime.

    The pgvector extension itself is left installed: other applications may use it.
    """
    bind = op.get_bind()
    if dialect == "sqlite":
        names = [
            row[0]
            for row in bind.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'frame\\_vectors\\_%' ESCAPE '\\' "
                "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
            )
        ]
        for name in names:
            op.execute(f'DROP TABLE IF EXISTS "{name}"')
        # The change log of the in-process vector index, made at runtime with the first vector
        # write (its triggers go with the tables they are on).
        op.execute("DROP TABLE IF EXISTS waggle_frame_vectors_log")
        for trigger in ("memory_frames_fts_ai", "memory_frames_fts_ad", "memory_frames_fts_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS memory_frames_fts")
    elif dialect == "postgresql":
        names = [
            row[0]
            for row in bind.execute(
                sa.text(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                    "AND tablename LIKE 'frame\\_vectors\\_%'"
                )
            )
        ]
        for name in names:
            op.execute(f'DROP TABLE IF EXISTS "{name}"')
        op.execute("DROP INDEX IF EXISTS ix_memory_frames_content_tsv")
    else:
        raise _no_branch(dialect)

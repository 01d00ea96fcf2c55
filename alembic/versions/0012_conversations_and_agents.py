"""conversations, their messages, and the agents registry

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05 21:45:00.000000

Three tables on both dialects. ``waggle_conversations``: one row per conversation of a mind (a
channel's history, or the mind's one canonical conversation with its compacted summary); the
partial unique indexes make "one open conversation per (mind, channel)" and "one canonical
conversation per mind" database facts. ``waggle_conversation_messages``: one row per message,
unique by ``(conversation_id, seq)``, so appending and reading the newest messages are index
range operations at any length. ``waggle_agents``: an agent's manifest and state, its name
unique case-insensitively through ``name_key``. Every row hangs off its mind (or conversation)
with ``ON DELETE CASCADE``, so dropping a mind removes its conversations.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op
from waggle_store.dialects.postgres_maint import RLS_POLICY, rls_statements

revision: str = '0012'
down_revision: str | Sequence[str] | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
_JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    op.create_table(
        'waggle_conversations',
        sa.Column('id', _ID, primary_key=True, autoincrement=True),
        sa.Column('mind_id', _ID, nullable=False),
        sa.Column('kind', sa.String(length=10), nullable=False),
        sa.Column('channel', sa.String(length=255), nullable=True),
        sa.Column('label', sa.String(length=255), nullable=True),
        sa.Column('status', sa.String(length=10), nullable=False),
        sa.Column('summary', sa.Text(), nullable=True),
        sa.Column('last_seq', _ID, nullable=False),
        sa.Column('message_count', _ID, nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('channel', 'canonical')", name=op.f('ck_conversations_kind')),
        sa.CheckConstraint("status IN ('open', 'closed')", name=op.f('ck_conversations_status')),
        sa.ForeignKeyConstraint(['mind_id'], ['waggle_minds.id'],
                                name=op.f('fk_conversations_mind_id_minds'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_conversations')),
    )
    op.create_index('ix_waggle_conversations_mind_id_created_at', 'waggle_conversations',
                    ['mind_id', 'created_at'])
    op.create_index('ix_waggle_conversations_mind_id_label', 'waggle_conversations',
                    ['mind_id', 'label'])
    op.create_index('uq_waggle_conversations_one_open', 'waggle_conversations',
                    ['mind_id', 'channel'], unique=True,
                    sqlite_where=sa.text("status = 'open' AND kind = 'channel'"),
                    postgresql_where=sa.text("status = 'open' AND kind = 'channel'"))
    op.create_index('uq_waggle_conversations_canonical', 'waggle_conversations', ['mind_id'],
                    unique=True, sqlite_where=sa.text("kind = 'canonical'"),
                    postgresql_where=sa.text("kind = 'canonical'"))
    op.create_table(
        'waggle_conversation_messages',
        sa.Column('id', _ID, primary_key=True, autoincrement=True),
        sa.Column('conversation_id', _ID, nullable=False),
        sa.Column('seq', _ID, nullable=False),
        sa.Column('role', sa.String(length=10), nullable=False),
        sa.Column('content', sa.Text(), nullable=False),
        sa.Column('tool_calls', _JSON, nullable=True),
        sa.Column('tool_call_id', sa.String(length=255), nullable=True),
        sa.Column('metadata', _JSON, nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IN ('user', 'assistant', 'system', 'tool')",
                           name=op.f('ck_conversation_messages_role')),
        sa.ForeignKeyConstraint(['conversation_id'], ['waggle_conversations.id'],
                                name=op.f('fk_conversation_messages_conversation_id_conversations'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_conversation_messages')),
        sa.UniqueConstraint('conversation_id', 'seq',
                            name=op.f('uq_conversation_messages_conversation_id_seq')),
    )
    op.create_table(
        'waggle_agents',
        sa.Column('id', _ID, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('name_key', sa.String(length=800), nullable=False),
        sa.Column('manifest', _JSON, nullable=False),
        sa.Column('state', _JSON, nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_agents')),
        sa.UniqueConstraint('name_key', name=op.f('uq_agents_name_key')),
    )


    if op.get_bind().dialect.name == 'postgresql':
        _row_security()


def _row_security() -> None:
    """A bound store's connections see only its mind's conversations and their messages (the
    policy of revision 0011; messages through their conversation, itself under the policy)."""
    quote = op.get_bind().dialect.identifier_preparer.quote
    for statement in rls_statements(quote('waggle_conversations')):
        op.execute(statement)
    owned = ('EXISTS (SELECT 1 FROM waggle_conversations c '
             'WHERE c.id = waggle_conversation_messages.conversation_id)')
    op.execute('ALTER TABLE waggle_conversation_messages ENABLE ROW LEVEL SECURITY')
    op.execute(f'CREATE POLICY {RLS_POLICY} ON waggle_conversation_messages '
               f'USING ({owned}) WITH CHECK ({owned})')


def downgrade() -> None:
    op.drop_table('waggle_agents')
    op.drop_table('waggle_conversation_messages')
    op.drop_index('uq_waggle_conversations_canonical', table_name='waggle_conversations')
    op.drop_index('uq_waggle_conversations_one_open', table_name='waggle_conversations')
    op.drop_index('ix_waggle_conversations_mind_id_label', table_name='waggle_conversations')
    op.drop_index('ix_waggle_conversations_mind_id_created_at', table_name='waggle_conversations')
    op.drop_table('waggle_conversations')

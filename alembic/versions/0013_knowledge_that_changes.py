"""knowledge that changes: versions in recorded time, resolved names, pending extraction

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 21:50:00.000000

- ``waggle_knowledge_entity_versions`` / ``waggle_knowledge_relation_versions``: the earlier
  states of entities and relations in recorded time (``recorded_from`` until ``recorded_to``);
  the current state stays in the entity and relation tables, which gain a ``version`` number.
- ``waggle_knowledge_entities.resolved_key``: the name folded (case, spacing, punctuation) and
  mapped through the built-in alias groups, filled here for every entity. Entities are then
  unique per (mind, type, resolved key) among the active ones and relations per (mind, source,
  target, type): two partial unique indexes.
- Existing duplicates are merged before the indexes are built: of the active entities sharing a
  key, the oldest is kept and receives the others' relations and mentions; the others are
  retired (their rows stay, with their history). Duplicate active relations, and the self-loops
  a merge can create, are retired the same way, the oldest edge kept.
- ``waggle_knowledge_aliases``: a mind's own aliases. ``waggle_extraction_pending``: memories
  whose extraction failed, for reconcile to extract again.

The folding rules below are a frozen copy of ``waggle_store/knowledge/aliases.py`` at this
revision, as migrations must keep them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

from waggle_store.dialects.postgres_maint import rls_statements

revision: str = '0013'
down_revision: str | Sequence[str] | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

E = 'waggle_knowledge_entities'
R = 'waggle_knowledge_relations'
M = 'waggle_entity_mentions'
_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
_WHEN = sa.DateTime(timezone=True)
_GROUPS = (
    ("postgresql", "postgres", "pg"), ("javascript", "js"), ("typescript", "ts"),
    ("kubernetes", "k8s"), ("new york city", "nyc"), ("nodejs", "node.js", "node"),
    ("react.js", "reactjs", "react"), ("vue.js", "vuejs", "vue"), ("python", "py"),
    ("mongodb", "mongo"),
)


def _fold(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).casefold()
    kept = "".join(ch if not unicodedata.category(ch).startswith(("P", "S")) else
                   (" " if ch in "-_/" else "") for ch in text)
    words = kept.split()
    if not words or any(ch in "+#" for ch in text):
        return " ".join(text.split())
    return " ".join(words)


_ALIASES = {_fold(other): _fold(group[0]) for group in _GROUPS for other in group[1:]}


def _key(name: str) -> str:
    folded = _fold(name)
    return _ALIASES.get(folded, folded)


def upgrade() -> None:
    # Plain ADD/DROP COLUMN on both dialects (SQLite has both): a batch copy of the entities
    # table would drop the table its relations and mentions cascade from.
    op.add_column(E, sa.Column('resolved_key', sa.Text(), nullable=True))
    op.add_column(E, sa.Column('version', sa.Integer(), nullable=False, server_default='1'))
    op.add_column(R, sa.Column('version', sa.Integer(), nullable=False, server_default='1'))
    _backfill_and_merge()
    op.create_index('ix_waggle_knowledge_entities_mind_id_resolved_key', E,
                    ['mind_id', 'resolved_key'])
    op.create_index('uq_waggle_knowledge_entities_active_key', E,
                    ['mind_id', 'entity_type', 'resolved_key'], unique=True,
                    sqlite_where=sa.text('valid_to IS NULL'),
                    postgresql_where=sa.text('valid_to IS NULL'))
    op.create_index('uq_waggle_knowledge_relations_active_edge', R,
                    ['mind_id', 'source_id', 'target_id', 'relation_type'], unique=True,
                    sqlite_where=sa.text('valid_to IS NULL'),
                    postgresql_where=sa.text('valid_to IS NULL'))
    op.create_table(
        'waggle_knowledge_entity_versions',
        sa.Column('entity_id', _ID, nullable=False),
        sa.Column('version', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('mind_id', _ID, nullable=False),
        sa.Column('entity_type', sa.String(length=100), nullable=False),
        sa.Column('name', sa.Text(), nullable=False),
        sa.Column('properties', _JSON, nullable=False),
        sa.Column('valid_from', _WHEN, nullable=False),
        sa.Column('valid_to', _WHEN, nullable=True),
        sa.Column('recorded_from', _WHEN, nullable=False),
        sa.Column('recorded_to', _WHEN, nullable=False),
        sa.ForeignKeyConstraint(['entity_id'], [f'{E}.id'], ondelete='CASCADE',
                                name='fk_knowledge_entity_versions_entity_id_knowledge_entities'),
        sa.ForeignKeyConstraint(['mind_id'], ['waggle_minds.id'], ondelete='CASCADE',
                                name='fk_knowledge_entity_versions_mind_id_minds'),
        sa.PrimaryKeyConstraint('entity_id', 'version', name='pk_knowledge_entity_versions'),
    )
    op.create_index('ix_waggle_knowledge_entity_versions_mind_id_recorded_from',
                    'waggle_knowledge_entity_versions', ['mind_id', 'recorded_from'])
    op.create_table(
        'waggle_knowledge_relation_versions',
        sa.Column('relation_id', _ID, nullable=False),
        sa.Column('version', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('mind_id', _ID, nullable=False),
        sa.Column('source_id', sa.Integer(), nullable=False),
        sa.Column('target_id', sa.Integer(), nullable=False),
        sa.Column('relation_type', sa.String(length=100), nullable=False),
        sa.Column('confidence', sa.Float(), nullable=False),
        sa.Column('properties', _JSON, nullable=False),
        sa.Column('valid_from', _WHEN, nullable=False),
        sa.Column('valid_to', _WHEN, nullable=True),
        sa.Column('recorded_from', _WHEN, nullable=False),
        sa.Column('recorded_to', _WHEN, nullable=False),
        sa.ForeignKeyConstraint(
            ['relation_id'], [f'{R}.id'], ondelete='CASCADE',
            name='fk_knowledge_relation_versions_relation_id_knowledge_relations'),
        sa.ForeignKeyConstraint(['mind_id'], ['waggle_minds.id'], ondelete='CASCADE',
                                name='fk_knowledge_relation_versions_mind_id_minds'),
        sa.PrimaryKeyConstraint('relation_id', 'version', name='pk_knowledge_relation_versions'),
    )
    op.create_index('ix_waggle_knowledge_relation_versions_mind_id_recorded_from',
                    'waggle_knowledge_relation_versions', ['mind_id', 'recorded_from'])
    op.create_table(
        'waggle_knowledge_aliases',
        sa.Column('mind_id', _ID, nullable=False),
        sa.Column('alias_key', sa.Text(), nullable=False),
        sa.Column('alias', sa.Text(), nullable=False),
        sa.Column('canonical_key', sa.Text(), nullable=False),
        sa.Column('canonical_name', sa.Text(), nullable=False),
        sa.Column('created_at', _WHEN, nullable=False),
        sa.ForeignKeyConstraint(['mind_id'], ['waggle_minds.id'], ondelete='CASCADE',
                                name='fk_knowledge_aliases_mind_id_minds'),
        sa.PrimaryKeyConstraint('mind_id', 'alias_key', name='pk_knowledge_aliases'),
    )
    op.create_table(
        'waggle_extraction_pending',
        sa.Column('frame_id', _ID, nullable=False),
        sa.Column('mind_id', _ID, nullable=False),
        sa.Column('error', sa.Text(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('updated_at', _WHEN, nullable=False),
        sa.ForeignKeyConstraint(['frame_id'], ['waggle_memory_frames.id'], ondelete='CASCADE',
                                name='fk_extraction_pending_frame_id_memory_frames'),
        sa.ForeignKeyConstraint(['mind_id'], ['waggle_minds.id'], ondelete='CASCADE',
                                name='fk_extraction_pending_mind_id_minds'),
        sa.PrimaryKeyConstraint('frame_id', name='pk_extraction_pending'),
    )
    op.create_index('ix_waggle_extraction_pending_mind_id', 'waggle_extraction_pending',
                    ['mind_id'])
    if op.get_bind().dialect.name == 'postgresql':
        _row_security()


def _backfill_and_merge() -> None:
    bind = op.get_bind()
    entities = sa.table(E, sa.column('id'), sa.column('mind_id'), sa.column('entity_type'),
                        sa.column('name'), sa.column('resolved_key'), sa.column('valid_to'))
    relations = sa.table(R, sa.column('id'), sa.column('mind_id'), sa.column('source_id'),
                         sa.column('target_id'), sa.column('relation_type'),
                         sa.column('valid_to'))
    mentions = sa.table(M, sa.column('entity_id'), sa.column('frame_id'))
    now = datetime.now(UTC)
    keep: dict[tuple[int, str, str], int] = {}
    merged: dict[int, int] = {}  # duplicate id -> the kept id
    keys: list[dict[str, object]] = []
    rows = bind.execute(sa.select(entities.c.id, entities.c.mind_id, entities.c.entity_type,
                                  entities.c.name, entities.c.valid_to)
                        .order_by(entities.c.id)).all()
    for entity_id, mind_id, entity_type, name, valid_to in rows:
        key = _key(name)
        keys.append({'eid': entity_id, 'k': key})
        if valid_to is None:
            first = keep.setdefault((mind_id, entity_type, key), entity_id)
            if first != entity_id:
                merged[entity_id] = first
    if keys:
        bind.execute(sa.update(entities).where(entities.c.id == sa.bindparam('eid'))
                     .values(resolved_key=sa.bindparam('k')), keys)
    for dup, kept in merged.items():
        for column in (relations.c.source_id, relations.c.target_id):
            bind.execute(sa.update(relations).where(column == dup).values({column.name: kept}))
        have = sa.select(mentions.c.frame_id).where(mentions.c.entity_id == kept)
        moved = (sa.select(sa.literal(kept), mentions.c.frame_id)
                 .where(mentions.c.entity_id == dup, mentions.c.frame_id.not_in(have)))
        bind.execute(sa.insert(mentions).from_select(['entity_id', 'frame_id'], moved))
        bind.execute(sa.delete(mentions).where(mentions.c.entity_id == dup))
        bind.execute(sa.update(entities).where(entities.c.id == dup).values(valid_to=now))
    active = bind.execute(sa.select(relations.c.id, relations.c.mind_id, relations.c.source_id,
                                    relations.c.target_id, relations.c.relation_type)
                          .where(relations.c.valid_to.is_(None)).order_by(relations.c.id)).all()
    seen: set[tuple[int, int, int, str]] = set()
    ended: list[int] = []
    for relation_id, mind_id, source_id, target_id, relation_type in active:
        edge = (mind_id, source_id, target_id, relation_type)
        if edge in seen or source_id == target_id:
            ended.append(relation_id)
        seen.add(edge)
    for start in range(0, len(ended), 500):
        bind.execute(sa.update(relations).where(relations.c.id.in_(ended[start:start + 500]))
                     .values(valid_to=now))



def _row_security() -> None:
    """The bound-mind policy of revision 0011 on this revision's tables of mind rows."""
    quote = op.get_bind().dialect.identifier_preparer.quote
    for table in ('waggle_knowledge_entity_versions', 'waggle_knowledge_relation_versions',
                  'waggle_knowledge_aliases', 'waggle_extraction_pending'):
        for statement in rls_statements(quote(table)):
            op.execute(statement)


def downgrade() -> None:
    op.drop_index('ix_waggle_extraction_pending_mind_id', 'waggle_extraction_pending')
    op.drop_table('waggle_extraction_pending')
    op.drop_table('waggle_knowledge_aliases')
    op.drop_index('ix_waggle_knowledge_relation_versions_mind_id_recorded_from',
                  'waggle_knowledge_relation_versions')
    op.drop_table('waggle_knowledge_relation_versions')
    op.drop_index('ix_waggle_knowledge_entity_versions_mind_id_recorded_from',
                  'waggle_knowledge_entity_versions')
    op.drop_table('waggle_knowledge_entity_versions')
    op.drop_index('uq_waggle_knowledge_relations_active_edge', R)
    op.drop_index('uq_waggle_knowledge_entities_active_key', E)
    op.drop_index('ix_waggle_knowledge_entities_mind_id_resolved_key', E)
    op.drop_column(R, 'version')
    op.drop_column(E, 'version')
    op.drop_column(E, 'resolved_key')

"""a frame's conversational context, indexed beside its own words

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 19:30:00.000000

``waggle_memory_frames.search_context``: the content of the preceding frame of the same session,
kept by triggers on every write (``waggle_store/dialects/context_index.py`` says why), filled here
for every existing frame. SQLite: the FTS5 table is rebuilt with a second column ``context`` (FTS5
cannot add a column) and its triggers write both; Postgres: a generated ``context_tsv`` column
with its GIN index beside ``content_tsv`` (unchanged). The statements are frozen copies of
``context_index``/``derived`` at this revision, as migrations must keep them.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0006'
down_revision: str | Sequence[str] | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

F = 'waggle_memory_frames'
X = 'waggle_memory_frames_fts'


def _pred(alias: str) -> str:
    return (f"(SELECT p.content FROM {F} p WHERE p.mind_id = {alias}.mind_id "
            f"AND p.gop_id = {alias}.gop_id AND p.t < {alias}.t ORDER BY p.t DESC LIMIT 1)")


def _succ(mind: str, gop: str, t: str) -> str:
    return (f"(SELECT n.id FROM {F} n WHERE n.mind_id = {mind} AND n.gop_id = {gop} "
            f"AND n.t > {t} ORDER BY n.t LIMIT 1)")


def _recompute(where_id: str) -> str:
    return (f"UPDATE {F} SET search_context = {_pred(F)} "
            f"WHERE id = {where_id} AND search_context IS NOT {_pred(F)};")


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        _sqlite_upgrade()
    else:
        _postgres_upgrade()


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        _sqlite_downgrade()
    else:
        _postgres_downgrade()


def _sqlite_upgrade() -> None:
    for name in (f'{X}_ai', f'{X}_ad', f'{X}_au'):
        op.execute(f'DROP TRIGGER IF EXISTS {name}')
    op.execute(f'DROP TABLE IF EXISTS {X}')
    op.execute(f'ALTER TABLE {F} ADD COLUMN search_context TEXT')
    op.execute(f'UPDATE {F} SET search_context = {_pred(F)}')
    op.execute(f"CREATE VIRTUAL TABLE {X} USING fts5(content, context, "
               "tokenize='porter unicode61')")
    op.execute(f'INSERT INTO {X}(rowid, content, context) '
               f'SELECT id, content, search_context FROM {F}')
    op.execute(
        f"CREATE TRIGGER {X}_ai AFTER INSERT ON {F} BEGIN "
        f"UPDATE {F} SET search_context = {_pred(F)} WHERE id = new.id; "
        f"UPDATE {F} SET search_context = new.content "
        f"WHERE id = {_succ('new.mind_id', 'new.gop_id', 'new.t')} "
        "AND search_context IS NOT new.content; END")
    op.execute(f"CREATE TRIGGER {X}_ad AFTER DELETE ON {F} BEGIN "
               f"DELETE FROM {X} WHERE rowid = old.id; END")
    op.execute(
        f"CREATE TRIGGER {X}_au AFTER UPDATE OF content, search_context ON {F} "
        f"BEGIN DELETE FROM {X} WHERE rowid = old.id; "
        f"INSERT INTO {X}(rowid, content, context) "
        "VALUES (new.id, new.content, new.search_context); END")
    op.execute(f"CREATE TRIGGER {F}_ctx_ad AFTER DELETE ON {F} BEGIN "
               + _recompute(_succ('old.mind_id', 'old.gop_id', 'old.t')) + " END")
    op.execute(
        f"CREATE TRIGGER {F}_ctx_au AFTER UPDATE OF content, mind_id, gop_id, t ON {F} BEGIN "
        + _recompute('new.id') + " "
        + _recompute(_succ('new.mind_id', 'new.gop_id', 'new.t')) + " "
        + _recompute(_succ('old.mind_id', 'old.gop_id', 'old.t')) + " END")


def _sqlite_downgrade() -> None:
    for name in (f'{X}_ai', f'{X}_ad', f'{X}_au', f'{F}_ctx_ad', f'{F}_ctx_au'):
        op.execute(f'DROP TRIGGER IF EXISTS {name}')
    op.execute(f'DROP TABLE IF EXISTS {X}')
    op.execute(f'ALTER TABLE {F} DROP COLUMN search_context')
    op.execute(f"CREATE VIRTUAL TABLE {X} USING fts5(content, tokenize='porter unicode61')")
    op.execute(f'INSERT INTO {X}(rowid, content) SELECT id, content FROM {F}')
    op.execute(f"CREATE TRIGGER {X}_ai AFTER INSERT ON {F} BEGIN "
               f"INSERT INTO {X}(rowid, content) VALUES (new.id, new.content); END")
    op.execute(f"CREATE TRIGGER {X}_ad AFTER DELETE ON {F} BEGIN "
               f"DELETE FROM {X} WHERE rowid = old.id; END")
    op.execute(f"CREATE TRIGGER {X}_au AFTER UPDATE OF content ON {F} BEGIN "
               f"DELETE FROM {X} WHERE rowid = old.id; "
               f"INSERT INTO {X}(rowid, content) VALUES (new.id, new.content); END")


_PG_PRED_NEW = (f"(SELECT p.content FROM {F} p WHERE p.mind_id = NEW.mind_id "
                "AND p.gop_id = NEW.gop_id AND p.t < NEW.t ORDER BY p.t DESC LIMIT 1)")


def _postgres_upgrade() -> None:
    op.execute(f'ALTER TABLE {F} ADD COLUMN IF NOT EXISTS search_context text')
    op.execute(f'UPDATE {F} f SET search_context = {_pred("f")}')
    op.execute(f"ALTER TABLE {F} ADD COLUMN IF NOT EXISTS context_tsv tsvector "
               "GENERATED ALWAYS AS (to_tsvector('english', coalesce(search_context, ''))) STORED")
    op.execute(f'CREATE INDEX IF NOT EXISTS ix_{F}_context_tsv ON {F} USING gin (context_tsv)')
    op.execute(
        f"CREATE OR REPLACE FUNCTION {F}_ctx_before() RETURNS trigger LANGUAGE plpgsql "
        "SET search_path FROM CURRENT AS $$ "
        "BEGIN IF TG_OP = 'INSERT' OR NEW.mind_id IS DISTINCT FROM OLD.mind_id "
        "OR NEW.gop_id IS DISTINCT FROM OLD.gop_id OR NEW.t IS DISTINCT FROM OLD.t THEN "
        f"NEW.search_context := {_PG_PRED_NEW}; END IF; RETURN NEW; END $$")
    op.execute(
        f"CREATE OR REPLACE FUNCTION {F}_ctx_after() RETURNS trigger LANGUAGE plpgsql "
        "SET search_path FROM CURRENT AS $$ "
        "BEGIN IF TG_OP <> 'DELETE' THEN "
        f"UPDATE {F} f SET search_context = NEW.content WHERE f.id = "
        f"{_succ('NEW.mind_id', 'NEW.gop_id', 'NEW.t')} "
        "AND f.search_context IS DISTINCT FROM NEW.content; END IF; "
        "IF TG_OP <> 'INSERT' THEN "
        f"UPDATE {F} f SET search_context = {_pred('f')} WHERE f.id = "
        f"{_succ('OLD.mind_id', 'OLD.gop_id', 'OLD.t')} "
        f"AND f.search_context IS DISTINCT FROM {_pred('f')}; END IF; RETURN NULL; END $$")
    op.execute(f"CREATE TRIGGER {F}_ctx_b BEFORE INSERT OR UPDATE OF content, mind_id, gop_id, t "
               f"ON {F} FOR EACH ROW EXECUTE FUNCTION {F}_ctx_before()")
    op.execute(f"CREATE TRIGGER {F}_ctx_a AFTER INSERT OR DELETE OR UPDATE OF content, mind_id, "
               f"gop_id, t ON {F} FOR EACH ROW EXECUTE FUNCTION {F}_ctx_after()")


def _postgres_downgrade() -> None:
    op.execute(f'DROP TRIGGER IF EXISTS {F}_ctx_a ON {F}')
    op.execute(f'DROP TRIGGER IF EXISTS {F}_ctx_b ON {F}')
    op.execute(f'DROP FUNCTION IF EXISTS {F}_ctx_after()')
    op.execute(f'DROP FUNCTION IF EXISTS {F}_ctx_before()')
    op.execute(f'DROP INDEX IF EXISTS ix_{F}_context_tsv')
    op.execute(f'ALTER TABLE {F} DROP COLUMN IF EXISTS context_tsv')
    op.execute(f'ALTER TABLE {F} DROP COLUMN IF EXISTS search_context')

"""prefixed names: every table becomes waggle_<name>, with its indexes, triggers and vector tables

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 17:10:00

Why: on SQLite a store can share its file with a host application's tables (one namespace), and
on PostgreSQL a store can be kept in a shared schema; a host table called ``sessions`` made
``open_store`` fail. Every waggle_store table, index, trigger and derived index (FTS5 table and
its triggers, the per-model vector tables) now carries the ``waggle_`` prefix, which is reserved.

Constraint names (pk_/uq_/fk_/ck_) keep their short names: they are local to a table on SQLite
and to the store's schema on PostgreSQL. Rows are kept: tables are renamed in place (SQLite
>= 3.26 rewrites the foreign keys, indexes and triggers that name them); the FTS5 table is
renamed (FTS5 renames its shadow tables); sqlite-vec's ``vec0`` tables cannot be renamed, so each
is recreated under its new name and its rows copied, which needs sqlite-vec on the migrating
connection (the store's own engines load it).

Self-contained on purpose: it reads what exists (``_TABLES`` plus the derived objects it finds)
instead of assuming the previous revision's exact list, so it can be re-chained after another
revision that adds tables (add their short names to ``_TABLES``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op
from waggle_store.errors import MigrationError

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PREFIX = "waggle_"
#: The tables of the previous revisions, by their short (unprefixed) names.
_TABLES = (
    "embedding_models", "embedding_usage", "minds", "store_meta", "awareness", "harvest_sources",
    "identity", "knowledge_entities", "kv_store", "sessions", "usage_log", "knowledge_relations",
    "memory_frames", "entity_mentions", "frame_embeddings", "mind_embedding_models",
    "frame_embedding_staging",
)
_FTS_TRIGGERS = ("ai", "ad", "au")
_DIALECTS = ("sqlite", "postgresql")


def _dialect() -> str:
    name = op.get_bind().dialect.name
    if name not in _DIALECTS:
        raise MigrationError(
            f"migration 0004 has no branch for the {name!r} backend (it covers {', '.join(_DIALECTS)})"
        )
    return name


def upgrade() -> None:
    if _dialect() == "sqlite":
        _sqlite(old="", new=PREFIX)
    else:
        _postgres(old="", new=PREFIX)


def downgrade() -> None:
    dialect = _dialect()
    _refuse_taken_names(dialect)
    if dialect == "sqlite":
        _sqlite(old=PREFIX, new="")
    else:
        _postgres(old=PREFIX, new="")


def _refuse_taken_names(dialect: str) -> None:
    """Below this revision the store's tables have their short names again; in a file (or
    schema) shared with a host application whose own tables have one of those names, the
    downgrade stops before it changes anything and says which names are taken. The host's
    tables are never renamed or touched."""
    shorts = [*_TABLES, "memory_frames_fts"]
    if dialect == "sqlite":
        taken = [str(r[0]) for r in _rows(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name IN (SELECT value FROM json_each(:names))", names=_json(shorts))]
    else:
        taken = [str(r[0]) for r in _rows(
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = "
            "(SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
            "AND c.relname = ANY(CAST(:names AS text[]))", names=shorts)]
    if taken:
        raise MigrationError(
            "cannot downgrade below revision 0004: the store's tables would take back their "
            f"unprefixed names, and other tables here already have them ({', '.join(sorted(taken))}). "
            "Export the minds (waggle-store export) and downgrade a store of their own, or "
            "stay at 0004 or later"
        )


def _json(names: Sequence[str]) -> str:
    return json.dumps(list(names))


def _rows(sql: str, **params: object) -> list[sa.Row[tuple[object, ...]]]:
    return list(op.get_bind().execute(sa.text(sql), params))


def _renamed_index(name: str, old: str, new: str) -> str:
    """``ix_<old><table>_...`` -> ``ix_<new><table>_...`` (and ``uq_`` for unique indexes)."""
    kind, _, rest = name.partition("_")
    return f"{kind}_{new}{rest.removeprefix(old)}"


def _sqlite(*, old: str, new: str) -> None:
    bind = op.get_bind()
    # FTS5 triggers first: they are recreated under their new names on the renamed tables.
    for suffix in _FTS_TRIGGERS:
        op.execute(f'DROP TRIGGER IF EXISTS "{old}memory_frames_fts_{suffix}"')
    vec_tables = [
        (str(r[0]), str(r[1]))
        for r in _rows(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        )
        if re.fullmatch(rf"{re.escape(old)}frame_vectors_\d+", str(r[0]))
    ]
    for name, _sql in vec_tables:
        op.execute(f'DROP TRIGGER IF EXISTS "{name}_ad"')
    for short in _TABLES:
        if _rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :n", n=old + short):
            op.execute(f'ALTER TABLE "{old}{short}" RENAME TO "{new}{short}"')
            _sqlite_rename_indexes(new + short, old, new)
    if _rows("SELECT 1 FROM sqlite_master WHERE name = :n", n=f"{old}memory_frames_fts"):
        op.execute(f'ALTER TABLE "{old}memory_frames_fts" RENAME TO "{new}memory_frames_fts"')
    frames, fts = f"{new}memory_frames", f"{new}memory_frames_fts"
    op.execute(
        f'CREATE TRIGGER "{fts}_ai" AFTER INSERT ON "{frames}" BEGIN '
        f'INSERT INTO "{fts}"(rowid, content) VALUES (new.id, new.content); END'
    )
    op.execute(
        f'CREATE TRIGGER "{fts}_ad" AFTER DELETE ON "{frames}" BEGIN '
        f'DELETE FROM "{fts}" WHERE rowid = old.id; END'
    )
    op.execute(
        f'CREATE TRIGGER "{fts}_au" AFTER UPDATE OF content ON "{frames}" BEGIN '
        f'DELETE FROM "{fts}" WHERE rowid = old.id; '
        f'INSERT INTO "{fts}"(rowid, content) VALUES (new.id, new.content); END'
    )
    for name, sql in vec_tables:
        target = new + name.removeprefix(old)
        _sqlite_recreate_vec0(bind, name, target, sql, frames)


def _sqlite_rename_indexes(table: str, old: str, new: str) -> None:
    """Index names are global in a SQLite file: rename the table's named indexes (drop and
    create again; SQLite has no ALTER INDEX)."""
    for name, sql in _rows(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = :t "
        "AND sql IS NOT NULL",
        t=table,
    ):
        renamed = _renamed_index(str(name), old, new)
        if renamed == name:
            continue
        op.execute(f'DROP INDEX "{name}"')
        op.execute(re.sub(rf'INDEX\s+"?{re.escape(str(name))}"?', f'INDEX "{renamed}"', str(sql), count=1))


def _sqlite_recreate_vec0(bind: sa.Connection, name: str, target: str, sql: str, frames: str) -> None:
    """vec0 tables cannot be renamed (sqlite-vec keeps its shadow tables' names): create the new
    one from the old one's definition, copy every row, drop the old one."""
    try:
        columns = [str(r[1]) for r in bind.exec_driver_sql(f'PRAGMA table_info("{name}")')]
    except sa.exc.OperationalError as exc:
        raise MigrationError(
            f"migration 0004 must copy the vector table {name}, which needs sqlite-vec on the "
            "migrating connection: run it through waggle_store (open_store, migrate.upgrade with a "
            "URL, or an engine from waggle_store.create_engine)"
        ) from exc
    create = re.sub(rf'(VIRTUAL\s+TABLE\s+)"?{re.escape(name)}"?', rf'\1"{target}"', sql, count=1)
    op.execute(create)
    cols = ", ".join(["rowid", *columns])
    op.execute(f'INSERT INTO "{target}"({cols}) SELECT {cols} FROM "{name}"')
    op.execute(f'DROP TABLE "{name}"')
    op.execute(
        f'CREATE TRIGGER IF NOT EXISTS "{target}_ad" AFTER DELETE ON "{frames}" BEGIN '
        f'DELETE FROM "{target}" WHERE rowid = old.id; END'
    )


def _postgres(*, old: str, new: str) -> None:
    for short in _TABLES:
        table = old + short
        if not _rows("SELECT to_regclass(:n) IS NOT NULL AS e", n=f'"{table}"')[0][0]:
            continue
        for (index,) in _rows(
            "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "WHERE x.indrelid = to_regclass(:t) AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
            t=f'"{table}"',
        ):
            renamed = _renamed_index(str(index), old, new)
            if renamed != index:
                op.execute(f'ALTER INDEX "{index}" RENAME TO "{renamed}"')
        seq = _rows("SELECT pg_get_serial_sequence(:t, 'id')", t=f'"{table}"')[0][0] if _has_id(
            table) else None
        op.execute(f'ALTER TABLE "{table}" RENAME TO "{new}{short}"')
        if seq:
            op.execute(f"ALTER SEQUENCE {seq} RENAME TO \"{new}{short}_id_seq\"")
    for (name,) in _rows(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename ~ :p",
        p=f"^{old}frame_vectors_[0-9]+$",
    ):
        target = new + str(name).removeprefix(old)
        for (index,) in _rows(
            "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "WHERE x.indrelid = to_regclass(:t)",
            t=f'"{name}"',
        ):
            renamed = target + str(index).removeprefix(str(name))
            op.execute(f'ALTER INDEX "{index}" RENAME TO "{renamed}"')
        op.execute(f'ALTER TABLE "{name}" RENAME TO "{target}"')


def _has_id(table: str) -> bool:
    return bool(_rows(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = :t AND column_name = 'id'",
        t=table,
    ))

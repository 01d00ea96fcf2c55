"""Run, inspect and check waggle_store's Alembic migrations from code.

Works on a URL, an Engine, or a caller's Connection (a host app that keeps waggle_store's schema
changes inside its own transaction). The scripts are found inside the installed package
(``waggle_store/_alembic``, copied there when the wheel is built) or, in a source checkout, in the
repo's ``alembic/`` folder.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from alembic import command
from waggle_store.config import StoreConfig
from waggle_store.dialects import get_adapter, spec_of
from waggle_store.errors import MigrationError, UnsupportedDialectError

VERSION_TABLE = "waggle_alembic_version"

# Derived-index objects the dialect adapters own, which autogenerate must not try to "fix".
_DERIVED_TABLE_PREFIXES = ("memory_frames_fts", "frame_vectors")
_DERIVED_COLUMNS = {("memory_frames", "content_tsv")}
_DERIVED_INDEXES = {"ix_memory_frames_content_tsv"}

Bind = str | sa.URL | sa.Engine | sa.Connection


def include_name(name: str | None, type_: str, parent_names: Mapping[Any, Any]) -> bool:
    if type_ == "table" and name is not None:
        return name != VERSION_TABLE and not name.startswith(_DERIVED_TABLE_PREFIXES)
    return not (type_ == "index" and name in _DERIVED_INDEXES)


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    if type_ == "column" and (getattr(obj.table, "name", None), name) in _DERIVED_COLUMNS:
        return False
    if type_ == "index" and name in _DERIVED_INDEXES:
        return False
    return not (type_ == "table" and name is not None and name.startswith(_DERIVED_TABLE_PREFIXES))


def script_location() -> Path:
    package_dir = Path(__file__).resolve().parent
    for candidate in (package_dir / "_alembic", package_dir.parent / "alembic"):
        if (candidate / "env.py").is_file():
            return candidate
    raise MigrationError(
        "waggle_store's migration scripts are missing: neither waggle_store/_alembic (installed "
        "wheel) nor alembic/ (source checkout) was found"
    )


def _config(connection: sa.Connection, schema: str | None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.attributes["connection"] = connection
    if schema:
        cfg.attributes["schema"] = schema
    return cfg


@contextmanager
def _connection(bind: Bind, schema: str | None) -> Iterator[sa.Connection]:
    if isinstance(bind, sa.Connection):
        yield bind
        return
    if isinstance(bind, sa.Engine):
        with bind.connect() as conn:
            yield conn
            if conn.in_transaction():
                conn.commit()
        return
    from waggle_store.engine import create_engine

    engine = create_engine(bind, config=StoreConfig.from_env(str(bind), schema))
    try:
        with engine.connect() as conn:
            yield conn
            if conn.in_transaction():
                conn.commit()
    finally:
        engine.dispose()


def _run(what: str, bind: Bind, schema: str | None, fn: Any) -> Any:
    try:
        with _connection(bind, schema) as conn:
            return fn(conn)
    except (MigrationError, UnsupportedDialectError):
        raise
    except Exception as exc:
        raise MigrationError(f"migration {what} failed: {exc}") from exc


def upgrade(bind: Bind, revision: str = "head", *, schema: str | None = None) -> None:
    _run("upgrade", bind, schema, lambda c: command.upgrade(_config(c, schema), revision))


def downgrade(bind: Bind, revision: str = "base", *, schema: str | None = None) -> None:
    _run("downgrade", bind, schema, lambda c: command.downgrade(_config(c, schema), revision))


def _schema_of(conn: sa.Connection, schema: str | None) -> str | None:
    """The schema waggle_store's objects live in on this backend, ``None`` where there are none."""
    return (schema or StoreConfig.from_env().schema) if spec_of(conn).has_schemas else None


def _migration_context(conn: sa.Connection, schema: str | None) -> MigrationContext:
    return MigrationContext.configure(
        conn,
        opts={
            "version_table": VERSION_TABLE,
            "version_table_schema": _schema_of(conn, schema),
            "include_name": include_name,
            "include_object": include_object,
            "compare_type": True,
            "target_metadata": None,
        },
    )


def current(bind: Bind, *, schema: str | None = None) -> str | None:
    """The revision the database is at, or None for an empty (never migrated) database."""
    return _run("current", bind, schema, lambda c: _migration_context(c, schema).get_current_revision())  # type: ignore[no-any-return]


def head() -> str:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    heads = ScriptDirectory.from_config(cfg).get_heads()
    if len(heads) != 1:
        raise MigrationError(f"expected exactly one migration head, found {heads}")
    return heads[0]


def check(bind: Bind, *, schema: str | None = None) -> list[Any]:
    """Differences between the models and the migrated schema; an empty list means none.

    Besides Alembic's diffs (tuples such as ``("add_table", table)``) it lists each missing or
    broken derived object (FTS5 table and triggers, tsvector column and GIN index, vector tables
    and their index/trigger), which autogenerate cannot see, as
    ``("broken_derived_object", name, problem)``; ``store.reconcile(repair=True)`` recreates them.
    """
    from waggle_store.models import Base

    def _diff(conn: sa.Connection) -> list[Any]:
        ops, in_schema = spec_of(conn).schemas, _schema_of(conn, schema)
        if ops is not None and in_schema is not None:
            ops.enter(conn, in_schema)  # reflect waggle_store's schema, for this transaction only
        diffs: list[Any] = list(compare_metadata(_migration_context(conn, schema), Base.metadata))
        if current(conn, schema=schema) is not None:  # an empty database has nothing derived yet
            problems = get_adapter(conn.engine).verify_derived(conn)
            diffs.extend(("broken_derived_object", p.name, str(p)) for p in problems)
        return diffs

    return _run("check", bind, schema, _diff)  # type: ignore[no-any-return]

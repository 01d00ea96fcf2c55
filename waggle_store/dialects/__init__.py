"""Dialect adapters: the only place where SQL differs between backends, and the registry that
maps a dialect name to its adapter, engine factory and traits (:mod:`.registry`).

The registrations below are the whole list of supported backends; anything else raises
:class:`~waggle_store.errors.UnsupportedDialectError`.
"""

from __future__ import annotations

from waggle_store.dialects.base import Capabilities, LaneHit, SearchAdapter, vector_table_name
from waggle_store.dialects.host import sqlite_write_lock
from waggle_store.dialects.postgres import PostgresAdapter
from waggle_store.dialects.postgres_engine import (
    bind_mind,
    check_schema_name,
    create_postgres_engine,
    create_schema,
    enter_schema,
    leave_schema,
    lock_schema,
)
from waggle_store.dialects.postgres_maint import grant_runtime
from waggle_store.dialects.registry import (
    DialectSpec,
    EngineFactory,
    SchemaOps,
    check_driver,
    check_schema,
    dialect_spec,
    get_adapter,
    register_dialect,
    spec_for_url,
    spec_of,
    supported_dialects,
)
from waggle_store.dialects.sqlite import SQLiteAdapter
from waggle_store.dialects.sqlite_engine import create_sqlite_engine


def release_caches(adapter: SearchAdapter) -> None:
    """Free what ``adapter`` holds in memory for its store (the store is closing): SQLite's
    in-process vector index, up to ``WAGGLE_VECTOR_INDEX_BYTES`` of vectors; a later search
    rebuilds it. PostgreSQL's adapter keeps a few counters and flags: nothing worth freeing."""
    if isinstance(adapter, SQLiteAdapter):
        adapter.vector_index.clear()


register_dialect("sqlite", DialectSpec(
    adapter=SQLiteAdapter, create_engine=create_sqlite_engine, batch_alter=True,
    example_url="sqlite:///path/to/store.db", drivers=("pysqlite",), extra="sqlite",
    write_lock=sqlite_write_lock,
))
register_dialect("postgresql", DialectSpec(
    adapter=PostgresAdapter, create_engine=create_postgres_engine,
    schemas=SchemaOps(create=create_schema, enter=enter_schema, leave=leave_schema,
                      lock=lock_schema, check=check_schema_name), url_aliases=("postgres",),
    example_url="postgresql+psycopg://user@host/db", drivers=("psycopg",), extra="postgres",
    bind_mind=bind_mind, grant_runtime=grant_runtime,
))

__all__ = [
    "Capabilities",
    "DialectSpec",
    "EngineFactory",
    "LaneHit",
    "SchemaOps",
    "SearchAdapter",
    "check_driver",
    "check_schema",
    "dialect_spec",
    "get_adapter",
    "register_dialect",
    "release_caches",
    "spec_for_url",
    "spec_of",
    "supported_dialects",
    "vector_table_name",
]

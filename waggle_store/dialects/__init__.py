"""Dialect adapters: the only place where SQL differs between SQLite and Postgres."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from waggle_store.dialects.base import Capabilities, LaneHit, SearchAdapter, vector_table_name


def get_adapter(engine: Engine) -> SearchAdapter:
    if engine.dialect.name == "sqlite":
        from waggle_store.dialects.sqlite import SQLiteAdapter

        return SQLiteAdapter(engine)
    from waggle_store.dialects.postgres import PostgresAdapter

    return PostgresAdapter(engine)


__all__ = ["Capabilities", "LaneHit", "SearchAdapter", "get_adapter", "vector_table_name"]

"""The filters a host application passes to its own Alembic ``context.configure`` so that its
autogenerate (``alembic check``) ignores every waggle_store object; re-exported by
:mod:`waggle_store.migrate` (``waggle_store.migrate.include_name`` / ``include_object``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from waggle_store.config import DEFAULT_PG_SCHEMA
from waggle_store.models.base import TABLE_PREFIX


def _waggle_schemas() -> set[str]:
    return {DEFAULT_PG_SCHEMA, os.environ.get("WAGGLE_PG_SCHEMA") or DEFAULT_PG_SCHEMA}


def _is_waggle_table(name: object, schema: object = None) -> bool:
    return (isinstance(name, str) and name.startswith(TABLE_PREFIX)) or schema in _waggle_schemas()


def include_name(name: str | None, type_: str, parent_names: Mapping[str, Any]) -> bool:
    """For a host's ``context.configure(include_name=...)``: False for waggle_store's objects.

    Those are its schema (``waggle``, or ``WAGGLE_PG_SCHEMA``), every table named ``waggle_*``
    (its tables, its version table, the FTS5 and sqlite-vec virtual tables and their shadow
    tables: they are never reflected, so a host without sqlite-vec never meets ``vec0``) and
    every index or constraint of those tables. True for everything else.
    """
    if type_ == "schema":
        return name not in _waggle_schemas()
    if type_ == "table":
        return not _is_waggle_table(name, parent_names.get("schema_name"))
    return not _is_waggle_table(parent_names.get("table_name"), parent_names.get("schema_name"))


def include_object(obj: Any, name: str | None, type_: str, reflected: bool,
                   compare_to: Any) -> bool:
    """For a host's ``context.configure(include_object=...)``: False for waggle_store's objects
    (see :func:`include_name`) and for a host's foreign keys *to* them: SQLite cannot declare a
    foreign key across schemas, so SQLAlchemy leaves it out of the DDL there and autogenerate
    would propose it on every run."""
    if type_ == "table":
        return not _is_waggle_table(name, getattr(obj, "schema", None))
    table = getattr(obj, "table", None)
    if table is not None and _is_waggle_table(table.name, table.schema):
        return False
    if type_ == "foreign_key_constraint":
        referred = getattr(obj, "referred_table", None)
        if referred is not None and _is_waggle_table(referred.name, referred.schema):
            return False
    return True



__all__ = ["include_name", "include_object"]

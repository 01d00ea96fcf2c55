"""Declarative base, naming convention and the column types every model shares."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from sqlalchemy import JSON, BigInteger, DateTime, Integer, MetaData
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

#: Every waggle_store table is called ``waggle_<name>``: on SQLite the store may share one file
#: (one namespace) with a host application's tables, so the prefix is what keeps a host's
#: ``sessions`` or ``users`` table from colliding with ours. The prefix is reserved: the exported
#: Alembic filters (``waggle_store.migrate.include_name``) treat every ``waggle_*`` table as ours.
TABLE_PREFIX: Final = "waggle_"
#: The schema named on every model's table (``MindRow.__table__.schema``), so a host's foreign
#: key to ``waggle.waggle_minds`` resolves on PostgreSQL. A store kept in another schema, and
#: every SQLite store (no schemas), is reached through :func:`schema_translate_map`.
SCHEMA: Final = "waggle"


def table_name(short: str) -> str:
    """The real name of waggle_store's table ``short`` (``memory_frames`` ->
    ``waggle_memory_frames``): the one function raw SQL builds table names with."""
    return short if short.startswith(TABLE_PREFIX) else TABLE_PREFIX + short


def schema_translate_map(schema: str | None) -> dict[str | None, str | None]:
    """The ``schema_translate_map`` execution option that puts the models' tables (schema
    :data:`SCHEMA`) where a store keeps them: ``schema`` on PostgreSQL, ``None`` (no schema)
    on SQLite."""
    return {SCHEMA: schema}


def _short_table(constraint: Any, table: Any) -> str:
    return str(table.name).removeprefix(TABLE_PREFIX)


def _short_referred(constraint: Any, table: Any) -> str:
    target = constraint.elements[0].target_fullname.split(".")
    return str(target[-2]).removeprefix(TABLE_PREFIX)


# Constraint names keep the short table name: they are local to their table on SQLite and to
# the store's schema on PostgreSQL, so they cannot collide with a host's, and they are the names
# revision 0001 created (renaming a constraint on SQLite means rebuilding its table). Index
# names are global in a SQLite file, so they carry the prefixed table name.
NAMING_CONVENTION: dict[str, Any] = {
    "short_table": _short_table,
    "short_referred": _short_referred,
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(short_table)s_%(column_0_N_name)s",
    "ck": "ck_%(short_table)s_%(constraint_name)s",
    "fk": "fk_%(short_table)s_%(column_0_N_name)s_%(short_referred)s",
    "pk": "pk_%(short_table)s",
}


#: The length of the ``YYYY-MM-DD HH:MM:SS.ffffff`` string SQLAlchemy's SQLite DateTime writes.
_SQLITE_WIDTH: Final = len("2000-01-01 00:00:00.000000")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on both dialects.

    SQLite has no time type: SQLAlchemy stores a fixed-width ``YYYY-MM-DD HH:MM:SS.ffffff`` string,
    which sorts and compares like the time it encodes as long as every value is UTC, so values are
    converted to UTC before they are written and given tzinfo=UTC when read back.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise ValueError("naive datetime refused: waggle_store stores timezone-aware UTC times")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None or value.tzinfo is UTC:  # (Postgres sessions of the store run in UTC)
            return value
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], Any] | None:
        """On SQLite, the fixed-width string this type writes is read in one step:
        ``fromisoformat`` of it with ``+00:00`` appended gives the UTC datetime directly, where
        parsing it naive and then ``replace(tzinfo=UTC)`` costs 5x as much (a search reads two
        times of each of its candidate frames). Elsewhere
        (Postgres, whose store sessions run in UTC) a driver's datetime already in UTC is
        returned as it is, without the general path's two calls. Any other value takes the
        general path (:meth:`process_result_value`)."""
        general = super().result_processor(dialect, coltype)
        if general is None:
            return None
        if dialect.name != "sqlite":
            if self.impl_instance.dialect_impl(dialect).result_processor(dialect, coltype):
                return general  # the driver's value needs the impl's own processing first

            def aware(value: Any) -> Any:
                if value is None or value.tzinfo is UTC:
                    return value
                return general(value)

            return aware

        def process(value: Any) -> Any:
            if type(value) is str and len(value) == _SQLITE_WIDTH:
                try:
                    return datetime.fromisoformat(value + "+00:00")
                except ValueError:  # same width, another form (an offset of its own)
                    return general(value)
            return general(value)

        return process


# Integer surrogate keys: BIGINT on Postgres, INTEGER on SQLite so the key is the rowid
# (the FTS5 and vec0 tables use the frame id as their rowid).
PK = BigInteger().with_variant(Integer(), "sqlite")
JSONType = JSON().with_variant(postgresql.JSONB(), "postgresql")


class Base(DeclarativeBase):
    metadata = MetaData(schema=SCHEMA, naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime()}

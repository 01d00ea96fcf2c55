"""Running a statement on the DBAPI cursor of a SQLAlchemy connection, inside its transaction.

Lanes (:func:`run_lane`) and the one-row writes made once per memory (:func:`run_statement`)
run here rather than through ``Connection.execute``: SQLAlchemy's per-statement execution context
(result metadata, row objects, processors) costs more than the database spends on such a
statement. SQLAlchemy still compiles every statement, once per shape (paramstyle, typed time
binds, the store's schema), and a driver error is raised as SQLAlchemy's ``DBAPIError`` with a
lost connection invalidated, as for any other statement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from sqlalchemy import Connection, Executable, TextClause, bindparam, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from waggle_store.dialects.base import Executor
from waggle_store.models.base import UTCDateTime

_TS: Final = UTCDateTime()


def connection_of(executor: Executor) -> Connection:
    """The Core connection a Session or Connection runs on (a Session begins its transaction)."""
    return executor.connection() if isinstance(executor, Session) else executor


@dataclass(frozen=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]  # the bind names, in order for a positional paramstyle
    positional: bool
    binds: tuple[tuple[str, Callable[[Any], Any]], ...]  # binds with a type processor
    literals: dict[str, Any]  # the values the statement itself holds ('I', -1, ...)


#: Compiled statements: a lane's text by itself (kept with None), a Core statement by its
#: identity (kept with the statement, so a reused id is never mistaken for it); per dialect,
#: driver and schema translation.
_COMPILED: dict[tuple[Any, ...], tuple[object, _Compiled]] = {}
#: A handful of shapes and schemas in practice; the cache never grows without bound.
_MAX_COMPILED: Final = 1024


def _cached(key: tuple[Any, ...], source: object,
            compile_: Callable[[], _Compiled]) -> _Compiled:
    found = _COMPILED.get(key)
    if found is None or found[0] is not source:
        found = (source, compile_())
        if len(_COMPILED) >= _MAX_COMPILED:
            _COMPILED.clear()
        _COMPILED[key] = found
    return found[1]


def _compile(statement: Executable, dialect: Dialect,
             translate: dict[str | None, str | None] | None) -> _Compiled:
    options = ({} if translate is None
               else {"schema_translate_map": translate, "render_schema_translate": True})
    compiled = statement.compile(dialect=dialect, **options)  # type: ignore[attr-defined]
    names = (tuple(compiled.positiontup or ()) if compiled.positional
             else tuple(dict.fromkeys(compiled.bind_names.values())))
    binds = []
    literals = {}
    for name in dict.fromkeys(names):
        bind = compiled.binds[name]
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            binds.append((name, process))
        if not bind.required:
            literals[name] = bind.effective_value
    return _Compiled(compiled.string, names, compiled.positional, tuple(binds), literals)


def _driver_args(compiled: _Compiled, params: dict[str, Any]) -> Any:
    values = {name: params[name] if name not in compiled.literals else compiled.literals[name]
              for name in compiled.names}
    for name, process in compiled.binds:
        if values[name] is not None:
            values[name] = process(values[name])
    return [values[name] for name in compiled.names] if compiled.positional else values


def driver_statement(dialect: Dialect, sql: str, params: dict[str, Any]) -> tuple[str, Any]:
    """``sql`` (``:name`` binds) and ``params`` as the DBAPI driver of ``dialect`` takes them."""
    compiled = _cached((sql, dialect.name, dialect.driver), None,
                       lambda: _compile(timed(sql), dialect, None))
    return compiled.sql, _driver_args(compiled, params)


def run_lane(executor: Executor, sql: str, params: dict[str, Any]) -> list[Any]:
    """Run one lane statement (``:name`` binds, as for ``text()``) on the DBAPI cursor of
    ``executor``'s connection, inside its transaction; the driver's rows (see
    :func:`frame_hits`).

    The text is compiled once per shape by SQLAlchemy itself (paramstyle, typed time binds).
    """
    conn = connection_of(executor)
    statement, args = driver_statement(conn.dialect, sql, params)
    return _run_on_cursor(conn, statement, args, selects=True)


def run_statement(executor: Executor, statement: Executable, params: dict[str, Any]
                  ) -> list[Any]:
    """Run a prebuilt Core ``statement`` (a module constant, built once) on the DBAPI cursor of
    ``executor``'s connection, as :func:`run_lane` runs a lane's text; the driver's rows.

    For the one-row writes called once per memory (``frames.create_i``). SQLAlchemy compiles the
    statement once per dialect and schema translation (the store's schema rendered in), with its
    bind processors and its literal values; a parameter missing from ``params`` is a
    ``KeyError`` before anything runs.
    """
    return run_statements(executor, [(statement, params)])[0]


def run_statements(executor: Executor, statements: Sequence[tuple[Executable, dict[str, Any]]]
                   ) -> list[list[Any]]:
    """:func:`run_statement` for several statements, in order; each one's rows. On Postgres
    (psycopg) they go in one pipeline: one round trip for all of them, each still run by the
    server after the one before it has finished, with its own snapshot (READ COMMITTED) — a
    statement after a lock sees what was committed before the lock was granted. An error in
    one skips the rest and is raised (the caller's transaction is then rolled back)."""
    conn = connection_of(executor)
    prepared = [(_compiled(conn, statement), params) for statement, params in statements]
    jobs = [(compiled.sql, _driver_args(compiled, params)) for compiled, params in prepared]
    if len(jobs) == 1 or conn.dialect.driver != "psycopg":
        return [_run_on_cursor(conn, sql, args) for sql, args in jobs]
    return _run_in_pipeline(conn, jobs)


def _compiled(conn: Connection, statement: Executable) -> _Compiled:
    translate = conn.get_execution_options().get("schema_translate_map")
    key = (id(statement), conn.dialect.name, conn.dialect.driver,
           tuple(sorted((translate or {}).items(), key=repr)))
    return _cached(key, statement, lambda: _compile(statement, conn.dialect, translate))


def _begin(conn: Connection) -> None:
    if not conn.in_transaction() and conn.get_execution_options().get(
            "isolation_level") != "AUTOCOMMIT":
        # The begin hook (BEGIN DEFERRED/IMMEDIATE on SQLite, the per-transaction settings on
        # PostgreSQL) runs as for execute(). A connection in autocommit has no transaction to
        # begin: SQLAlchemy's begin and commit there only keep its books.
        conn.begin()


def _run_in_pipeline(conn: Connection, jobs: list[tuple[str, Any]]) -> list[list[Any]]:
    """Each job's rows, the jobs sent in one psycopg pipeline (one round trip)."""
    _begin(conn)
    dbapi_conn: Any = conn.connection.dbapi_connection
    cursors = [dbapi_conn.cursor() for _ in jobs]
    try:
        with dbapi_conn.pipeline():
            for cursor, (sql, args) in zip(cursors, jobs, strict=True):
                cursor.execute(sql, args)
        # Leaving the block synced the pipeline: every result has arrived.
        return [cursor.fetchall() if cursor.description is not None else [] for cursor in cursors]
    except conn.dialect.loaded_dbapi.Error as exc:
        # (An error arrives at the sync, not at its statement's execute: all are named.)
        params = [args for _, args in jobs]
        raise_driver_error(conn, exc, ";\n".join(sql for sql, _ in jobs),
                           params if len(jobs) > 1 else params[0])
    finally:
        for cursor in cursors:
            cursor.close()


def _run_on_cursor(conn: Connection, statement: str, args: Any, *, selects: bool = False
                   ) -> list[Any]:
    """``statement`` on a cursor of ``conn``'s DBAPI connection; its rows (none for a statement
    that returns none). ``selects``: it is a query (a lane's ``SELECT`` / ``WITH``), so its rows
    are fetched without asking ``cursor.description`` first (psycopg builds it column by
    column)."""
    _begin(conn)
    dialect = conn.dialect
    dbapi_conn = conn.connection.dbapi_connection
    cursor = dbapi_conn.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(statement, args)
        rows: list[Any] = (cursor.fetchall()  # type: ignore[assignment]  # DBAPI: rows
                           if selects or cursor.description is not None else [])
    except dialect.loaded_dbapi.Error as exc:
        raise_driver_error(conn, exc, statement, args, cursor)
    finally:
        cursor.close()
    return rows


def raise_driver_error(conn: Connection, exc: Any, statement: str, args: Any,
                       cursor: Any = None) -> NoReturn:
    """Raise the driver's ``exc`` (its ``Error``, caught by the caller, from work on ``conn``'s
    DBAPI connection outside SQLAlchemy's execution) as SQLAlchemy raises a statement's: a
    ``DBAPIError`` subclass, and a lost connection invalidated (``connection_invalidated``), so
    callers tell a lost connection from a failing statement as for any other."""
    dialect = conn.dialect
    lost = dialect.is_disconnect(exc, conn.connection.dbapi_connection, cursor)
    if lost:
        conn.invalidate(exc)
    raise sa_exc.DBAPIError.instance(
        statement,
        args,
        exc,
        dialect.loaded_dbapi.Error,
        connection_invalidated=lost,
        dialect=dialect,
    ) from exc


def timed(sql: str) -> TextClause:
    """``text(sql)`` with the time parameters typed as the ``created_at`` column."""
    clause = text(sql)
    binds = [
        bindparam(name, type_=_TS) for name in ("since", "until") if re.search(rf":{name}\b", sql)
    ]
    return clause.bindparams(*binds) if binds else clause


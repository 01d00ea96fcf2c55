"""What both adapters do the same way: lane filters, time binding, the frame columns every lane
returns, how a lane statement runs (:func:`run_lane`), the LIKE fallback.

They live here, still inside ``dialects/``, so that the adapters differ only where the databases
do (FTS5 vs tsvector, vec0 vs pgvector, LIKE vs ILIKE).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from sqlalchemy import Connection, Executable, TextClause, bindparam, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

from waggle_store.dialects.base import (
    T_EMBEDDINGS,
    T_FRAMES,
    T_MENTIONS,
    T_MIND_MODELS,
    Executor,
    LaneFilter,
    LaneHit,
    ModelNotActiveError,
)
from waggle_store.models.base import UTCDateTime
from waggle_store.records import Frame
from waggle_store.textinput import scrub

_TS: Final = UTCDateTime()
log = logging.getLogger(__name__)


def clean_term(term: object) -> str:
    """``term`` with control, format and surrogate characters (``C*``) turned into spaces, stripped;
    ``""`` for a non-string. The query builders take terms from any caller: a NUL makes FTS5 raise
    "unterminated string" and psycopg refuse the parameter, a lone surrogate cannot be encoded."""
    return scrub(term) if isinstance(term, str) else ""


def frame_filters(where: LaneFilter, params: dict[str, Any], alias: str = "f",
                  mind_alias: str | None = None, *, inline_minds: bool = False) -> str:
    """SQL conditions for the mind/session/time filters (bound; ``inline_minds``: the mind ids,
    integers, written into the text instead, see the Postgres KNN for why).

    ``alias`` names the table carrying ``gop_id``/``created_at``, ``mind_alias`` (default: the
    same) the one carrying ``mind_id``. Times are bound through :func:`timed` so they are written
    exactly like the stored column (on SQLite a fixed-width UTC string; a differently formatted
    string would compare wrongly).
    """
    names = []
    for i, mind_id in enumerate(where.mind_ids):
        if inline_minds:
            names.append(str(int(mind_id)))
            continue
        params[f"m{i}"] = int(mind_id)
        names.append(f":m{i}")
    sql = [f"{mind_alias or alias}.mind_id IN ({', '.join(names) or 'NULL'})"]
    if where.gop_id is not None:
        params["gop_id"] = where.gop_id
        sql.append(f"{alias}.gop_id = :gop_id")
    if where.since is not None:
        params["since"] = where.since
        sql.append(f"{alias}.created_at >= :since")
    if where.until is not None:
        params["until"] = where.until
        sql.append(f"{alias}.created_at <= :until")
    return " AND ".join(sql)


#: The columns of :class:`waggle_store.records.Frame` after its id (its fields are the
#: ``memory_frames`` columns), as lanes select them after ``id, score`` (see :func:`frame_select`).
FRAME_COLUMNS: Final = tuple(field.name for field in dataclasses.fields(Frame))[1:]


def frame_select(alias: str = "f") -> str:
    """The select list a lane puts after ``id, score``: :data:`FRAME_COLUMNS`, then whether the
    frame mentions any entity (an index probe per hit; the search skips its graph-distance query
    when no candidate does)."""
    columns = ", ".join(f"{alias}.{name}" for name in FRAME_COLUMNS)
    mentions = f"EXISTS (SELECT 1 FROM {T_MENTIONS} m WHERE m.frame_id = {alias}.id) AS mentions"
    return f"{columns}, {mentions}"


#: Where ``frame_select()`` puts the two times and the mention flag, after ``id, score``.
_CREATED, _LAST_ACCESSED = (
    2 + FRAME_COLUMNS.index("created_at"),
    2 + FRAME_COLUMNS.index("last_accessed"),
)
_MENTIONS = 2 + len(FRAME_COLUMNS)
assert (_CREATED, _LAST_ACCESSED) == (_MENTIONS - 2, _MENTIONS - 1)  # the times close the frame
_TIME_READERS: dict[tuple[str, str], Callable[[Any], Any]] = {}


def connection_of(executor: Executor) -> Connection:
    """The Core connection a Session or Connection runs on (a Session begins its transaction)."""
    return executor.connection() if isinstance(executor, Session) else executor


def frame_hits(executor: Executor, rows: Sequence[Any]) -> list[LaneHit]:
    """``LaneHit``s of driver rows ``(id, score, *frame_select(), ...)``, times read as UTC
    datetimes the way the ``created_at`` column reads them."""
    dialect = connection_of(executor).dialect
    read = _TIME_READERS.get((dialect.name, dialect.driver))
    if read is None:
        read = _TS.dialect_impl(dialect).result_processor(dialect, None)
        assert read is not None  # a TypeDecorator always processes (to UTC)
        _TIME_READERS[(dialect.name, dialect.driver)] = read
    hits: list[LaneHit] = []
    append = hits.append
    for r in rows:
        frame_id = int(r[0])
        # A frame never recalled was last accessed when it was created (the same stored value):
        # read once and the same (immutable) datetime used twice, half of a search's reads.
        created, last = r[_CREATED], r[_LAST_ACCESSED]
        at = read(created)
        frame = (frame_id, *r[2:_CREATED], at, at if last == created else read(last))
        append(LaneHit(frame_id, float(r[1]), frame, bool(r[_MENTIONS])))
    return hits


def checked_knn(source: str, key: str, distance: str) -> str:
    """A KNN's candidates ``c`` (``source``: the derived table or CTE that yields them, frame id in
    ``c.<key>``, distance in ``c.<distance>``) with the manifest check riding along as LEFT JOINs,
    so one statement ranks, says which candidates are current and reads their frames. Rows:
    ``(id, distance, *frame_select(), current, model still the mind's active one)`` (the mind
    bound as ``check_mind``: a switch may have flipped it since the caller looked it up); see
    :func:`current_hits`.
    """
    return (
        f"SELECT c.{key}, c.{distance}, {frame_select()}, f.id IS NOT NULL, "
        f"EXISTS (SELECT 1 FROM {T_MIND_MODELS} WHERE mind_id = :check_mind "
        "AND model_id = :model_id AND status = 'active') "
        f"FROM {source} "
        f"LEFT JOIN {T_EMBEDDINGS} e ON e.frame_id = c.{key} AND e.status = 'ready' "
        "AND e.model_id = :model_id "
        f"LEFT JOIN {T_FRAMES} f ON f.id = c.{key} AND f.content_hash = e.content_hash"
    )


def current_hits(executor: Executor, rows: Sequence[Any], model_id: int) -> list[LaneHit]:
    """The current candidates of :func:`checked_knn` rows, in their order;
    :class:`ModelNotActiveError` if ``model_id`` is no longer the mind's active model."""
    if rows and not rows[0][-1]:
        raise ModelNotActiveError(model_id)
    return frame_hits(executor, [r for r in rows if r[-2]])


@dataclass(frozen=True)
class _Prepared:
    sql: str
    names: tuple[str, ...] | None  # the bind names in order, for a positional paramstyle
    binds: tuple[tuple[str, Callable[[Any], Any]], ...]  # binds with a type processor


_PREPARED: dict[tuple[str, str, str], _Prepared] = {}


def _prepare(sql: str, dialect: Dialect) -> _Prepared:
    key = (sql, dialect.name, dialect.driver)
    prepared = _PREPARED.get(key)
    if prepared is None:
        clause = timed(sql)
        compiled = clause.compile(dialect=dialect)
        binds = []
        for name, bind in compiled.binds.items():  # the ones timed() typed have a processor
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                binds.append((name, process))
        prepared = _Prepared(
            compiled.string,
            tuple(compiled.positiontup or ()) if compiled.positional else None,
            tuple(binds),
        )
        if len(_PREPARED) > 1024:  # a handful of shapes in practice; never grow without bound
            _PREPARED.clear()
        _PREPARED[key] = prepared
    return prepared


def driver_statement(dialect: Dialect, sql: str, params: dict[str, Any]) -> tuple[str, Any]:
    """``sql`` (``:name`` binds) and ``params`` as the DBAPI driver of ``dialect`` takes them:
    compiled by SQLAlchemy once per shape (paramstyle; time binds processed like the column)."""
    prepared = _prepare(sql, dialect)
    values = dict(params)
    for name, process in prepared.binds:
        if values.get(name) is not None:
            values[name] = process(values[name])
    args: Any = values if prepared.names is None else [values[name] for name in prepared.names]
    return prepared.sql, args


def run_lane(executor: Executor, sql: str, params: dict[str, Any]) -> list[Any]:
    """Run one lane statement (``:name`` binds, as for ``text()``) on the DBAPI cursor of
    ``executor``'s connection, inside its transaction; the driver's rows (see
    :func:`frame_hits`).

    Why not ``session.execute(text(...))``: SQLAlchemy's per-statement execution context (result
    metadata, row objects, processors) cost about 0.25 ms a statement, a fifth of a whole search
    at 10k frames (``benchmarks/search_latency.py``). The statement is compiled once per shape by
    SQLAlchemy itself (paramstyle, typed time binds); errors are wrapped as SQLAlchemy's
    ``DBAPIError`` subclasses like any other statement's, and a lost connection is invalidated.
    """
    conn = connection_of(executor)
    statement, args = driver_statement(conn.dialect, sql, params)
    return _run_on_cursor(conn, statement, args, selects=True)


def run_statement(executor: Executor, statement: Executable, params: dict[str, Any]
                  ) -> list[Any]:
    """Run a prebuilt Core ``statement`` (a module constant, built once) on the DBAPI cursor of
    ``executor``'s connection, as :func:`run_lane` runs a lane's text; the driver's rows.

    For the one-row writes called once per memory (``frames.create_i``): their execution
    contexts cost SQLAlchemy more than SQLite spent running them (``benchmarks/README.md``,
    ingest vs the floor). SQLAlchemy compiles the statement once per dialect and schema
    translation (the store's schema rendered in), with its bind processors and its literal
    values; a parameter missing from ``params`` is a ``KeyError`` before anything runs.
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
    prepared = _STATEMENTS.get(key)
    if prepared is None or prepared[0] is not statement:
        prepared = (statement, _prepare_compiled(statement, conn.dialect, translate))
        if len(_STATEMENTS) > 1024:  # a handful of statements and schemas in practice
            _STATEMENTS.clear()
        _STATEMENTS[key] = prepared
    return prepared[1]


def _driver_args(compiled: _Compiled, params: dict[str, Any]) -> Any:
    values = {name: params[name] if name not in compiled.literals else compiled.literals[name]
              for name in compiled.names}
    for name, process in compiled.binds:
        if values[name] is not None:
            values[name] = process(values[name])
    return [values[name] for name in compiled.names] if compiled.positional else values


@dataclass(frozen=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]  # the bind names, in order for a positional paramstyle
    positional: bool
    binds: tuple[tuple[str, Callable[[Any], Any]], ...]  # binds with a type processor
    literals: dict[str, Any]  # the values the statement itself holds ('I', -1, ...)


_STATEMENTS: dict[tuple[Any, ...], tuple[Executable, _Compiled]] = {}


def _prepare_compiled(statement: Executable, dialect: Dialect,
                      translate: dict[str | None, str | None] | None) -> _Compiled:
    compiled = statement.compile(  # type: ignore[attr-defined]  # every Core statement has it
        dialect=dialect, schema_translate_map=translate, render_schema_translate=True)
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


def _begin(conn: Connection) -> None:
    if not conn.in_transaction() and conn.get_execution_options().get(
            "isolation_level") != "AUTOCOMMIT":
        # The begin hook (BEGIN DEFERRED/IMMEDIATE on SQLite) runs as for execute(). A connection
        # in autocommit (Postgres reads, :meth:`~waggle_store.unitofwork.Database.read_connection`)
        # has no transaction to begin: SQLAlchemy's begin and commit there only keep its books.
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
    are fetched without asking ``cursor.description`` first, which psycopg builds as a list of
    column objects, one per column (~17 µs a lane statement of 18 columns, measured on 2 vCPUs)."""
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


def like_search(
    session: Executor, *, operator: str, patterns: Sequence[str], where: LaneFilter, limit: int
) -> list[LaneHit]:
    """The escaped-LIKE fallback for a keyword index that errors: newest matches first.

    ``operator`` is the dialect's case-insensitive match (SQLite ``LIKE`` folds ASCII, Postgres
    needs ``ILIKE``); patterns come from :func:`waggle_store.search.query.like_patterns`.
    """
    if not patterns or not where.mind_ids:
        return []
    params: dict[str, Any] = {"limit": int(limit)}
    likes = []
    for i, pattern in enumerate(patterns):
        params[f"p{i}"] = pattern
        likes.append(f"f.content {operator} :p{i} ESCAPE '\\'")
    filters = frame_filters(where, params)
    rows = run_lane(
        session,
        f"SELECT f.id, 0.0 AS score, {frame_select()} FROM {T_FRAMES} f "
        f"WHERE {filters} AND ({' OR '.join(likes)}) "
        "ORDER BY f.created_at DESC, f.id DESC LIMIT :limit",
        params,
    )
    return frame_hits(session, rows)


def frames_missing_vectors(
    session: Session, table: str, key: str, model_id: int, mind_id: int | None,
    *, after: int = 0, limit: int | None = None, up_to: int | None = None,
) -> list[int]:
    """Frames whose manifest says ready for ``model_id`` (and matches their content) but whose
    row in the vector ``table`` (frame id in column ``key``: ``rowid`` for vec0, ``frame_id``
    on Postgres) is missing. A manifest for other content is stale whatever the vector table
    holds (reconcile finds those by the manifest alone), so the two sets never overlap.

    By id, from ``after`` (exclusive) to ``up_to`` (inclusive), at most ``limit`` of them:
    reconcile walks a large store page by page instead of holding every id."""
    params: dict[str, Any] = {"model_id": model_id, "after": after}
    mind = ""
    if mind_id is not None:
        params["mind_id"] = mind_id
        mind += " AND f.mind_id = :mind_id"
    if up_to is not None:
        params["up_to"] = up_to
        mind += " AND f.id <= :up_to"
    page = ""
    if limit is not None:
        params["limit"] = limit
        page = " LIMIT :limit"
    rows = session.execute(
        text(
            f"SELECT f.id FROM {T_FRAMES} f JOIN {T_EMBEDDINGS} e ON e.frame_id = f.id "
            f"WHERE e.status = 'ready' AND e.model_id = :model_id "
            f"AND e.content_hash = f.content_hash AND f.id > :after{mind} AND NOT EXISTS "
            f"(SELECT 1 FROM {table} v WHERE v.{key} = f.id) ORDER BY f.id{page}"
        ),
        params,
    ).all()
    return [int(r[0]) for r in rows]

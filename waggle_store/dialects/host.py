"""A host application's Engine or Connection, made usable by waggle_store without changing it.

``open_store(engine)`` gets an :class:`~sqlalchemy.engine.Engine` the host owns. waggle_store
runs on ``engine.execution_options(...)``: a copy that shares the host's pool, whose options and
event hooks are its own, so the host's engine and its other connections are unchanged:

* ``schema_translate_map`` puts the models' tables (schema ``waggle``) where the store keeps them
  (the store's schema on PostgreSQL, no schema on SQLite);
* an engine waggle_store did not build (:attr:`EngineInfo.configured` false) is prepared per
  transaction by the dialect's :func:`begin_host_transaction`: on PostgreSQL the store's schema
  goes first on the ``search_path`` with ``SET LOCAL`` (raw SQL names tables unqualified; the
  setting ends with waggle_store's own transaction); on SQLite a pooled connection is given
  sqlite-vec (when its driver can load extensions) and ``PRAGMA foreign_keys = ON`` once (this
  one setting stays on that connection: SQLite cascades need it), and writes begin
  ``BEGIN IMMEDIATE``.

``store.within(connection)`` runs inside the host's transaction: :func:`join_transaction` and
:func:`leave_transaction` wrap each waggle_store operation (see ``waggle_store.unitofwork``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from sqlalchemy import Connection, event
from sqlalchemy.engine import Engine

from waggle_store.config import StoreConfig
from waggle_store.dialects.info import engine_info
from waggle_store.dialects.registry import spec_of
from waggle_store.models.base import schema_translate_map

_VEC_KEY = "waggle_store_prepared"

#: The execution option of a store that runs no DDL (opened with ``upgrade=False``): a vector
#: table it lacks is an error naming the admin step, never a CREATE (least privilege).
NO_DDL_OPTION = "waggle_no_ddl"

#: The execution option of a bound store's engine (:func:`bound_engine`): the id of its mind,
#: which the server's row-level security confines each of its transactions to.
BOUND_MIND_OPTION = "waggle_bound_mind"


def without_ddl(engine: Engine) -> Engine:
    """``engine`` (a copy sharing its pool) marked so that nothing run on it creates tables."""
    return engine.execution_options(**{NO_DDL_OPTION: True})


def bound_engine(engine: Engine, mind_id: int) -> Engine:
    """A copy of ``engine`` (same pool) whose every transaction is confined to one mind on the
    server too, where the backend can (see :attr:`DialectSpec.bind_mind`); raw SQL on it sees
    only that mind's rows. The engine it came from is unchanged."""
    hook = spec_of(engine).bind_mind
    if hook is None:  # no row-level security on this backend: the library alone confines it
        return engine
    bound = engine.execution_options(**{BOUND_MIND_OPTION: int(mind_id)})
    event.listen(bound, "begin", partial(_begin_bound, hook=hook, mind_id=int(mind_id)))
    return bound


def _begin_bound(conn: Connection, *, hook: Callable[[Connection, int], None],
                 mind_id: int) -> None:
    hook(conn, mind_id)


def waggle_engine(engine: Engine, schema: str | None) -> Engine:
    """The engine waggle_store runs on over ``engine`` (see the module docstring)."""
    options = engine.execution_options(schema_translate_map=schema_translate_map(schema))
    if not engine_info(engine).configured:
        lock_timeout_ms = StoreConfig.from_env().lock_timeout_ms
        event.listen(options, "begin", partial(begin_host_transaction, schema=schema,
                                               lock_timeout_ms=lock_timeout_ms))
    return options


def begin_host_transaction(conn: Connection, *, schema: str | None,
                           lock_timeout_ms: int = 30_000) -> None:
    """Prepare one waggle_store transaction on a connection of a host's engine."""
    if conn.dialect.name == "sqlite":
        _prepare_sqlite(conn)
        if not _sqlite_in_transaction(conn):
            mode = conn.get_execution_options().get("waggle_txn", "write")
            conn.exec_driver_sql("BEGIN DEFERRED" if mode == "read" else "BEGIN IMMEDIATE")
        return
    # waggle_store's own engines set lock_timeout at connect; a host's engine per transaction
    conn.exec_driver_sql(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}")
    if schema is not None:
        ops = spec_of(conn).schemas
        if ops is not None:
            ops.enter(conn, schema)


def sqlite_write_lock(conn: Connection) -> None:
    """``BEGIN IMMEDIATE`` unless the driver has begun a transaction already (waggle_store's
    engines begin every write that way; a host's pysqlite begins lazily, at its first write)."""
    if not _sqlite_in_transaction(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_in_transaction(conn: Connection) -> bool:
    return bool(getattr(conn.connection.dbapi_connection, "in_transaction", False))


def _prepare_sqlite(conn: Connection) -> None:
    """sqlite-vec and foreign keys, once per pooled DBAPI connection (outside a transaction:
    ``PRAGMA foreign_keys`` is a no-op inside one)."""
    info = conn.connection.info
    if info.get(_VEC_KEY):
        return
    info[_VEC_KEY] = True
    from waggle_store.dialects.sqlite_engine import _load_sqlite_vec

    dbapi = conn.connection.dbapi_connection
    if not _sqlite_in_transaction(conn):
        cur = dbapi.cursor()  # type: ignore[union-attr]
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()
    _load_sqlite_vec(dbapi, engine_info(conn.engine))


def join_transaction(conn: Connection, schema: str | None) -> str | None:
    """Called inside the SAVEPOINT of one ``store.within(...)`` operation: what the dialect
    needs of the host's connection for it. Returns what :func:`leave_transaction` restores."""
    if conn.dialect.name == "sqlite":
        return None
    ops = spec_of(conn).schemas
    if ops is None or schema is None:
        return None
    return ops.enter(conn, schema)


def leave_transaction(conn: Connection, previous: str | None) -> None:
    ops = spec_of(conn).schemas
    if previous is not None and ops is not None:
        ops.leave(conn, previous)


def open_host_transaction(conn: Connection) -> None:
    """Make sure a real transaction is open before the first SAVEPOINT on a SQLite connection:
    without one, SQLite's outermost ``RELEASE`` is a ``COMMIT`` and the operation would commit
    on its own instead of with the host's transaction."""
    if conn.dialect.name == "sqlite":
        if not conn.in_transaction():
            conn.begin()
        if not _sqlite_in_transaction(conn):
            conn.exec_driver_sql("BEGIN IMMEDIATE")


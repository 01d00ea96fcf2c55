"""The unit of work: short read and write transactions over one engine, errors translated.

Repositories take a Session and never commit; whoever calls them owns the transaction. For the
library's own API that owner is a :class:`Database`: every public call opens one transaction
(``write()`` or ``read()``), commits it, and turns driver errors into waggle_store errors, so
that after any exception nothing of that call remains.

It lives low in the package (it needs only SQLAlchemy and :mod:`waggle_store.errors`) so that
every layer that must open a transaction — embeddings' quota counter, the pipelines, the
facades — can be handed one without importing the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, NoReturn

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

from waggle_store.errors import (
    ConflictError,
    DatabaseUnavailableError,
    InvalidInputError,
    MissingExtensionError,
    ReadOnlyStorageError,
    StorageBusyError,
    StorageError,
    StorageFullError,
    WaggleStoreError,
)

__all__ = ["Database", "JoinedDatabase", "raise_translated", "storage_cause", "translate_error"]


class Database:
    """Read and write transactions over one engine (and its read-only variant).

    ``read_engine`` is the same engine and pool with SQLite transactions started DEFERRED
    (see :func:`waggle_store.engine.read_only`).
    """

    #: Whether its connections are its own, from its engine's pool: a read that lost one may run
    #: again on another. A host's connection (:class:`JoinedDatabase`) took the host's
    #: transaction with it.
    owns_connections = True

    def __init__(self, engine: sa.Engine, read_engine: sa.Engine) -> None:
        self.engine = engine
        self._read_engine = read_engine
        self.closed = False
        #: Whether every read connection begins its transaction at once and never runs in
        #: autocommit: a bound store's engine sets its mind per transaction (its ``begin``
        #: hook), which a statement sent before the begin, or in autocommit, would miss.
        self.begins_transactions = False

    def _require_open(self) -> None:
        if self.closed:
            raise WaggleStoreError("this store is closed")

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One write transaction (BEGIN IMMEDIATE on SQLite); commits on success."""
        with self._session(self.engine, Session) as session:
            yield session

    @contextmanager
    def read(self) -> Iterator[Session]:
        """One read transaction (BEGIN DEFERRED on SQLite). It refuses to flush (a read that
        writes is a bug) and ends with COMMIT, which for a transaction that wrote nothing is the
        same as ROLLBACK, except that psycopg keeps its prepared statements (see
        :meth:`read_connection`)."""
        with self._session(self._read_engine, _ReadSession) as session:
            yield session

    @contextmanager
    def read_connection(self, *, snapshot: bool = False) -> Iterator[sa.Connection]:
        """One read transaction on a Core connection (BEGIN DEFERRED on SQLite), for read paths
        made only of statements (search): an ORM Session's bookkeeping cost a search about as
        much as one of its queries.

        ``snapshot=True``: every statement of the transaction reads the same snapshot (a
        whole-mind export paged over many statements). A SQLite read transaction always does;
        on PostgreSQL it runs at REPEATABLE READ, set before the transaction begins (a bound
        store begins it at once, to set its mind).

        It ends with COMMIT, not ROLLBACK (the same for a transaction that wrote nothing):
        psycopg discards every prepared statement of the connection on ROLLBACK, so searches
        that rolled back would be parsed and planned afresh every time.
        An exception still rolls back.
        """
        self._require_open()
        try:
            with self._read_engine.connect() as conn:
                if snapshot and conn.dialect.name == "postgresql":
                    conn.execution_options(isolation_level="REPEATABLE READ")
                if self.begins_transactions:
                    conn.begin()
                yield conn
                if conn.in_transaction():
                    conn.commit()
        except BaseException as exc:  # noqa: BLE001 - re-raised, translated
            raise_translated(exc)

    @contextmanager
    def _session(self, bind: sa.Engine, session_class: type[Session]) -> Iterator[Session]:
        self._require_open()
        session = session_class(bind, expire_on_commit=False, autoflush=True)
        try:
            yield session
            session.commit()
        except BaseException as exc:  # noqa: BLE001 - rolled back and re-raised
            session.rollback()
            raise_translated(exc)
        finally:
            session.close()


class JoinedDatabase(Database):
    """The unit of work of ``store.within(connection)``: every operation runs in a SAVEPOINT
    inside the host's open transaction on ``connection``, so it commits or rolls back with the
    host's (and a failed operation rolls back only itself: the host's transaction stays usable).

    The connection gets the store's ``schema_translate_map`` (and on PostgreSQL the store's
    schema first on the ``search_path``) for the operation only; both are put back after it.
    """

    owns_connections = False

    def __init__(self, connection: sa.Connection, schema: str | None,
                 translate: dict[str | None, str | None]) -> None:
        super().__init__(connection.engine, connection.engine)
        self.connection = connection
        self._schema = schema
        self._translate = translate

    @contextmanager
    def _joined(self) -> Iterator[sa.Connection]:
        from waggle_store.dialects.host import (
            join_transaction,
            leave_transaction,
            open_host_transaction,
        )

        self._require_open()
        conn = self.connection
        before = conn.get_execution_options().get("schema_translate_map")
        conn.execution_options(schema_translate_map=self._translate)
        try:
            try:
                open_host_transaction(conn)
                nested = conn.begin_nested()
            except BaseException as exc:  # noqa: BLE001 - re-raised, translated
                raise_translated(exc)  # the host's connection lost: DatabaseUnavailableError
            try:
                previous = join_transaction(conn, self._schema)
                yield conn
                leave_transaction(conn, previous)
                nested.commit()
            except BaseException as exc:  # noqa: BLE001 - rolled back and re-raised
                if nested.is_active:
                    nested.rollback()
                raise_translated(exc)
        finally:
            conn.execution_options(schema_translate_map=before)

    @contextmanager
    def write(self) -> Iterator[Session]:
        with self._joined_session(Session) as session:
            yield session

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._joined_session(_ReadSession) as session:
            yield session

    @contextmanager
    def _joined_session(self, session_class: type[Session]) -> Iterator[Session]:
        """A Session on the host's connection, inside this operation's savepoint."""
        with self._joined() as conn:
            session = session_class(bind=conn, expire_on_commit=False, autoflush=True,
                                    join_transaction_mode="rollback_only")
            try:
                yield session
                session.flush()
            finally:
                session.close()

    @contextmanager
    def read_connection(self, *, snapshot: bool = False) -> Iterator[sa.Connection]:
        """The host's transaction, whose isolation is the host's to choose (``snapshot`` is
        what it gives)."""
        with self._joined() as conn:
            yield conn


class _ReadSession(Session):
    """The session of :meth:`Database.read`: ORM changes are refused at flush time."""


@sa.event.listens_for(_ReadSession, "before_flush")
def _refuse_flush(session: Session, flush_context: Any, instances: Any) -> None:
    if session.new or session.dirty or session.deleted:
        raise WaggleStoreError("a read transaction cannot write: use store.write()")


def raise_translated(exc: BaseException) -> NoReturn:
    """Re-raise ``exc`` (being handled by the caller), as a waggle_store error if it is a
    driver error."""
    translated = translate_error(exc)
    if translated is exc:
        raise exc
    raise translated from exc


def translate_error(exc: BaseException) -> BaseException:
    """Driver errors become waggle_store errors; everything else passes through unchanged.

    Storage failures are translated by cause (:func:`storage_cause`), looking through the
    exception chain: when SQLite hits a full disk it rolls the whole transaction back, so the
    error that surfaces is SQLAlchemy's failed ``ROLLBACK TO SAVEPOINT`` ("no such savepoint"),
    and the real cause is only in its ``__context__``.
    """
    if isinstance(exc, (UnicodeEncodeError, OverflowError)):
        # Raised by the driver while binding a value (a lone surrogate; an int beyond 64 bits
        # on SQLite), before any SQL ran: bad input that slipped past waggle_store.textinput.
        return InvalidInputError(f"a value cannot be stored or compared: {exc}")
    if isinstance(exc, WaggleStoreError) or not isinstance(exc, sa_exc.SQLAlchemyError):
        return exc
    orig = getattr(exc, "orig", None)
    if isinstance(exc, sa_exc.DataError) and storage_cause(exc) is None:
        # The database refused a value (Postgres SQLSTATE class 22: a NUL in text, a number
        # out of range): the caller's input, not the storage.
        return InvalidInputError(f"the database refused a value: {orig or exc}")
    if isinstance(exc, sa_exc.StatementError) and isinstance(orig, ValueError) and not isinstance(
        exc, sa_exc.DBAPIError
    ):
        return InvalidInputError(str(orig))
    if "no such module: vec0" in str(orig):
        # A connection whose driver cannot load sqlite-vec (a host's stdlib sqlite3) touched a
        # frame with vectors: the vector tables and their delete trigger need the extension.
        return MissingExtensionError(
            "this SQLite connection cannot load sqlite-vec, which the store's vector tables "
            "need (deleting or changing a memory deletes its vectors): open the store from a "
            "URL, or create the engine with a driver that loads extensions, e.g. "
            "sqlalchemy.create_engine(url, module=sqlean.dbapi2) (pip install "
            "'waggle-store[sqlite]')")
    if isinstance(exc, sa_exc.IntegrityError):
        return ConflictError(f"the database refused the write: {orig or exc}")
    found = storage_cause(exc)
    if found is not None:
        kind, cause = found
        return kind(f"{_WHAT[kind]}: {cause}")
    return StorageError(f"database error: {orig or exc}")


_WHAT: Final[dict[type[StorageError], str]] = {
    StorageFullError: "the database or its disk is full; nothing of this call was stored",
    ReadOnlyStorageError: "the database refuses writes (read-only)",
    StorageBusyError: (
        "the database stayed locked by another transaction past the busy timeout (if this "
        "thread holds that transaction, a host's own, run the call inside it through "
        "store.within(connection_or_session))"),
    DatabaseUnavailableError: "the connection to the database was lost",
}


def storage_cause(exc: BaseException) -> tuple[type[StorageError], BaseException] | None:
    """The storage failure behind ``exc`` (itself, or an exception it was raised from or while
    handling), as (error class, the driver exception), or None when there is none."""
    for candidate in _chain(exc):
        if isinstance(candidate, sa_exc.DBAPIError) and candidate.connection_invalidated:
            return DatabaseUnavailableError, candidate
        driver: BaseException = candidate
        if isinstance(candidate, sa_exc.DBAPIError) and candidate.orig is not None:
            driver = candidate.orig
        kind = _classify(driver)
        if kind is not None:
            return kind, driver
    return None


def _chain(exc: BaseException, limit: int = 12) -> list[BaseException]:
    seen: set[int] = set()
    out: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo and len(out) < limit:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        out.append(current)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return out


def _classify(driver: BaseException) -> type[StorageError] | None:
    """SQLite result codes (``sqlite_errorname``, else the message) and Postgres SQLSTATEs."""
    name = str(getattr(driver, "sqlite_errorname", "") or "")
    state = str(getattr(driver, "sqlstate", "") or "")
    text = str(driver).lower()
    if name.startswith("SQLITE_FULL") or state == "53100" or "database or disk is full" in text:
        return StorageFullError
    if (name.startswith("SQLITE_READONLY") or state == "25006"
            or "attempt to write a readonly database" in text):
        return ReadOnlyStorageError
    if (name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or state == "55P03"
            or "database is locked" in text):
        return StorageBusyError
    if state.startswith("08") or state in ("57P01", "57P02", "57P03"):
        return DatabaseUnavailableError
    return None

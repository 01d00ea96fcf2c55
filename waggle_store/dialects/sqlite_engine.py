"""SQLite engines: driver choice, sqlite-vec loading, PRAGMAs, BEGIN discipline.

Rules: the driver's implicit transaction handling is switched off
(``isolation_level=None``) and the ``begin`` hook emits the BEGIN itself: ``BEGIN IMMEDIATE`` for
writes, so that two writers queue on the lock instead of failing with "database is locked" when
one upgrades a read snapshot; ``BEGIN DEFERRED`` for connections marked read-only through the
``waggle_txn="read"`` execution option (``waggle_store.engine.read_only``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sqlite3
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from tenacity import retry, retry_if_exception, stop_after_delay, wait_random_exponential

from waggle_store.config import SYNCHRONOUS_MODES, StoreConfig
from waggle_store.dialects.info import EngineInfo, engine_info
from waggle_store.errors import (
    InvalidInputError,
    MissingExtensionError,
    WaggleStoreWarning,
    warn_at_caller,
)
from waggle_store.models.base import schema_translate_map


def _can_load_extensions(module: ModuleType) -> bool:
    # Any failure here (no such method, "not authorized", a broken build) means "cannot".
    try:
        conn = module.connect(":memory:")
    except Exception:  # noqa: BLE001
        return False
    try:
        conn.enable_load_extension(True)
        conn.enable_load_extension(False)
        return True
    except Exception:  # noqa: BLE001
        return False
    finally:
        conn.close()


def pick_sqlite_driver() -> tuple[ModuleType, str]:
    """The first DB-API SQLite module of stdlib / sqlean / pysqlite3 that can load extensions.

    Many Python builds (pyenv's among them) compile the stdlib module without extension loading,
    which would leave the store with no vector search, so a capable module is preferred.
    """
    candidates: list[tuple[str, str]] = [
        ("sqlite3", "sqlite3"),
        ("sqlean.dbapi2", "sqlean"),
        ("pysqlite3.dbapi2", "pysqlite3"),
    ]
    for module_name, label in candidates:
        try:
            module = sqlite3 if module_name == "sqlite3" else importlib.import_module(module_name)
        except ImportError:
            continue
        if _can_load_extensions(module):
            return module, label
    raise MissingExtensionError(
        "This Python's sqlite3 module cannot load SQLite extensions (needed for sqlite-vec). "
        "Install a SQLite that can: pip install 'waggle-store[sqlite]' (sqlean-py) "
        "or pip install pysqlite3-binary."
    )


def sqlite_wal_reset_affected(version: tuple[int, int, int]) -> bool:
    """SQLite 3.7.0–3.51.2 have the WAL-reset corruption bug, except the 3.44.6 and 3.50.7
    backports."""
    if version in ((3, 44, 6), (3, 50, 7)):
        return False
    return (3, 7, 0) <= version <= (3, 51, 2)


_warned = False
#: The start of the WAL-reset warning (a ``warnings`` filter's ``message`` pattern).
WAL_RESET_WARNING = r"SQLite [0-9.]+ is affected by the WAL-reset bug"


def _sqlite_driver() -> tuple[ModuleType, str, str | None]:
    """The capable driver, else the stdlib's with the reason vector search is off: FTS5
    keyword search works without extensions, so a store still opens (keyword-only)."""
    try:
        module, label = pick_sqlite_driver()
    except MissingExtensionError as exc:
        return sqlite3, "sqlite3", str(exc)
    return module, label, None


def _note_wal_reset(info: EngineInfo, version: str) -> None:
    """Record the WAL-reset note for ``health()`` on every engine, warn once per process, at
    the application's frame."""
    global _warned
    major, minor, patch = (int(p) for p in [*version.split("."), "0", "0"][:3])
    if not sqlite_wal_reset_affected((major, minor, patch)):
        return
    note = (
        f"SQLite {version} is affected by the WAL-reset bug "
        "(fixed in 3.51.3, backported to 3.44.6 and 3.50.7): upgrade the SQLite library "
        "if several processes write to one store"
    )
    info.warnings.append(note)
    if not _warned:
        _warned = True
        warn_at_caller(note, WaggleStoreWarning)


def _create_private(url: sa.URL) -> None:
    """Create a new database file with mode 0600 before SQLite opens it (SQLite would create it
    0644 under the usual umask, readable by every local user); its ``-wal`` and ``-shm`` files
    take the database file's mode. An existing file keeps its mode: ``chmod`` widens it."""
    database = url.database
    if database in (None, "", ":memory:") or database.startswith("file:"):
        return
    try:
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return
    except OSError:
        return  # a missing folder or no permission: SQLite reports it when it opens the file


def create_sqlite_engine(url: sa.URL, config: StoreConfig, /, **kwargs: Any) -> Engine:
    """A SQLite engine with sqlite-vec loaded on every connection (see the module docstring)."""
    if config.sqlite_synchronous not in SYNCHRONOUS_MODES:
        raise InvalidInputError(
            f"sqlite synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, "
            f"got {config.sqlite_synchronous!r}"
        )
    if config.sqlite_mmap_bytes < 0:
        raise InvalidInputError(
            f"sqlite mmap bytes must be 0 (off) or more, got {config.sqlite_mmap_bytes!r}")
    _create_private(url)
    module, label, no_extensions = _sqlite_driver()
    options = {
        "schema_translate_map": schema_translate_map(None),
        **kwargs.pop("execution_options", {}),
    }
    read_only_url = _read_only_url(url)
    engine = sa.create_engine(read_only_url or url, module=module, execution_options=options,
                              **kwargs)
    info = engine_info(engine)
    if read_only_url is not None:
        info.warnings.append(
            "opened read-only: the file (or its directory) is not writable; reads work, "
            "writes fail with ReadOnlyStorageError")
    info.driver = label
    info.configured = True
    info.sqlite_version = module.sqlite_version
    _note_wal_reset(info, module.sqlite_version)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        if no_extensions is None:
            _load_sqlite_vec(dbapi_conn, info)
        else:
            info.vector_extension = False
            info.vector_reason = no_extensions
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(config.sqlite_busy_timeout_ms)}")
        cur.execute("PRAGMA foreign_keys = ON")
        if url.database not in (None, "", ":memory:") and read_only_url is None:
            _switch_to_wal(cur, config.sqlite_busy_timeout_ms / 1000)
        cur.execute(f"PRAGMA synchronous = {config.sqlite_synchronous}")
        cur.execute(f"PRAGMA mmap_size = {int(config.sqlite_mmap_bytes)}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        # Sent on the DBAPI connection, without SQLAlchemy's execution context (about a sixth of
        # a search's connection handling, and of a one-row write's): neither BEGIN returns rows
        # or takes parameters. A write's BEGIN IMMEDIATE waits (busy timeout) for the write
        # lock; a read's BEGIN DEFERRED takes no lock and waits for nothing. An error is
        # wrapped as exec_driver_sql would wrap it.
        begin = ("BEGIN DEFERRED" if conn.get_execution_options().get("waggle_txn", "write")
                 == "read" else "BEGIN IMMEDIATE")
        try:
            conn.connection.dbapi_connection.execute(begin)  # type: ignore[union-attr]
        except module.Error as exc:
            raise sa.exc.DBAPIError.instance(begin, (), exc, module.Error,
                                             dialect=conn.dialect) from exc

    return engine


def _read_only_url(url: sa.URL) -> sa.URL | None:
    """For an existing file this process cannot write (read-only media, another user's file):
    the URI that opens it read-only (``mode=ro``; ``immutable=1`` too when its directory is
    not writable either, where SQLite could create no ``-shm`` file for the WAL). None for a
    writable or new file, or a URI the caller wrote (its own mode applies)."""
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:") or url.query:
        return None
    path = os.path.abspath(database)
    writable_dir = os.access(os.path.dirname(path), os.W_OK)
    if not os.path.isfile(path) or (os.access(path, os.W_OK) and writable_dir):
        return None
    query = {"mode": "ro", "uri": "true"}
    if not writable_dir:
        query["immutable"] = "1"
    return url.set(database=f"file:{path}", query=query)


def _locked(exc: BaseException) -> bool:
    return isinstance(exc, Exception) and "database is locked" in str(exc)


def _switch_to_wal(cur: Any, timeout_s: float) -> None:
    """``PRAGMA journal_mode = WAL``, retried while another process holds a lock, for up to the
    busy timeout. On a fresh file (still in rollback-journal mode) the switch needs an exclusive
    lock, and SQLite answers SQLITE_BUSY *without* its busy handler when waiting could deadlock
    (this connection holds a shared lock, another a reserved one: a second process migrating the
    new store). Eight processes opening one new store at once hit it; a store already in WAL
    mode returns at once (the mode is persistent)."""
    retry(
        retry=retry_if_exception(_locked),
        wait=wait_random_exponential(multiplier=0.01, max=0.25),
        stop=stop_after_delay(max(timeout_s, 0.1)),
        reraise=True,
    )(cur.execute)("PRAGMA journal_mode = WAL")


def _sqlite_vec_path() -> str:
    """The loadable extension inside the sqlite-vec package, found without importing it: its
    ``__init__`` imports numpy (about 100 ms, most of a cold ``open_store``) for helpers
    waggle_store does not use. ``sqlite_vec.loadable_path()`` is this same file name."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise ImportError("the sqlite-vec package is not installed")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def _load_sqlite_vec(dbapi_conn: Any, info: EngineInfo) -> None:
    """Load sqlite-vec; a failure leaves the connection usable and is reported, not raised."""
    try:
        extension = _sqlite_vec_path()
        dbapi_conn.enable_load_extension(True)
        try:
            dbapi_conn.load_extension(extension)
        finally:
            dbapi_conn.enable_load_extension(False)
    except Exception as exc:  # noqa: BLE001 - any failure means "no vector search"; health() says why
        info.vector_extension = False
        info.vector_reason = f"sqlite-vec could not be loaded: {exc}"
        return
    info.vector_extension = True
    info.vector_reason = None

"""Store configuration, from arguments or the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_URL = "sqlite:///./waggle.db"
DEFAULT_PG_SCHEMA = "waggle"
SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
DEFAULT_CONNECT_TIMEOUT = 10.0
#: SQLite reads the first this many bytes of a store through a memory map (``PRAGMA
#: mmap_size``): a search's random probes of the frames table then cost no system call each
#: (a quarter off the keyword statement at 100k frames). The pages are
#: the OS's file cache, shared by every connection and process; SQLite caps it at its build's
#: maximum (2 GB by default).
DEFAULT_SQLITE_MMAP_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class StoreConfig:
    url: str = DEFAULT_URL
    schema: str = DEFAULT_PG_SCHEMA  # Postgres only; SQLite has no schemas.
    sqlite_synchronous: str = "NORMAL"
    sqlite_busy_timeout_ms: int = 30_000
    sqlite_mmap_bytes: int = DEFAULT_SQLITE_MMAP_BYTES
    #: Seconds a new server connection may take (PostgreSQL's ``connect_timeout``): a port that
    #: accepts and never answers must fail ``open_store``, not hang it.
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    #: PostgreSQL: whether psycopg may prepare statements on the server (after their fifth run).
    #: False for a transaction-pooling PgBouncer, where a prepared statement is not there on the
    #: next transaction's server connection; the connections then also carry no startup
    #: ``options`` (which PgBouncer refuses) and each transaction sets the schema itself.
    prepared_statements: bool = True
    #: Milliseconds a PostgreSQL statement of the store waits for a lock (``lock_timeout``)
    #: before it fails with StorageBusyError: a write through the store while the same thread
    #: holds a transaction on the rows would otherwise wait for itself forever.
    lock_timeout_ms: int = 30_000

    @classmethod
    def from_env(cls, url: str | None = None, schema: str | None = None) -> StoreConfig:
        return cls(
            url=url or os.environ.get("WAGGLE_DATABASE_URL") or DEFAULT_URL,
            schema=schema or os.environ.get("WAGGLE_PG_SCHEMA") or DEFAULT_PG_SCHEMA,
            sqlite_synchronous=os.environ.get("WAGGLE_SQLITE_SYNCHRONOUS", "NORMAL").upper(),
            sqlite_busy_timeout_ms=int(os.environ.get("WAGGLE_SQLITE_BUSY_TIMEOUT_MS", "30000")),
            sqlite_mmap_bytes=int(
                os.environ.get("WAGGLE_SQLITE_MMAP_BYTES") or DEFAULT_SQLITE_MMAP_BYTES
            ),
            connect_timeout=float(
                os.environ.get("WAGGLE_CONNECT_TIMEOUT") or DEFAULT_CONNECT_TIMEOUT
            ),
            lock_timeout_ms=int(os.environ.get("WAGGLE_LOCK_TIMEOUT_MS") or 30_000),
        )

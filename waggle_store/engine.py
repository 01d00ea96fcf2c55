"""Engines for waggle_store: the dialect-free entry point.

:func:`create_engine` asks the dialect registry (``waggle_store.dialects``) which backend a URL
names and hands it to that dialect's engine factory, which owns every backend detail (SQLite:
driver choice, sqlite-vec, PRAGMAs, BEGIN IMMEDIATE/DEFERRED; Postgres: psycopg, search_path,
connect timeout). Every way a URL can be wrong fails here with a waggle_store error that names
the fix and never the password: not a URL (:class:`InvalidInputError`), a backend or driver
waggle_store does not run on (:class:`UnsupportedDialectError`), a driver that is not installed
(:class:`MissingExtensionError`, naming the extra). :func:`connect` turns a failure to reach the
server into :class:`DatabaseUnavailableError` naming host and port.
"""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine, make_url

from waggle_store.config import StoreConfig
from waggle_store.dialects import check_driver, spec_for_url
from waggle_store.dialects.info import EngineInfo, engine_info
from waggle_store.dialects.sqlite_engine import pick_sqlite_driver, sqlite_wal_reset_affected
from waggle_store.errors import (
    DatabaseUnavailableError,
    InvalidInputError,
    MissingExtensionError,
    WaggleStoreWarning,
)

_USERINFO = re.compile(r"(//[^:/@]*:)[^@]*@")


def _masked(url: str) -> str:
    return _USERINFO.sub(r"\1***@", url)


def parse_url(url: str | sa.URL) -> sa.URL:
    """A URL object for ``url``; :class:`InvalidInputError` (password masked) if it is none.

    URL objects are passed through untouched: ``str(url)`` masks the password as ``***``, so
    a URL must never be turned into a string and parsed again."""
    if isinstance(url, sa.URL):
        return url
    try:
        return make_url(url)
    except (sa_exc.ArgumentError, ValueError, TypeError) as exc:
        raise InvalidInputError(
            f"not a database URL: {_masked(str(url))!r}; expected e.g. sqlite:///path/to/store.db "
            "or postgresql+psycopg://user:password@host:5432/dbname"
        ) from exc


def create_engine(url: str | sa.URL | None = None, *, config: StoreConfig | None = None,
                  **kwargs: Any) -> Engine:
    """An engine configured for waggle_store by the URL's dialect (see the module docstring)."""
    config = config or StoreConfig.from_env(None)
    parsed = parse_url(url if url is not None else config.url)
    spec = spec_for_url(parsed)
    check_driver(parsed)
    try:
        return spec.create_engine(parsed, config, **kwargs)
    except ImportError as exc:
        extra = f"pip install 'waggle-store[{spec.extra}]'" if spec.extra else "install its driver"
        raise MissingExtensionError(
            f"the database driver for {parsed.get_backend_name()} URLs is not installed "
            f"({exc.name or exc}): {extra}"
        ) from exc


def describe_target(url: sa.URL) -> str:
    """Where a URL points, for messages: host and port (or the file), never the password."""
    if url.get_backend_name() == "sqlite":
        return f"the SQLite file {url.database or ':memory:'}"
    host = url.host or "localhost (socket)"
    port = url.port or 5432
    return f"the {url.get_backend_name()} server at {host}:{port} (database {url.database!r})"


def unavailable_error(url: sa.URL, exc: BaseException) -> DatabaseUnavailableError:
    """:class:`DatabaseUnavailableError` for a failure to connect to ``url``; the driver's own
    reason is kept, with the password (if the driver repeated it) masked."""
    orig = getattr(exc, "orig", None) or exc
    reason = " ".join(str(orig).split())
    if url.password:
        reason = reason.replace(str(url.password), "***")
    return DatabaseUnavailableError(f"cannot connect to {describe_target(url)}: {reason}")


def connect(engine: Engine) -> sa.Connection:
    """``engine.connect()``, a failure to connect raised as :class:`DatabaseUnavailableError`."""
    try:
        return engine.connect()
    except sa_exc.DBAPIError as exc:
        raise unavailable_error(engine.url, exc) from exc


def read_only(engine: Engine) -> Engine:
    """The same engine (and pool) marked for reads: a dialect whose transactions have modes reads
    the ``waggle_txn`` execution option in its BEGIN hook (SQLite: ``BEGIN DEFERRED``)."""
    return engine.execution_options(waggle_txn="read")


__all__ = [
    "EngineInfo",
    "WaggleStoreWarning",
    "connect",
    "create_engine",
    "describe_target",
    "engine_info",
    "parse_url",
    "pick_sqlite_driver",
    "read_only",
    "sqlite_wal_reset_affected",
    "unavailable_error",
]

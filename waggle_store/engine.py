"""Engines for waggle_store: the dialect-free entry point.

:func:`create_engine` asks the dialect registry (``waggle_store.dialects``) which backend a URL
names and hands it to that dialect's engine factory, which owns every backend detail (SQLite:
driver choice, sqlite-vec, PRAGMAs, BEGIN IMMEDIATE/DEFERRED; Postgres: psycopg, search_path).
A URL of any other backend raises :class:`~waggle_store.errors.UnsupportedDialectError` before
a driver is imported. The names re-exported below keep their historical import path.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from waggle_store.config import StoreConfig
from waggle_store.dialects import spec_for_url
from waggle_store.dialects.info import EngineInfo, engine_info
from waggle_store.dialects.sqlite_engine import pick_sqlite_driver, sqlite_wal_reset_affected
from waggle_store.errors import WaggleStoreWarning


def create_engine(url: str | sa.URL | None = None, *, config: StoreConfig | None = None,
                  **kwargs: Any) -> Engine:
    """Create an engine configured for waggle_store by the URL's dialect (see the module docstring)."""
    config = config or StoreConfig.from_env(str(url) if url is not None else None)
    parsed = make_url(url if url is not None else config.url)
    return spec_for_url(parsed).create_engine(parsed, config, **kwargs)


def read_only(engine: Engine) -> Engine:
    """The same engine (and pool) marked for reads: a dialect whose transactions have modes reads
    the ``waggle_txn`` execution option in its BEGIN hook (SQLite: ``BEGIN DEFERRED``)."""
    return engine.execution_options(waggle_txn="read")


__all__ = [
    "EngineInfo",
    "WaggleStoreWarning",
    "create_engine",
    "engine_info",
    "pick_sqlite_driver",
    "read_only",
    "sqlite_wal_reset_affected",
]

"""The host's engine and the waggle_store store on it.

SQLite: the engine comes from ``waggle_store.engine.create_engine`` (sqlite-vec loaded, foreign
keys on, writes ``BEGIN IMMEDIATE``); nothing of it touches the host's own tables' names.
PostgreSQL: the host's plain engine (its ``search_path`` keeps the host's schema first), with the
``schema_translate_map`` that puts waggle_store's models where the store keeps them.
"""

from __future__ import annotations

import os

import sqlalchemy as sa

import waggle_store as ws
from waggle_store.engine import create_engine
from waggle_store.models import schema_translate_map


def database_url() -> str:
    return os.environ.get("HOST_DATABASE_URL", "sqlite:///./host_app.db")


def waggle_schema() -> str | None:
    return os.environ.get("WAGGLE_PG_SCHEMA") or None


def make_engine(url: str | None = None) -> sa.Engine:
    url = url or database_url()
    if sa.make_url(url).get_backend_name() == "sqlite":
        return create_engine(url)
    options = {"schema_translate_map": schema_translate_map(waggle_schema() or "waggle")}
    try:
        return sa.create_engine(url, execution_options=options)
    except ModuleNotFoundError as exc:  # the database's driver, not installed
        raise ws.MissingExtensionError(
            f"the driver for {sa.make_url(url).get_backend_name()} URLs is not installed "
            f"({exc.name}): pip install 'waggle-store[postgres]'") from exc


def open_memory(engine: sa.Engine) -> ws.Store:
    """The store on the host's engine: ``close()`` leaves the engine to the host. The host's
    Alembic has migrated it already (``upgrade=False`` only checks the revision)."""
    return ws.open_store(engine, schema=waggle_schema(), embedder="hashing", upgrade=False)

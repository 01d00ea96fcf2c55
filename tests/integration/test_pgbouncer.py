"""PostgreSQL behind PgBouncer in transaction pooling mode (Debian's pgbouncer 1.18: no
prepared-statement support): a store opened with ``prepared_statements=False`` cognifies,
searches (each statement shape far more than psycopg's five runs before it would prepare) and
writes concurrently through it. The PgBouncer is started by the fixture, pointed at the test
PostgreSQL (its unix-socket directory or host and port)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

import waggle_store as ws

from conftest import IN_CI, Target, only_postgres

SEARCHES = 30


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def bouncer_url(target: Target, store_factory: Callable[..., ws.Store]) -> Iterator[str]:
    """A URL of a PgBouncer (transaction pooling) in front of the test's PostgreSQL, whose
    schema the store factory has migrated first."""
    binary = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer"
                                           if os.path.exists("/usr/sbin/pgbouncer") else None)
    if binary is None:
        if IN_CI:
            pytest.fail("pgbouncer is required in CI (apt-get install -y pgbouncer)")
        pytest.skip("pgbouncer is not installed")
    store_factory().close()  # the schema migrated directly, not through the pooler
    url = sa.make_url(target.url)
    host = url.query.get("host") or url.host or "127.0.0.1"
    host = host if isinstance(host, str) else host[0]
    port = url.port or 5432
    user = url.username or "postgres"
    listen = _free_port()
    work = Path(tempfile.mkdtemp(prefix="waggle-pgbouncer-"))
    work.chmod(0o777)
    (work / "users.txt").write_text(f'"{user}" ""\n')
    (work / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={host} port={port}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {listen}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {work / 'users.txt'}\n"
        "pool_mode = transaction\ndefault_pool_size = 4\nmax_client_conn = 100\n"
        f"logfile = {work / 'pgbouncer.log'}\npidfile = {work / 'pgbouncer.pid'}\n"
    )
    for path in work.iterdir():
        path.chmod(0o666)
    command = [binary, str(work / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root: as the owner of the socket dir
        owner = os.stat(host).st_uid if host.startswith("/") else 0
        command[1:1] = ["-u", pwd.getpwuid(owner).pw_name if owner else "nobody"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", listen), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (work / "pgbouncer.log").read_text() if (
                        work / "pgbouncer.log").exists() else ""
                    out = process.stdout.read().decode() if process.stdout else ""
                    pytest.fail(f"pgbouncer did not start: {out}\n{log}")
                time.sleep(0.05)
        yield f"postgresql+psycopg://{user}@127.0.0.1:{listen}/{url.database}"
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(work, ignore_errors=True)


@only_postgres
def test_a_store_works_through_a_transaction_pooling_pgbouncer(
        target: Target, bouncer_url: str) -> None:
    with ws.open_store(bouncer_url, schema=target.schema, embedder="hashing",
                       prepared_statements=False) as store:
        mind = store.mind("bounced")
        first = mind.cognify("the pelican initiative starts on monday", importance="important")
        done = mind.cognify_batch([f"note {i}: a heron over the river {i % 5}"
                                   for i in range(40)])
        assert not done.failures
        for i in range(SEARCHES):  # every statement shape well past psycopg's fifth run
            hybrid = mind.search("pelican initiative", limit=5)
            assert hybrid[0].frame.id == first.frame_id
            assert hybrid[0].explain["degraded"] == []
            assert set(hybrid[0].explain["lanes_run"]) == {"keyword", "vector"}
            wide = mind.search(f"heron river {i % 5}", limit=20)
            assert len(wide) == 20
            assert mind.search("heron", lanes=("vector",), limit=10)
        # A concurrent writer through the same pooler while searches run.
        errors: list[BaseException] = []

        def write() -> None:
            try:
                for i in range(20):
                    store.mind("writer").cognify(f"written beside the searches {i}")
            except BaseException as exc:  # noqa: BLE001 - reported by the test below
                errors.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        for _ in range(SEARCHES):
            assert mind.search("pelican", limit=5)[0].frame.id == first.frame_id
        writer.join(120)
        assert not writer.is_alive()
        assert not errors, errors
        assert len(store.mind("writer").search("written beside searches", limit=30)) == 20

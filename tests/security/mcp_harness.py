"""A real ``waggle-store mcp`` subprocess and the official MCP SDK client to drive it.

The server command puts ``--url``/``--mind``/``--embedder`` after ``mcp`` (the form the docs
show), so every test also checks that they are accepted there.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token-for-the-tests-0123456789"


def server_args(target: Any, *extra: str, mind: str | None = "agent") -> list[str]:
    args = ["-m", "waggle_store", "mcp", "--url", target.url, "--embedder", "hashing"]
    if mind is not None:
        args += ["--mind", mind]
    if target.schema:
        args += ["--schema", target.schema]
    return [*args, *extra]


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("WAGGLE_")}
    return {**base, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore", **extra}


def stdio_client(target: Any, *extra: str, mind: str | None = "agent",
                 cwd: Path = REPO) -> Client:
    """The SDK's client of a server started in ``cwd`` (the repository unless a test needs
    the server's working directory somewhere else)."""
    params = StdioServerParameters(command=sys.executable, args=server_args(target, *extra,
                                                                            mind=mind),
                                   env=env(), cwd=str(cwd))
    return Client(params, read_timeout_seconds=120)


def http_client(url: str, token: str | None = None, *, mode: str = "auto") -> Client:
    """The SDK's client over streamable HTTP; ``mode="legacy"`` speaks the handshake-era
    protocol, whose answers come as server-sent events."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(120)))
    return Client(transport, read_timeout_seconds=120, mode=mode)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class HttpServer:
    port: int
    log: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        """The endpoint as a client on this machine reaches it."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def http_server(target: Any, tmp_path: Path, *extra: str, bind: str = "127.0.0.1",
                token: str | None = None, mind: str | None = "agent") -> Iterator[HttpServer]:
    port = free_port()
    log_path = tmp_path / f"server-{port}.log"
    variables = {"WAGGLE_MCP_TOKEN": token} if token else {}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, *server_args(target, "--http", f"{bind}:{port}", *extra, mind=mind)],
            env=env(**variables), cwd=str(REPO), stdout=log, stderr=subprocess.STDOUT)
        server = HttpServer(port, log_path, process)
        try:
            _wait_listening(server)
            yield server
            assert process.poll() is None, "the server must still be running"
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_listening(server: HttpServer) -> None:
    """Until the server accepts connections (a readiness wait, not a timing assertion)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"the server exited with {server.process.returncode}: "
                                 f"{server.output()}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the server never listened")


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The tool's error text; fails the test if the call succeeded."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) should have been refused: {result.content}"
    text = result.content[0].text
    assert isinstance(text, str)
    return text

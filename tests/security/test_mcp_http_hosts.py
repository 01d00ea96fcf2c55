"""The Host and Origin checks of ``waggle-store mcp --http`` against a real server subprocess:
a name the operator allows is allowed as a client behind a TLS proxy sends it (no port: the
scheme's own), and a forged one is still refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.conftest import only_sqlite
from tests.security.mcp_harness import TOKEN, http_server


def _post(url: str, headers: dict[str, str]) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}}
    return httpx.post(url, json=body, timeout=60, headers={
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {TOKEN}", **headers}).status_code


@only_sqlite
def test_an_allowed_host_without_a_port_is_served(target: Any, tmp_path: Path) -> None:
    """``https://memory.example/mcp`` through a proxy arrives as ``Host: memory.example`` and
    ``Origin: https://memory.example``: the deployment the docs show must be reachable."""
    with http_server(target, tmp_path, "--allowed-host", "memory.example", bind="0.0.0.0",
                     token=TOKEN) as server:
        port = server.port
        assert _post(server.url, {"Host": "memory.example"}) == 200
        assert _post(server.url, {"Host": f"memory.example:{port}"}) == 200
        assert _post(server.url, {"Host": "localhost"}) == 200
        assert _post(server.url, {"Origin": "https://memory.example"}) == 200
        assert _post(server.url, {"Origin": f"http://memory.example:{port}"}) == 200
        # Only the names allowed, with or without a port: a forged one is still refused.
        assert _post(server.url, {"Host": "evil.example"}) == 421
        assert _post(server.url, {"Host": "memory.example.evil.example"}) == 421
        assert _post(server.url, {"Host": f"evil.example:{port}"}) == 421
        assert _post(server.url, {"Origin": "https://evil.example"}) == 403
        assert _post(server.url, {"Origin": "https://memory.example.evil.example"}) == 403

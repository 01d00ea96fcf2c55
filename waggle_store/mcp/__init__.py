"""waggle_store as an MCP server: ``waggle-store mcp`` (stdio) or ``--http HOST:PORT``.

Needs the ``mcp`` extra (``pip install 'waggle-store[mcp]'``): the official MCP Python SDK 2.x.
:func:`build_server` gives the server for an already open :class:`waggle_store.aio.AsyncStore`
(embedding it in a host's own ASGI app or test); :func:`serve` opens the store and runs it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from waggle_store.errors import InvalidInputError


def parse_http(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6) split into its parts; a bad one is refused early,
    before a store is opened."""
    host, sep, port_text = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InvalidInputError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8000), got {address!r}")
    return host, int(port_text)


async def serve_async(url: str | None = None, *, schema: str | None = None,
                      mind: str = "default", http: str | None = None,
                      embedder: Any = "auto", max_workers: int = 4) -> None:
    """Open the store, serve MCP on stdio (or streamable HTTP at ``http``) until stopped."""
    from waggle_store import aio
    from waggle_store.mcp.server import build_server

    address = parse_http(http) if http else None
    async with aio.open_store(url, schema=schema, embedder=embedder,
                              max_workers=max_workers) as store:
        server = build_server(store, default_mind=mind)
        if address is None:
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async(host=address[0], port=address[1])


def serve(url: str | None = None, **kwargs: Any) -> None:
    """The blocking form of :func:`serve_async`, for the CLI."""
    asyncio.run(serve_async(url, **kwargs))


def __getattr__(name: str) -> Any:
    # build_server imports the SDK; importing this package (for parse_http) must not.
    if name == "build_server":
        from waggle_store.mcp.server import build_server

        return build_server
    raise AttributeError(f"module 'waggle_store.mcp' has no attribute {name!r}")


__all__ = ["build_server", "parse_http", "serve", "serve_async"]

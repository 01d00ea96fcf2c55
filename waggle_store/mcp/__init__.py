"""waggle_store as an MCP server: ``waggle-store mcp`` (stdio) or ``--http HOST:PORT``.

Needs the ``mcp`` extra (``pip install 'waggle-store[mcp]'``): the official MCP Python SDK 2.x.
:func:`build_server` gives the server for an already open :class:`waggle_store.aio.AsyncStore`
(embedding it in a host's own ASGI app or test); :func:`serve` opens the store and runs it.
:func:`configure` (in :mod:`waggle_store.mcp.settings`) decides what its clients may do: which
minds, which folders harvest may read, the bearer token and Host/Origin checks of HTTP.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from waggle_store.mcp.settings import (
    HttpSettings,
    MindAccess,
    ServerSettings,
    configure,
    is_loopback,
    parse_http,
)


async def serve_async(url: str | None = None, *, schema: str | None = None,
                      mind: str = "default", http: str | None = None,
                      embedder: Any = "auto", max_workers: int = 4,
                      settings: ServerSettings | None = None) -> None:
    """Open the store, serve MCP on stdio (or streamable HTTP) until stopped.

    ``settings`` (from :func:`configure`) bounds the clients; without it the server serves only
    ``mind`` on stdio, or at ``http`` under :func:`configure`'s rules, and refuses harvest."""
    from mcp.server.transport_security import TransportSecuritySettings

    from waggle_store import aio
    from waggle_store.mcp.server import build_server

    if settings is None:
        settings = configure(mind=mind, http=http)
    async with aio.open_store(url, schema=schema, embedder=embedder,
                              max_workers=max_workers) as store:
        # The server's own mind exists from the start (the operator chose it); the tools never
        # create one but through create_workspace.
        await store.mind(settings.access.default)
        server = build_server(store, settings=settings)
        print(settings.banner(), file=sys.stderr, flush=True)
        if settings.http is None:
            await server.run_stdio_async()
            return
        await server.run_streamable_http_async(
            host=settings.http.host, port=settings.http.port,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=list(settings.http.allowed_hosts),
                allowed_origins=list(settings.http.allowed_origins)))


def serve(url: str | None = None, **kwargs: Any) -> None:
    """The blocking form of :func:`serve_async`, for the CLI."""
    asyncio.run(serve_async(url, **kwargs))


def __getattr__(name: str) -> Any:
    # build_server imports the SDK; importing this package (for configure) must not.
    if name == "build_server":
        from waggle_store.mcp.server import build_server

        return build_server
    raise AttributeError(f"module 'waggle_store.mcp' has no attribute {name!r}")


__all__ = ["HttpSettings", "MindAccess", "ServerSettings", "build_server", "configure",
           "is_loopback", "parse_http", "serve", "serve_async"]

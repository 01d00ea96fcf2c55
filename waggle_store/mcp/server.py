"""The MCP tools: an agent's memory (save, recall, knowledge, identity, awareness) over MCP.

One store per server process, reached through :mod:`waggle_store.aio` so that its bounded worker
pool, not the SDK's thread limiter, decides how many store calls run at once. Each tool takes an
optional ``mind``; without it the server's default mind (``--mind``, else "default") is used.

Every tool answers with structured content (validated against its published output schema) and a
short readable text for models that read only text. Bad input and store errors come back as tool
errors (``isError``) with the store's message, so the calling model can correct itself; the
server keeps running.

The tools live in one module per group (``tools_memory``, ``tools_knowledge``, ``tools_identity``,
``tools_workspaces``, ``tools_lifecycle``; what they share in ``tooling``) so that each module
stays small; this one only assembles them, in a fixed order, with the hints a client reads
(read-only, destructive).
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

from waggle_store.aio import AsyncStore
from waggle_store.mcp.tooling import Tool, ToolContext, ToolGroup
from waggle_store.mcp.tools_identity import identity_tools
from waggle_store.mcp.tools_knowledge import knowledge_tools
from waggle_store.mcp.tools_lifecycle import lifecycle_tools
from waggle_store.mcp.tools_memory import memory_tools
from waggle_store.mcp.tools_workspaces import workspace_tools

INSTRUCTIONS = (
    "Long-term memory for this agent. Call recall_memory before answering questions about past "
    "work, people or decisions; call save_memory for facts worth keeping. Entities and relations "
    "form a knowledge graph (save_entity, create_relation, search_entities). identity is who the "
    "agent is; awareness holds short-lived context items. harvest_import brings in chat exports "
    "and notes folders (paths on the server's machine); consolidate_memory keeps memory in "
    "shape. Each tool takes an optional 'mind' (a workspace name)."
)


def build_server(store: AsyncStore, *, default_mind: str = "default") -> MCPServer[Any]:
    """An MCP server whose tools read and write ``store``; ``default_mind`` serves calls that
    name no mind."""
    server: MCPServer[Any] = MCPServer(
        "waggle-store", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING",
    )
    ctx = ToolContext(store=store, default_mind=default_mind)
    groups: list[ToolGroup] = [
        memory_tools(ctx), knowledge_tools(ctx), identity_tools(ctx), workspace_tools(ctx),
        lifecycle_tools(ctx),
    ]

    def tool(fn: Tool, *, read_only: bool = False, destructive: bool = False) -> None:
        server.add_tool(fn, annotations=ToolAnnotations(
            read_only_hint=read_only, destructive_hint=destructive, open_world_hint=False,
        ))

    # Readers first, then writers, then erasers (each in group order): the order tools/list has
    # always had, which clients may show as is.
    for fn in [fn for g in groups for fn in g.readers]:
        tool(fn, read_only=True)
    for fn in [fn for g in groups for fn in g.writers]:
        tool(fn)
    for fn in [fn for g in groups for fn in g.erasers]:
        tool(fn, destructive=True)
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("waggle-store")
    except PackageNotFoundError:
        return "0+unknown"

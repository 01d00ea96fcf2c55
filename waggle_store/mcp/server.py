"""The MCP tools: an agent's memory (save, recall, knowledge, identity, awareness) over MCP.

One store per server process, reached through :mod:`waggle_store.aio` so that its bounded worker
pool, not the SDK's thread limiter, decides how many store calls run at once. Each tool takes an
optional ``mind``; without it the server's default mind (``--mind``, else "default") is used, and
a call may name only the minds the server's :class:`~waggle_store.mcp.settings.MindAccess` lets
it. Tool arguments are validated strictly: an unknown (say, misspelled) argument is an error,
not silently dropped.

Every tool answers with structured content (validated against its published output schema) and a
short readable text for models that read only text. Bad input and store errors come back as tool
errors (``isError``) with the store's message, so the calling model can correct itself; the
server keeps running.

The tools live in one module per group (``tools_memory``, ``tools_knowledge``, ``tools_identity``,
``tools_workspaces``, ``tools_lifecycle``, ``tools_edit``; what they share in ``tooling``) so
that each module stays small; this one only assembles them, in a fixed order, with the hints a
client reads (read-only, destructive).
"""

from __future__ import annotations

import hmac
from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver.tools.base import Tool as SdkTool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import AnyHttpUrl, ConfigDict

from waggle_store.aio import AsyncStore
from waggle_store.mcp.settings import MindAccess, ServerSettings
from waggle_store.mcp.tooling import Tool, ToolContext, ToolGroup
from waggle_store.mcp.tools_edit import edit_tools
from waggle_store.mcp.tools_identity import identity_tools
from waggle_store.mcp.tools_knowledge import knowledge_tools
from waggle_store.mcp.tools_lifecycle import lifecycle_tools
from waggle_store.mcp.tools_memory import memory_tools
from waggle_store.mcp.tools_workspaces import workspace_tools

INSTRUCTIONS = (
    "Long-term memory for this agent. Call recall_memory before answering questions about past "
    "work, people or decisions; call save_memory for facts worth keeping; get_memory, "
    "update_memory and forget_memory read, correct and delete one memory. Entities and relations "
    "form a knowledge graph (save_entity, create_relation, search_entities, read_graph, "
    "open_nodes). identity is who the "
    "agent is; awareness holds short-lived context items. harvest_import brings in chat exports "
    "and notes folders (paths on the server's machine); consolidate_memory keeps memory in "
    "shape. Each tool takes an optional 'mind' (a workspace name)."
)


def build_server(store: AsyncStore, *, default_mind: str = "default",
                 settings: ServerSettings | None = None) -> MCPServer[Any]:
    """An MCP server whose tools read and write ``store``. ``settings`` bounds what its clients
    may do (minds, harvest roots, the HTTP bearer token); without it the server serves only
    ``default_mind`` and refuses harvest_import."""
    if settings is None:
        settings = ServerSettings(access=MindAccess.bound(default_mind))
    ctx = ToolContext(store=store, access=settings.access, harvest_roots=settings.harvest_roots)
    groups: list[ToolGroup] = [
        memory_tools(ctx), knowledge_tools(ctx), identity_tools(ctx), workspace_tools(ctx),
        lifecycle_tools(ctx), edit_tools(ctx),
    ]
    tools: list[SdkTool] = []

    def tool(fn: Tool, *, read_only: bool = False, destructive: bool = False) -> None:
        tools.append(_strict(SdkTool.from_function(fn, annotations=ToolAnnotations(
            read_only_hint=read_only, destructive_hint=destructive, open_world_hint=False,
        ))))

    # Readers first, then writers, then erasers (each in group order): the order tools/list has
    # always had, which clients may show as is.
    for fn in [fn for g in groups for fn in g.readers]:
        tool(fn, read_only=True)
    for fn in [fn for g in groups for fn in g.writers]:
        tool(fn)
    for fn in [fn for g in groups for fn in g.erasers]:
        tool(fn, destructive=True)

    token = settings.http.token if settings.http else None
    auth = None if token is None or settings.http is None else AuthSettings(
        issuer_url=AnyHttpUrl(settings.http.url.removesuffix("/mcp")), resource_server_url=None)
    return MCPServer(
        "waggle-store", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING",
        tools=tools, auth=auth, token_verifier=None if token is None else BearerToken(token),
    )


def _strict(tool: SdkTool) -> SdkTool:
    """The tool with an argument model that forbids unknown arguments: a misspelled
    ``importnace`` is an error the model can correct, not a silent default. The published input
    schema says so too (``additionalProperties: false``)."""
    base = tool.fn_metadata.arg_model
    strict: type[ArgModelBase] = type(base.__name__, (base,), {
        "__module__": base.__module__,
        "model_config": ConfigDict(arbitrary_types_allowed=True, extra="forbid"),
    })
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


class BearerToken:
    """The SDK's token verifier for one static bearer token, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("utf-8")

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode("utf-8"), self._token):
            return None
        return AccessToken(token="bearer", client_id="waggle-store-client", scopes=[])


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("waggle-store")
    except PackageNotFoundError:
        return "0+unknown"

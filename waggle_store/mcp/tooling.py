"""What every group of MCP tools shares: the store and default mind, the reply and error rules.

Kept apart from :mod:`waggle_store.mcp.server` so that each tool group (memory, knowledge,
identity and awareness, workspaces and cleanup) lives in a module of its own, under the house's
400-line limit, while all of them answer and fail in one consistent way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

import waggle_store as ws
from waggle_store.aio import AsyncMind, AsyncStore

T = TypeVar("T")
Tool = Callable[..., Awaitable[CallToolResult]]

MindArg = Annotated[str | None, Field(
    description="Name of the mind (workspace) to use; omit for the server's default mind.",
)]


def reply(model: BaseModel, text: str) -> CallToolResult:
    """Structured content for clients that read the output schema, and a short text for models
    that read only text."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=model.model_dump(mode="json"))


async def guard(call: Awaitable[T]) -> T:
    """A store error becomes a tool error carrying the store's message (which names the bad
    argument): the model reads it and can retry, and the server stays up."""
    try:
        return await call
    except ws.WaggleStoreError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


@dataclass(frozen=True)
class ToolContext:
    """The server's store and the mind that serves calls naming none."""

    store: AsyncStore
    default_mind: str

    async def mind_of(self, name: str | None) -> AsyncMind:
        """The named mind (else the default one). Looked up on every call, not cached: a mind
        dropped and re-created meanwhile (by the CLI, another process) must not be reached
        through a stale id."""
        return await guard(self.store.mind(name or self.default_mind))


@dataclass
class ToolGroup:
    """One group's tools, sorted by what they do to the store: the server annotates readers as
    read-only and erasers as destructive, so clients can ask before running the latter."""

    readers: list[Tool] = field(default_factory=list)
    writers: list[Tool] = field(default_factory=list)
    erasers: list[Tool] = field(default_factory=list)

"""What every group of MCP tools shares: the store, the minds a client may use, the reply and
error rules.

Kept apart from :mod:`waggle_store.mcp.server` so that each tool group (memory, knowledge,
identity and awareness, workspaces and cleanup) lives in a module of its own, under the house's
400-line limit, while all of them answer and fail in one consistent way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

import waggle_store as ws
from waggle_store.aio import AsyncMind, AsyncStore
from waggle_store.mcp.settings import MindAccess
from waggle_store.repositories.minds import MAX_MIND_NAME_LENGTH, MindRepository, check_mind_name

T = TypeVar("T")
Tool = Callable[..., Awaitable[CallToolResult]]

MindArg = Annotated[str | None, Field(
    max_length=MAX_MIND_NAME_LENGTH,
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
    """The server's store, the minds its clients may use and the folders harvest may read."""

    store: AsyncStore
    access: MindAccess
    harvest_roots: tuple[Path, ...] = ()

    @property
    def default_mind(self) -> str:
        return self.access.default

    def permitted(self, name: str | None) -> str:
        """The mind a call names (else the default one), if this server lets clients use it."""
        chosen = name or self.access.default
        if not self.access.permits(chosen):
            raise ToolError(
                f"PermissionError: this server does not serve the mind {chosen!r}; it serves "
                f"{self.access.describe()} (the operator widens this with --allow-mind or "
                "--all-minds)")
        return chosen

    async def mind_of(self, name: str | None) -> AsyncMind:
        """The named mind (else the default one); a mind this server does not serve, or one
        that does not exist, is a tool error: no tool but create_workspace makes a mind.
        Looked up on every call, not cached: a mind dropped and re-created meanwhile (by the
        CLI, another process) must not be reached through a stale id."""
        chosen = self.permitted(name)
        store = self.store.sync

        def existing() -> ws.Mind:
            check_mind_name(chosen)
            with store.read() as session:
                found = MindRepository(session).get(chosen) is not None
            if not found:
                raise ws.NotFoundError(
                    f"no mind named {chosen!r} (create_workspace creates one)")
            return store.mind(chosen)

        return AsyncMind(self.store, await guard(self.store.run_sync(existing)))

    async def create_mind(self, name: str) -> AsyncMind:
        """The named mind, created when missing, if this server lets clients use it."""
        return await guard(self.store.mind(self.permitted(name)))


@dataclass
class ToolGroup:
    """One group's tools, sorted by what they do to the store: the server annotates readers as
    read-only and erasers as destructive, so clients can ask before running the latter."""

    readers: list[Tool] = field(default_factory=list)
    writers: list[Tool] = field(default_factory=list)
    erasers: list[Tool] = field(default_factory=list)

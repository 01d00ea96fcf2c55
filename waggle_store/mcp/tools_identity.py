"""The MCP tools for who the agent is and what it keeps in mind: identity and awareness.

A group of :mod:`waggle_store.mcp.server`, in its own module to keep each under 400 lines.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import Field

from waggle_store.mcp import models as m
from waggle_store.mcp.tooling import MindArg, ToolContext, ToolGroup, guard, reply

Category = Literal["task", "action", "pending", "flag"]


def identity_tools(ctx: ToolContext) -> ToolGroup:
    """get/set_identity, get/set/clear_awareness, bound to ``ctx``."""

    async def get_identity(mind: MindArg = None) -> Annotated[CallToolResult, m.IdentityResult]:
        """Who this agent is: name, role, personality, capabilities, system prompt."""
        target = await ctx.mind_of(mind)
        identity = await guard(target.identity.get())
        out = m.IdentityResult(
            mind=target.name, identity=m.IdentityOut.of(identity) if identity else None
        )
        text = (
            f"{identity.name} — {identity.role}".rstrip(" —")
            if identity
            else f"No identity set for '{target.name}'."
        )
        return reply(out, text)

    async def set_identity(
        name: Annotated[str, Field(min_length=1, description="The agent's name.")],
        role: Annotated[str, Field(description="Its role or job.")] = "",
        department: Annotated[str, Field(description="Team or department.")] = "",
        personality: Annotated[str, Field(description="Tone and character.")] = "",
        capabilities: Annotated[str, Field(description="What it can do.")] = "",
        system_prompt: Annotated[str, Field(description="Standing instructions.")] = "",
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.IdentityResult]:
        """Set (replace) this agent's identity."""
        target = await ctx.mind_of(mind)
        identity = await guard(
            target.identity.set(
                name=name,
                role=role,
                department=department,
                personality=personality,
                capabilities=capabilities,
                system_prompt=system_prompt,
            )
        )
        return reply(
            m.IdentityResult(mind=target.name, identity=m.IdentityOut.of(identity)),
            f"Identity set: {identity.name}.",
        )

    async def get_awareness(mind: MindArg = None) -> Annotated[CallToolResult, m.AwarenessList]:
        """The agent's current awareness: unexpired context items, highest priority first."""
        target = await ctx.mind_of(mind)
        items = await guard(target.awareness.active())
        out = m.AwarenessList(mind=target.name, items=[m.AwarenessOut.of(i) for i in items])
        lines = [f"[{i.category}, p{i.priority}] {i.content}" for i in items]
        return reply(out, "\n".join(lines) if lines else "Nothing in awareness.")

    async def set_awareness(
        category: Annotated[
            Category,
            Field(
                description="task (work in progress), action (to do next), pending (waiting on "
                            "someone) or flag (a warning to keep in mind)."
            ),
        ],
        content: Annotated[str, Field(min_length=1, description="What to keep in mind.")],
        priority: Annotated[int, Field(ge=0, le=100, description="Higher comes first.")] = 0,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.AwarenessSaved]:
        """Add an item to the agent's awareness (short-lived working context)."""
        target = await ctx.mind_of(mind)
        item = await guard(target.awareness.add(category, content, priority=priority))
        return reply(
            m.AwarenessSaved(mind=target.name, item=m.AwarenessOut.of(item)),
            f"Awareness item #{item.id} added ({item.category}).",
        )

    async def clear_awareness(
        category: Annotated[
            Category | None, Field(description="Only this category; omit to clear everything.")
        ] = None,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.Cleared]:
        """Remove awareness items (of one category, or all)."""
        target = await ctx.mind_of(mind)
        removed = await guard(target.awareness.clear(category))
        return reply(
            m.Cleared(mind=target.name, removed=removed), f"Removed {removed} awareness item(s)."
        )

    return ToolGroup(
        readers=[get_identity, get_awareness],
        writers=[set_identity, set_awareness],
        erasers=[clear_awareness],
    )

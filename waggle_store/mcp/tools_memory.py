"""The MCP memory tools: save_memory and recall_memory.

A group of :mod:`waggle_store.mcp.server`, in its own module to keep each under 400 lines.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import Field

import waggle_store as ws
from waggle_store.mcp import models as m
from waggle_store.mcp.budget import (
    HIT_BYTES,
    MARKER,
    MIN_HIT_BYTES,
    RECALL_BYTES,
    clip,
    encoded_size,
    preview,
)
from waggle_store.mcp.tooling import MindArg, ToolContext, ToolGroup, guard, reply

Importance = Literal["critical", "important", "normal", "temporary", "deprecated"]
Profile = Literal["balanced", "recent", "important", "connected"]


def memory_tools(ctx: ToolContext) -> ToolGroup:
    """save_memory (a writer) and recall_memory (a reader), bound to ``ctx``."""

    async def save_memory(
        content: Annotated[
            str,
            Field(
                min_length=1, description="The fact, event or note to remember, in plain language."
            ),
        ],
        importance: Annotated[
            Importance,
            Field(description="How much it matters; 'temporary' is pruned by cleanup_frames."),
        ] = "normal",
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.MemorySaved]:
        """Save a memory: stored, indexed for search, and its entities/relations added to the
        knowledge graph."""
        target = await ctx.mind_of(mind)
        r = await guard(target.cognify(content, importance=importance))
        out = m.MemorySaved(
            mind=target.name,
            frame_id=r.frame_id,
            entities_extracted=r.entities_extracted,
            relations_created=r.relations_created,
            related_frames=list(r.related_frames),
            vector_status=r.vector_status,
        )
        return reply(
            out,
            f"Saved memory #{r.frame_id} in '{target.name}' "
            f"({r.entities_extracted} entities, {r.relations_created} relations).",
        )

    async def recall_memory(
        query: Annotated[
            str, Field(min_length=1, max_length=10_000,
                       description="What to remember: a question or keywords.")
        ],
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many results.")] = 10,
        profile: Annotated[
            Profile,
            Field(description="Ranking emphasis: balanced, recent, important or connected."),
        ] = "balanced",
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.Recall]:
        """Search memory (keyword + semantic) and return the best matching memories, best first."""
        target = await ctx.mind_of(mind)
        combined = ws.CombinedRetrieval(workspace=_Recalling(target.sync))
        result = await guard(
            ctx.store.run_sync(
                combined.search, query, limit=limit, profile=profile, scope="workspace"
            )
        )
        found = [*result.workspace_results, *result.personal_results, *result.external_results]
        hits: list[m.RecallHit] = []
        budget = RECALL_BYTES
        for i, r in enumerate(found):
            # A fair share of what is left (short hits leave more for later ones), at most
            # HIT_BYTES, at least MIN_HIT_BYTES: every hit shows some of its text.
            share = max(MIN_HIT_BYTES, min(HIT_BYTES, budget // (len(found) - i)))
            content, cut = clip(r.content, share)
            budget = max(0, budget - encoded_size(content))
            hits.append(m.RecallHit(
                frame_id=r.metadata.get("frame_id"),
                content=content,
                truncated=cut,
                content_chars=len(r.content),
                score=r.score,
                source=r.source,
                attribution=r.attribution,
                importance=r.metadata.get("importance"),
            ))
        out = m.Recall(
            mind=target.name,
            query=query,
            results=hits,
            has_conflict=result.has_conflict,
            conflict_note=result.conflict_note,
        )
        shown = [preview(h.content) for h in hits]
        lines = [f"{i}. [#{h.frame_id}, {h.score:.2f}] {text}"
                 for i, (h, text) in enumerate(zip(hits, shown, strict=True), 1)]
        if any(h.truncated or text.endswith(MARKER) for h, text in zip(hits, shown, strict=True)):
            lines.append("(Long memories are shortened here; the structured result has more, "
                         "and get_memory(frame_id) reads a whole memory.)")
        return reply(out, "\n".join(lines) if lines else f"No memories match {query!r}.")

    return ToolGroup(readers=[recall_memory], writers=[save_memory])


class _Recalling:
    """A mind seen by CombinedRetrieval, whose search is a recall: what an agent recalls counts
    as an access (popularity ranking and compaction read it)."""

    def __init__(self, mind: ws.Mind) -> None:
        self._mind = mind

    def search(self, query: str, *, limit: int, profile: str) -> list[ws.SearchResult]:
        return self._mind.recall(query, limit=limit, profile=profile)

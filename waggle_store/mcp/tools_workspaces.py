"""The MCP tools that manage the store rather than one memory: workspaces and cleanup.

A group of :mod:`waggle_store.mcp.server`, in its own module to keep each under 400 lines.
"""

from __future__ import annotations

import json
from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from waggle_store.mcp import models as m
from waggle_store.mcp.tooling import MindArg, ToolContext, ToolGroup, guard, reply

#: Most entities one cleanup_entities call retires. Every id is checked before any is retired:
#: a call refused for one bad id has retired none.
MAX_ENTITY_IDS = 500


def workspace_tools(ctx: ToolContext) -> ToolGroup:
    """list_workspaces (a reader), create_workspace (a writer), cleanup_frames and
    cleanup_entities (erasers), bound to ``ctx``."""

    async def cleanup_frames(
        max_temp_age_days: Annotated[
            int, Field(ge=0, description="Delete 'temporary' memories older than this.")
        ] = 30,
        max_deprecated_age_days: Annotated[
            int, Field(ge=0, description="Delete 'deprecated' memories older than this.")
        ] = 90,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.FramesCleaned]:
        """Compact memory: prune old temporary/deprecated memories and merge superseded updates."""
        target = await ctx.mind_of(mind)
        r = await guard(
            target.frames.compact(
                max_temp_age_days=max_temp_age_days, max_deprecated_age_days=max_deprecated_age_days
            )
        )
        out = m.FramesCleaned(
            mind=target.name,
            temporary_pruned=r.temporary_pruned,
            deprecated_pruned=r.deprecated_pruned,
            pframes_merged=r.pframes_merged,
        )
        return reply(
            out,
            f"Pruned {r.temporary_pruned} temporary and {r.deprecated_pruned} "
            f"deprecated memories; merged {r.pframes_merged} updates.",
        )

    async def cleanup_entities(
        entity_ids: Annotated[
            list[Annotated[int, Field(ge=1, lt=2**63)]],
            Field(min_length=1, max_length=MAX_ENTITY_IDS,
                  description="Ids of the entities to retire (see search_entities)."),
        ],
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.EntitiesRetired]:
        """Retire entities (and their relations): kept in history, no longer active."""
        target = await ctx.mind_of(mind)

        def retire() -> m.EntitiesRetired:
            retired: list[int] = []
            missing: list[int] = []
            for entity_id in entity_ids:
                if target.sync.knowledge.get_entity(entity_id) is None:
                    missing.append(entity_id)
                    continue
                target.sync.knowledge.retire_entity(entity_id)
                retired.append(entity_id)
            return m.EntitiesRetired(mind=target.name, retired=retired, not_found=missing)

        out = await guard(ctx.store.run_sync(retire))
        return reply(
            out,
            f"Retired {len(out.retired)} entities"
            + (f"; not found: {out.not_found}" if out.not_found else "")
            + ".",
        )

    async def create_workspace(
        name: Annotated[
            str,
            Field(min_length=1, max_length=200, description="Name of the new workspace (mind)."),
        ],
    ) -> Annotated[CallToolResult, m.Workspace]:
        """Create a workspace (a separate mind); creating an existing one just returns it. Only
        the minds this server serves can be created."""
        created = await ctx.create_mind(name)
        infos = await guard(ctx.store.list_minds())
        info = next((i for i in infos if i.name == created.name), None)
        out = m.Workspace(
            name=created.name,
            kind=created.kind,
            created_at=m.iso(info.created_at) if info else None,
        )
        return reply(out, f"Workspace '{created.name}' is ready.")

    async def list_workspaces() -> Annotated[CallToolResult, m.WorkspaceList]:
        """List the workspaces (minds) this server serves."""
        infos = [i for i in await guard(ctx.store.list_minds()) if ctx.access.permits(i.name)]
        out = m.WorkspaceList(
            workspaces=[
                m.Workspace(name=i.name, kind=i.kind, created_at=m.iso(i.created_at)) for i in infos
            ]
        )
        return reply(out, json.dumps([i.name for i in infos]))

    return ToolGroup(
        readers=[list_workspaces],
        writers=[create_workspace],
        erasers=[cleanup_frames, cleanup_entities],
    )

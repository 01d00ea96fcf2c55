"""The MCP tools that let an agent read and edit what it remembers, one item at a time:
get_memory, update_memory, forget_memory, read_graph, open_nodes, delete_relation,
retire_entity. Thin wrappers over the mind's API (``mind.frames``, ``mind.knowledge``).

A group of :mod:`waggle_store.mcp.server`, in its own module to keep each under 400 lines.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

import waggle_store as ws
from waggle_store.facade.knowledge import KnowledgeAPI
from waggle_store.mcp import models as m
from waggle_store.mcp.budget import PAGE_BYTES, RECALL_BYTES, prefix_within
from waggle_store.mcp.tooling import MindArg, ToolContext, ToolGroup, guard, reply
from waggle_store.repositories.knowledge_common import MAX_NAME_LENGTH
from waggle_store.timeutil import utcnow

Importance = Literal["critical", "important", "normal", "temporary", "deprecated"]
FrameId = Annotated[int, Field(ge=1, lt=2**63, description="Id of the memory (see recall_memory).")]
EntityId = Annotated[int, Field(ge=1, lt=2**63, description="Id of the entity.")]
#: Deepest page read_graph serves: paging walks the graph in name order from the start.
MAX_GRAPH_OFFSET = 10_000
#: Most relations one read_graph/open_nodes answer lists (about 200 bytes each).
MAX_GRAPH_RELATIONS = 2_000


def _page(frame: ws.Frame, offset: int) -> m.MemoryOut:
    page = prefix_within(frame.content[offset:], PAGE_BYTES)
    end = offset + len(page)
    return m.MemoryOut(
        frame_id=frame.id, content=page, offset=offset, total_chars=len(frame.content),
        next_offset=end if end < len(frame.content) else None, importance=frame.importance,
        source=frame.source, created_at=m.iso(frame.created_at) or "",
        access_count=frame.access_count)


def _memory_text(out: m.MemoryOut) -> str:
    text = f"Memory #{out.frame_id} ({out.importance}, {out.created_at}): {out.content}"
    if out.next_offset is not None:
        text += (f"\n(Continues: get_memory(frame_id={out.frame_id}, "
                 f"offset={out.next_offset}) reads the next part.)")
    return text


def edit_tools(ctx: ToolContext) -> ToolGroup:
    """get_memory, read_graph, open_nodes (readers), update_memory (a writer), forget_memory,
    delete_relation, retire_entity (erasers), bound to ``ctx``."""

    async def get_memory(
        frame_id: FrameId,
        offset: Annotated[int, Field(ge=0, le=2_000_000, description=(
            "Start at this character (a long memory comes in parts; see next_offset)."))] = 0,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.MemoryOut]:
        """Read one memory in full (a very long one in parts of about 256 KB)."""
        target = await ctx.mind_of(mind)
        frame = await guard(target.frames.get(frame_id))
        if frame is None:
            raise ToolError(f"NotFoundError: no memory #{frame_id} in this mind")
        out = _page(frame, min(offset, len(frame.content)))
        return reply(out, _memory_text(out))

    async def update_memory(
        frame_id: FrameId,
        content: Annotated[str | None, Field(
            min_length=1, description="The new text; omit to keep the text.")] = None,
        importance: Annotated[Importance | None, Field(
            description="The new importance; omit to keep it.")] = None,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.MemoryOut]:
        """Change a memory's text and/or importance (the search index follows)."""
        if content is None and importance is None:
            raise ToolError("InvalidInputError: give content, importance or both")
        target = await ctx.mind_of(mind)

        def update() -> ws.Frame:
            frames = target.sync.frames
            text = content
            if text is None:
                current = frames.get(frame_id)
                if current is None:
                    raise ws.NotFoundError(f"no memory #{frame_id} in this mind")
                text = current.content
            return frames.update(frame_id, text, importance=importance)

        out = _page(await guard(ctx.store.run_sync(update)), 0)
        return reply(out, f"Memory #{frame_id} updated ({out.importance}).")

    async def forget_memory(frame_id: FrameId,
                            mind: MindArg = None) -> Annotated[CallToolResult, m.Forgotten]:
        """Delete a memory."""
        target = await ctx.mind_of(mind)
        await guard(target.frames.delete(frame_id))
        return reply(m.Forgotten(mind=target.name, id=frame_id),
                     f"Memory #{frame_id} forgotten.")

    async def read_graph(
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many entities.")] = 100,
        offset: Annotated[int, Field(ge=0, le=MAX_GRAPH_OFFSET, description=(
            "Skip this many entities (in name order); see next_offset."))] = 0,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.Graph]:
        """The knowledge graph, a page at a time: active entities in name order, and the active
        relations leaving them."""
        target = await ctx.mind_of(mind)

        def graph() -> m.Graph:
            knowledge = target.sync.knowledge
            rows = knowledge.entities_valid_at(utcnow(), limit=offset + limit + 1)[offset:]
            page, more = _within_budget(rows[:limit])
            relations = [r for e in page for r in knowledge.relations_from(e.id)]
            done = offset + len(page)
            return m.Graph(mind=target.name, entities=[m.EntityOut.of(e) for e in page],
                           relations=[m.RelationOut.of(r)
                                      for r in relations[:MAX_GRAPH_RELATIONS]],
                           relations_truncated=len(relations) > MAX_GRAPH_RELATIONS,
                           next_offset=done if more or len(rows) > len(page) else None)

        out = await guard(ctx.store.run_sync(graph))
        return reply(out, _graph_text(out))

    async def open_nodes(
        names: Annotated[list[Annotated[str, Field(max_length=MAX_NAME_LENGTH)]], Field(
            min_length=1, max_length=100, description=(
            "Entity names (case-insensitive) or ids (strings of digits)."))],
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.Graph]:
        """Entities by name, with their active relations (both directions)."""
        target = await ctx.mind_of(mind)

        def nodes() -> m.Graph:
            knowledge = target.sync.knowledge
            found: dict[int, ws.Entity] = {}
            missing: list[str] = []
            for name in names:
                entity = _find(knowledge, name)
                if entity is None:
                    missing.append(name)
                else:
                    found[entity.id] = entity
            relations: dict[int, ws.Relation] = {}
            for entity_id in found:
                for r in [*knowledge.relations_from(entity_id), *knowledge.relations_to(entity_id)]:
                    relations[r.id] = r
            page, _ = _within_budget(list(found.values()))
            listed = list(relations.values())
            return m.Graph(mind=target.name, entities=[m.EntityOut.of(e) for e in page],
                           relations=[m.RelationOut.of(r) for r in listed[:MAX_GRAPH_RELATIONS]],
                           relations_truncated=len(listed) > MAX_GRAPH_RELATIONS,
                           not_found=missing)

        out = await guard(ctx.store.run_sync(nodes))
        return reply(out, _graph_text(out))

    async def delete_relation(
        relation_id: Annotated[int, Field(ge=1, lt=2**63, description="Id of the relation.")],
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.Forgotten]:
        """End a relation: it is no longer active (history keeps it)."""
        target = await ctx.mind_of(mind)
        await guard(target.knowledge.retire_relation(relation_id))
        return reply(m.Forgotten(mind=target.name, id=relation_id),
                     f"Relation #{relation_id} ended.")

    async def retire_entity(entity_id: EntityId,
                            mind: MindArg = None) -> Annotated[CallToolResult, m.Forgotten]:
        """Retire an entity and its relations: no longer active (history keeps them)."""
        target = await ctx.mind_of(mind)

        def retire() -> None:
            if target.sync.knowledge.get_entity(entity_id) is None:
                raise ws.NotFoundError(f"no entity with id {entity_id} in this mind")
            target.sync.knowledge.retire_entity(entity_id)

        await guard(ctx.store.run_sync(retire))
        return reply(m.Forgotten(mind=target.name, id=entity_id),
                     f"Entity #{entity_id} retired.")

    return ToolGroup(readers=[get_memory, read_graph, open_nodes], writers=[update_memory],
                     erasers=[forget_memory, delete_relation, retire_entity])


def _find(knowledge: KnowledgeAPI, name: str) -> ws.Entity | None:
    """An entity by id (a string of digits) or by exact name, case-insensitive."""
    text = name.strip()
    if text.isascii() and text.isdigit():
        return knowledge.get_entity(int(text)) if 0 < int(text) < 2**63 else None
    wanted = text.casefold()
    if not wanted:
        return None
    return next((e for e in knowledge.search_entities(text, limit=500)
                 if e.name.strip().casefold() == wanted), None)


def _within_budget(entities: list[ws.Entity]) -> tuple[list[ws.Entity], bool]:
    """The leading entities whose JSON fits the answer's budget (at least one), and whether
    some were left out."""
    total = 0
    for i, entity in enumerate(entities):
        total += len(m.EntityOut.of(entity).model_dump_json().encode("utf-8"))
        if total > RECALL_BYTES and i > 0:
            return entities[:i], True
    return entities, False


def _graph_text(out: m.Graph) -> str:
    names = {e.id: e.name for e in out.entities}
    lines = [f"#{e.id} {e.name} ({e.entity_type})" for e in out.entities]
    lines += [f"{names.get(r.source_id, f'#{r.source_id}')} —{r.relation_type}→ "
              f"{names.get(r.target_id, f'#{r.target_id}')} (relation #{r.id})"
              for r in out.relations]
    if out.not_found:
        lines.append(f"Not found: {', '.join(out.not_found)}")
    if out.next_offset is not None:
        lines.append(f"(More: read_graph(offset={out.next_offset}).)")
    return "\n".join(lines) if lines else "The graph is empty."

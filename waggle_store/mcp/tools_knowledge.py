"""The MCP knowledge-graph tools: save_entity, create_relation, search_entities.

A group of :mod:`waggle_store.mcp.server`, in its own module to keep each under 400 lines.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

import waggle_store as ws
from waggle_store.mcp import models as m
from waggle_store.mcp.tooling import MindArg, ToolContext, ToolGroup, guard, reply
from waggle_store.models import EntityRow
from waggle_store.repositories.knowledge import KnowledgeRepository
from waggle_store.repositories.knowledge_common import MAX_NAME_LENGTH, to_entity, to_relation


def knowledge_tools(ctx: ToolContext) -> ToolGroup:
    """search_entities (a reader), save_entity and create_relation (writers), bound to ``ctx``."""

    async def save_entity(
        entity_type: Annotated[
            str,
            Field(
                min_length=1,
                description="Kind of thing, e.g. person, project, organization, concept.",
            ),
        ],
        name: Annotated[str, Field(min_length=1, description="The entity's name.")],
        properties: Annotated[
            dict[str, Any] | None, Field(description="Optional facts about it, as a JSON object.")
        ] = None,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.EntitySaved]:
        """Add an entity (a person, project, place, concept...) to the knowledge graph."""
        target = await ctx.mind_of(mind)
        entity = await guard(target.knowledge.create_entity(entity_type, name, properties or {}))
        out = m.EntitySaved(mind=target.name, entity=m.EntityOut.of(entity))
        return reply(out, f"Entity #{entity.id}: {entity.name} ({entity.entity_type}).")

    async def create_relation(
        source: Annotated[
            str | int,
            Field(
                description="Source entity: its integer id (a string of digits counts as an id), "
                            "or its name (case-insensitive; created as a 'concept' if missing)."
            ),
        ],
        target: Annotated[
            str | int,
            Field(
                description="Target entity: its integer id (a string of digits counts as an id), "
                            "or its name (case-insensitive; created as a 'concept' if missing)."
            ),
        ],
        relation_type: Annotated[
            str,
            Field(
                min_length=1,
                description="How source relates to target, e.g. works_on, leads, part_of.",
            ),
        ],
        confidence: Annotated[
            float, Field(ge=0.0, le=1.0, description="How sure this is, 0 to 1.")
        ] = 1.0,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.RelationSaved]:
        """Record a relation between two entities of the knowledge graph."""
        chosen = await ctx.mind_of(mind)

        def link() -> m.RelationSaved:
            # One transaction: an end created as a concept is kept only with the relation, so
            # a call refused for its other end, its type or the mind's schema creates nothing.
            created: list[str] = []
            with ctx.store.sync.write() as session:
                kg = KnowledgeRepository(session, chosen.sync.id)
                schema = kg.schema.get()
                src = _resolve_entity(kg, source, created, schema)
                dst = _resolve_entity(kg, target, created, schema)
                rel = to_relation(kg.relations.create(src.id, dst.id, relation_type,
                                                      confidence=confidence, schema=schema))
                return m.RelationSaved(
                    mind=chosen.name,
                    relation_id=rel.id,
                    source=m.EntityOut.of(to_entity(src)),
                    target=m.EntityOut.of(to_entity(dst)),
                    relation_type=rel.relation_type,
                    confidence=rel.confidence,
                    created_entities=created,
                )

        out = await guard(ctx.store.run_sync(link))
        return reply(
            out,
            f"{out.source.name} —{out.relation_type}→ {out.target.name} "
            f"(relation #{out.relation_id}).",
        )

    async def search_entities(
        query: Annotated[str, Field(max_length=MAX_NAME_LENGTH,
                                    description="Part of an entity name (case-insensitive).")],
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many entities.")] = 20,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.EntityList]:
        """Find active entities whose name contains the query."""
        target = await ctx.mind_of(mind)
        found = await guard(target.knowledge.search_entities(query, limit=limit))
        out = m.EntityList(mind=target.name, entities=[m.EntityOut.of(e) for e in found])
        lines = [f"#{e.id} {e.name} ({e.entity_type})" for e in found]
        return reply(out, "\n".join(lines) if lines else f"No entities match {query!r}.")

    return ToolGroup(readers=[search_entities], writers=[save_entity, create_relation])


def _resolve_entity(kg: KnowledgeRepository, ref: str | int, created: list[str],
                    schema: ws.ValidationSchema | None) -> EntityRow:
    """An entity by id, or by name (case-insensitive), created as a 'concept' when missing, in
    the caller's transaction.

    A string of ASCII digits is an id: many clients (and the models behind them) send numbers
    as strings, and an id must never become a new entity named "1"."""
    if isinstance(ref, str) and ref.strip().isascii() and ref.strip().isdigit():
        ref = int(ref.strip())
    if isinstance(ref, int):
        entity = kg.entities.get(ref) if 0 < ref < 2**63 else None
        if entity is None:
            raise ws.NotFoundError(f"no entity with id {ref}")
        return entity
    name = ref.strip()
    if not name:
        raise ws.InvalidInputError("an entity name must not be empty")
    wanted = name.casefold()
    for candidate in kg.entities.search(name, 500):
        if candidate.name.strip().casefold() == wanted:
            return candidate
    created.append(name)
    return kg.entities.create("concept", name, {}, schema=schema)

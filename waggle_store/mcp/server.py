"""The MCP tools: an agent's memory (save, recall, knowledge, identity, awareness) over MCP.

One store per server process, reached through :mod:`waggle_store.aio` so that its bounded worker
pool, not the SDK's thread limiter, decides how many store calls run at once. Each tool takes an
optional ``mind``; without it the server's default mind (``--mind``, else "default") is used.

Every tool answers with structured content (validated against its published output schema) and a
short readable text for models that read only text. Bad input and store errors come back as tool
errors (``isError``) with the store's message, so the calling model can correct itself; the
server keeps running.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

import waggle_store as ws
from waggle_store.aio import AsyncMind, AsyncStore
from waggle_store.mcp import models as m

T = TypeVar("T")

MindArg = Annotated[str | None, Field(
    description="Name of the mind (workspace) to use; omit for the server's default mind.",
)]
Importance = Literal["critical", "important", "normal", "temporary", "deprecated"]
Profile = Literal["balanced", "recent", "important", "connected"]
Category = Literal["task", "action", "pending", "flag"]

INSTRUCTIONS = (
    "Long-term memory for this agent. Call recall_memory before answering questions about past "
    "work, people or decisions; call save_memory for facts worth keeping. Entities and relations "
    "form a knowledge graph (save_entity, create_relation, search_entities). identity is who the "
    "agent is; awareness holds short-lived context items. Each tool takes an optional 'mind' "
    "(a workspace name)."
)


def _reply(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=model.model_dump(mode="json"))


async def _guard(call: Awaitable[T]) -> T:
    """A store error becomes a tool error carrying the store's message (which names the bad
    argument): the model reads it and can retry, and the server stays up."""
    try:
        return await call
    except ws.WaggleStoreError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def build_server(store: AsyncStore, *, default_mind: str = "default") -> MCPServer[Any]:
    """An MCP server whose tools read and write ``store``; ``default_mind`` serves calls that
    name no mind."""
    server: MCPServer[Any] = MCPServer(
        "waggle-store", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING",
    )
    async def mind_of(name: str | None) -> AsyncMind:
        # Looked up on every call, not cached: a mind dropped and re-created meanwhile (by the
        # CLI, another process) must not be reached through a stale id.
        return await _guard(store.mind(name or default_mind))

    def tool(fn: Callable[..., Awaitable[CallToolResult]], *, read_only: bool = False,
             destructive: bool = False) -> None:
        server.add_tool(fn, annotations=ToolAnnotations(
            read_only_hint=read_only, destructive_hint=destructive, open_world_hint=False,
        ))

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
        target = await mind_of(mind)
        r = await _guard(target.cognify(content, importance=importance))
        out = m.MemorySaved(
            mind=target.name,
            frame_id=r.frame_id,
            entities_extracted=r.entities_extracted,
            relations_created=r.relations_created,
            related_frames=list(r.related_frames),
            vector_status=r.vector_status,
        )
        return _reply(
            out,
            f"Saved memory #{r.frame_id} in '{target.name}' "
            f"({r.entities_extracted} entities, {r.relations_created} relations).",
        )

    async def recall_memory(
        query: Annotated[
            str, Field(min_length=1, description="What to remember: a question or keywords.")
        ],
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many results.")] = 10,
        profile: Annotated[
            Profile,
            Field(description="Ranking emphasis: balanced, recent, important or connected."),
        ] = "balanced",
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.Recall]:
        """Search memory (keyword + semantic) and return the best matching memories, best first."""
        target = await mind_of(mind)
        combined = ws.CombinedRetrieval(workspace=_Recalling(target.sync))
        result = await _guard(
            store.run_sync(combined.search, query, limit=limit, profile=profile, scope="workspace")
        )
        hits = [
            m.RecallHit(
                frame_id=r.metadata.get("frame_id"),
                content=r.content,
                score=r.score,
                source=r.source,
                attribution=r.attribution,
                importance=r.metadata.get("importance"),
            )
            for r in [*result.workspace_results, *result.personal_results, *result.external_results]
        ]
        out = m.Recall(
            mind=target.name,
            query=query,
            results=hits,
            has_conflict=result.has_conflict,
            conflict_note=result.conflict_note,
        )
        lines = [f"{i}. [#{h.frame_id}, {h.score:.2f}] {h.content}" for i, h in enumerate(hits, 1)]
        return _reply(out, "\n".join(lines) if lines else f"No memories match {query!r}.")

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
        target = await mind_of(mind)
        entity = await _guard(target.knowledge.create_entity(entity_type, name, properties or {}))
        out = m.EntitySaved(mind=target.name, entity=m.EntityOut.of(entity))
        return _reply(out, f"Entity #{entity.id}: {entity.name} ({entity.entity_type}).")

    async def create_relation(
        source: Annotated[
            str | int,
            Field(
                description="Source entity: its name (case-insensitive; created as a 'concept' if "
                            "missing) or its integer id."
            ),
        ],
        target: Annotated[
            str | int,
            Field(
                description="Target entity: its name (case-insensitive; created as a 'concept' if "
                            "missing) or its integer id."
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
        chosen = await mind_of(mind)

        def link() -> m.RelationSaved:
            created: list[str] = []
            src = _resolve_entity(chosen.sync, source, created)
            dst = _resolve_entity(chosen.sync, target, created)
            rel = chosen.sync.knowledge.create_relation(
                src.id, dst.id, relation_type, confidence=confidence
            )
            return m.RelationSaved(
                mind=chosen.name,
                relation_id=rel.id,
                source=m.EntityOut.of(src),
                target=m.EntityOut.of(dst),
                relation_type=rel.relation_type,
                confidence=rel.confidence,
                created_entities=created,
            )

        out = await _guard(store.run_sync(link))
        return _reply(
            out,
            f"{out.source.name} —{out.relation_type}→ {out.target.name} "
            f"(relation #{out.relation_id}).",
        )

    async def search_entities(
        query: Annotated[str, Field(description="Part of an entity name (case-insensitive).")],
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many entities.")] = 20,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.EntityList]:
        """Find active entities whose name contains the query."""
        target = await mind_of(mind)
        found = await _guard(target.knowledge.search_entities(query, limit=limit))
        out = m.EntityList(mind=target.name, entities=[m.EntityOut.of(e) for e in found])
        lines = [f"#{e.id} {e.name} ({e.entity_type})" for e in found]
        return _reply(out, "\n".join(lines) if lines else f"No entities match {query!r}.")

    async def get_identity(mind: MindArg = None) -> Annotated[CallToolResult, m.IdentityResult]:
        """Who this agent is: name, role, personality, capabilities, system prompt."""
        target = await mind_of(mind)
        identity = await _guard(target.identity.get())
        out = m.IdentityResult(
            mind=target.name, identity=m.IdentityOut.of(identity) if identity else None
        )
        text = (
            f"{identity.name} — {identity.role}".rstrip(" —")
            if identity
            else f"No identity set for '{target.name}'."
        )
        return _reply(out, text)

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
        target = await mind_of(mind)
        identity = await _guard(
            target.identity.set(
                name=name,
                role=role,
                department=department,
                personality=personality,
                capabilities=capabilities,
                system_prompt=system_prompt,
            )
        )
        return _reply(
            m.IdentityResult(mind=target.name, identity=m.IdentityOut.of(identity)),
            f"Identity set: {identity.name}.",
        )

    async def get_awareness(mind: MindArg = None) -> Annotated[CallToolResult, m.AwarenessList]:
        """The agent's current awareness: unexpired context items, highest priority first."""
        target = await mind_of(mind)
        items = await _guard(target.awareness.active())
        out = m.AwarenessList(mind=target.name, items=[m.AwarenessOut.of(i) for i in items])
        lines = [f"[{i.category}, p{i.priority}] {i.content}" for i in items]
        return _reply(out, "\n".join(lines) if lines else "Nothing in awareness.")

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
        target = await mind_of(mind)
        item = await _guard(target.awareness.add(category, content, priority=priority))
        return _reply(
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
        target = await mind_of(mind)
        removed = await _guard(target.awareness.clear(category))
        return _reply(
            m.Cleared(mind=target.name, removed=removed), f"Removed {removed} awareness item(s)."
        )

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
        target = await mind_of(mind)
        r = await _guard(
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
        return _reply(
            out,
            f"Pruned {r.temporary_pruned} temporary and {r.deprecated_pruned} "
            f"deprecated memories; merged {r.pframes_merged} updates.",
        )

    async def cleanup_entities(
        entity_ids: Annotated[
            list[int],
            Field(min_length=1, description="Ids of the entities to retire (see search_entities)."),
        ],
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.EntitiesRetired]:
        """Retire entities (and their relations): kept in history, no longer active."""
        target = await mind_of(mind)

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

        out = await _guard(store.run_sync(retire))
        return _reply(
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
        """Create a workspace (a separate mind); creating an existing one just returns it."""
        created = await mind_of(name)
        info = next((i for i in await _guard(store.list_minds()) if i.name == created.name), None)
        out = m.Workspace(
            name=created.name,
            kind=created.kind,
            created_at=m.iso(info.created_at) if info else None,
        )
        return _reply(out, f"Workspace '{created.name}' is ready.")

    async def list_workspaces() -> Annotated[CallToolResult, m.WorkspaceList]:
        """List every workspace (mind) of this store."""
        infos = await _guard(store.list_minds())
        out = m.WorkspaceList(
            workspaces=[
                m.Workspace(name=i.name, kind=i.kind, created_at=m.iso(i.created_at)) for i in infos
            ]
        )
        return _reply(out, json.dumps([i.name for i in infos]))

    readers: list[Callable[..., Awaitable[CallToolResult]]] = [
        recall_memory,
        search_entities,
        get_identity,
        get_awareness,
        list_workspaces,
    ]
    writers: list[Callable[..., Awaitable[CallToolResult]]] = [
        save_memory,
        save_entity,
        create_relation,
        set_identity,
        set_awareness,
        create_workspace,
    ]
    erasers: list[Callable[..., Awaitable[CallToolResult]]] = [
        clear_awareness,
        cleanup_frames,
        cleanup_entities,
    ]
    for fn in readers:
        tool(fn, read_only=True)
    for fn in writers:
        tool(fn)
    for fn in erasers:
        tool(fn, destructive=True)
    return server


class _Recalling:
    """A mind seen by CombinedRetrieval, whose search is a recall: what an agent recalls counts
    as an access (popularity ranking and compaction read it)."""

    def __init__(self, mind: ws.Mind) -> None:
        self._mind = mind

    def search(self, query: str, *, limit: int, profile: str) -> list[ws.SearchResult]:
        return self._mind.recall(query, limit=limit, profile=profile)


def _resolve_entity(mind: ws.Mind, ref: str | int, created: list[str]) -> ws.Entity:
    """An entity by id, or by name (case-insensitive), created as a 'concept' when missing."""
    if isinstance(ref, int):
        entity = mind.knowledge.get_entity(ref)
        if entity is None:
            raise ws.NotFoundError(f"no entity with id {ref}")
        return entity
    name = ref.strip()
    if not name:
        raise ws.InvalidInputError("an entity name must not be empty")
    wanted = name.casefold()
    for candidate in mind.knowledge.search_entities(name, limit=500):
        if candidate.name.strip().casefold() == wanted:
            return candidate
    created.append(name)
    return mind.knowledge.create_entity("concept", name, {})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("waggle-store")
    except PackageNotFoundError:
        return "0+unknown"

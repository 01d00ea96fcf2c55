"""The structured results of the MCP tools (their published output schemas).

Pydantic models rather than the store's dataclasses: the output schema an MCP client (and the
model behind it) reads is generated from these, so each field says what it means, and times are
plain ISO-8601 strings that any client can parse.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

import waggle_store as ws


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


class MemorySaved(BaseModel):
    mind: str = Field(description="The mind (workspace) the memory was saved in.")
    frame_id: int = Field(description="Id of the stored memory frame.")
    entities_extracted: int = Field(description="Entities found in the text and linked to it.")
    relations_created: int = Field(description="Relations between those entities recorded.")
    related_frames: list[int] = Field(description="Ids of earlier memories on the same subject.")
    vector_status: str = Field(description="'ready' when embedded now, 'pending' when it will be.")


class RecallHit(BaseModel):
    frame_id: int | None = Field(description="Id of the memory frame (None for external results).")
    content: str = Field(description="The remembered text; a long one is cut (see truncated).")
    truncated: bool = Field(default=False, description="The content was cut to keep the answer "
                                                       "small; get_memory reads all of it.")
    content_chars: int = Field(description="Length of the whole memory, in characters.")
    score: float = Field(description="Relevance in [0, 1]; higher is better.")
    source: str = Field(description="'workspace', 'personal' or 'external'.")
    attribution: str = Field(description="A tag to cite the result by.")
    importance: str | None = Field(default=None, description="The memory's importance.")


class Recall(BaseModel):
    mind: str
    query: str
    results: list[RecallHit] = Field(description="Best first.")
    has_conflict: bool = Field(default=False, description="Sources disagree (see conflict_note).")
    conflict_note: str | None = None


class EntityOut(BaseModel):
    id: int
    entity_type: str
    name: str
    properties: dict[str, Any]
    valid_from: str | None
    valid_to: str | None = Field(description="Set once the entity is retired.")

    @classmethod
    def of(cls, entity: ws.Entity) -> EntityOut:
        return cls(id=entity.id, entity_type=entity.entity_type, name=entity.name,
                   properties=dict(entity.properties), valid_from=iso(entity.valid_from),
                   valid_to=iso(entity.valid_to))


class EntitySaved(BaseModel):
    mind: str
    entity: EntityOut


class RelationSaved(BaseModel):
    mind: str
    relation_id: int
    source: EntityOut
    target: EntityOut
    relation_type: str
    confidence: float
    created_entities: list[str] = Field(
        description="Names given as source/target that did not exist and were created as 'concept'."
    )


class EntityList(BaseModel):
    mind: str
    entities: list[EntityOut]


class IdentityOut(BaseModel):
    name: str
    role: str
    department: str
    personality: str
    capabilities: str
    system_prompt: str
    updated_at: str | None

    @classmethod
    def of(cls, identity: ws.Identity) -> IdentityOut:
        return cls(name=identity.name, role=identity.role, department=identity.department,
                   personality=identity.personality, capabilities=identity.capabilities,
                   system_prompt=identity.system_prompt, updated_at=iso(identity.updated_at))


class IdentityResult(BaseModel):
    mind: str
    identity: IdentityOut | None = Field(description="None when the mind has no identity yet.")


class AwarenessOut(BaseModel):
    id: int
    category: str
    content: str
    priority: int
    expires_at: str | None

    @classmethod
    def of(cls, item: ws.AwarenessItem) -> AwarenessOut:
        return cls(id=item.id, category=item.category, content=item.content,
                   priority=item.priority, expires_at=iso(item.expires_at))


class AwarenessList(BaseModel):
    mind: str
    items: list[AwarenessOut] = Field(description="Active items, highest priority first.")


class AwarenessSaved(BaseModel):
    mind: str
    item: AwarenessOut


class Cleared(BaseModel):
    mind: str
    removed: int = Field(description="How many awareness items were removed.")


class FramesCleaned(BaseModel):
    mind: str
    temporary_pruned: int
    deprecated_pruned: int
    pframes_merged: int


class EntitiesRetired(BaseModel):
    mind: str
    retired: list[int] = Field(description="Entity ids now retired (with their relations).")
    not_found: list[int] = Field(description="Ids that name no entity of this mind.")


class Workspace(BaseModel):
    name: str
    kind: str
    created_at: str | None


class WorkspaceList(BaseModel):
    workspaces: list[Workspace]


class HarvestSourceOut(BaseModel):
    name: str = Field(description="The source's name (ingest_source takes it).")
    kind: str = Field(description="chatgpt, claude, markdown or jsonl.")
    path: str | None = Field(description="The file or folder, on the server's machine.")
    display_name: str
    last_synced_at: str | None = Field(description="None until the first sync.")
    items_imported: int = Field(description="Conversations, files or lines imported so far.")
    frames_created: int = Field(description="Memories created from it so far.")
    auto_sync: bool
    sync_interval_hours: int
    stale: bool = Field(default=False, description="An auto-synced source due for a sync.")

    @classmethod
    def of(cls, source: ws.HarvestSource, *, stale: bool = False) -> HarvestSourceOut:
        return cls(name=source.name, kind=source.kind, path=source.path,
                   display_name=source.display_name, last_synced_at=iso(source.last_synced_at),
                   items_imported=source.items_imported, frames_created=source.frames_created,
                   auto_sync=source.auto_sync, sync_interval_hours=source.sync_interval_hours,
                   stale=stale)


class HarvestSources(BaseModel):
    mind: str
    sources: list[HarvestSourceOut] = Field(description="Most recently synced first.")


class HarvestFailure(BaseModel):
    item: str = Field(description="The conversation, file or line that failed.")
    error: str


class HarvestSynced(BaseModel):
    mind: str
    sources_synced: int = Field(description="Sources read (new or changed).")
    sources_skipped: int = Field(description="Sources unchanged since their last sync.")
    items_seen: int
    items_imported: int = Field(description="Items with at least one new memory.")
    frames_created: int = Field(description="New memories; 0 when everything was known.")
    failures: list[HarvestFailure] = Field(description="Items not imported (retried next sync).")
    sources: list[HarvestSourceOut] = Field(description="The synced sources, as they are now.")

    @classmethod
    def of(cls, mind: str, report: ws.HarvestReport,
           sources: list[ws.HarvestSource]) -> HarvestSynced:
        return cls(mind=mind, sources_synced=report.sources_synced,
                   sources_skipped=report.sources_skipped, items_seen=report.items_seen,
                   items_imported=report.items_imported, frames_created=report.frames_created,
                   failures=[HarvestFailure(item=i, error=e) for i, e in report.failures],
                   sources=[HarvestSourceOut.of(s) for s in sources])


class Consolidated(BaseModel):
    mind: str
    dry_run: bool = Field(description="True: nothing was changed; the counts are what a run does.")
    fragments_processed: int = Field(description="Memories considered.")
    fragments_decayed: int = Field(description="Memories whose salience fell since the last run.")
    fragments_merged: int = Field(description="Near-duplicates folded into another memory.")
    fragments_deleted: int = Field(description="Faded memories pruned.")


class MemoryOut(BaseModel):
    frame_id: int
    content: str = Field(description="The memory's text from offset (all of it unless very long).")
    offset: int = Field(description="Where content starts, in characters.")
    total_chars: int = Field(description="Length of the whole memory, in characters.")
    next_offset: int | None = Field(description="Where the next part starts; None at the end.")
    importance: str
    source: str
    created_at: str
    access_count: int


class Forgotten(BaseModel):
    mind: str
    id: int = Field(description="The memory, relation or entity acted on.")


class RelationOut(BaseModel):
    id: int
    source_id: int
    target_id: int
    relation_type: str
    confidence: float
    valid_from: str | None
    valid_to: str | None = Field(description="Set once the relation has ended.")

    @classmethod
    def of(cls, relation: ws.Relation) -> RelationOut:
        return cls(id=relation.id, source_id=relation.source_id, target_id=relation.target_id,
                   relation_type=relation.relation_type, confidence=relation.confidence,
                   valid_from=iso(relation.valid_from), valid_to=iso(relation.valid_to))


class Graph(BaseModel):
    mind: str
    entities: list[EntityOut]
    relations: list[RelationOut] = Field(description="Active relations of those entities.")
    relations_truncated: bool = Field(default=False,
                                      description="More relations exist than were listed.")
    next_offset: int | None = Field(default=None,
                                    description="read_graph's offset for the next page; None "
                                                "at the end.")
    not_found: list[str] = Field(default_factory=list,
                                 description="Names (open_nodes) that match no active entity.")

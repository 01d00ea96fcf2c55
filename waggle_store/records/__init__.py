"""Frozen dataclasses returned by the public API.

The API hands out these plain values, never live ORM objects, so that a caller can keep a result
after its session is gone and cannot write to the database by mutating it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, TypeVar

_T = TypeVar("_T")


@dataclass(frozen=True)
class MindInfo:
    name: str
    kind: str
    created_at: datetime


@dataclass(frozen=True)
class Identity:
    name: str
    role: str
    department: str
    personality: str
    capabilities: str
    system_prompt: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class AwarenessItem:
    id: int
    category: str
    content: str
    priority: int
    metadata: dict[str, Any]
    created_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True)
class Session:
    id: int
    gop_id: str
    project_id: str | None
    status: str
    started_at: datetime
    ended_at: datetime | None
    summary: str | None


@dataclass(frozen=True)
class Frame:
    id: int
    frame_type: str
    gop_id: str
    t: int
    base_frame_id: int | None
    content: str
    importance: str
    source: str
    access_count: int
    created_at: datetime
    last_accessed: datetime
    #: The caller's JSON object given when the memory was stored; ``{}`` when none.
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class GopState:
    iframe: Frame | None
    pframes: list[Frame]


@dataclass(frozen=True)
class FrameStats:
    total: int
    by_type: dict[str, int]
    by_importance: dict[str, int]


@dataclass(frozen=True)
class CompactionReport:
    temporary_pruned: int
    deprecated_pruned: int
    pframes_merged: int


@dataclass(frozen=True)
class ReconcileReport:
    fts_fixed: int
    vectors_fixed: int
    orphans_removed: int
    #: Derived objects (FTS5 table/triggers, tsvector column/GIN index, vector tables and their
    #: index/trigger) found missing or broken before this run, one sentence each.
    problems: list[str] = field(default_factory=list)
    #: Those of ``problems`` this run recreated (``reconcile(repair=True)``); the rest remain.
    repaired: list[str] = field(default_factory=list)
    #: Memories whose extraction had failed and was done by this run.
    extractions_fixed: int = 0


@dataclass(frozen=True)
class Entity:
    id: int
    entity_type: str
    name: str
    properties: dict[str, Any]
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime


@dataclass(frozen=True)
class Relation:
    id: int
    source_id: int
    target_id: int
    relation_type: str
    confidence: float
    properties: dict[str, Any]
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime


@dataclass(frozen=True)
class EntityVersion:
    """One state of an entity in recorded time: what the store held from ``recorded_from``
    until ``recorded_to`` (None: the current state)."""

    entity_id: int
    version: int
    name: str
    entity_type: str
    properties: dict[str, Any]
    recorded_from: datetime
    recorded_to: datetime | None
    valid_from: datetime | None = None
    valid_to: datetime | None = None


@dataclass(frozen=True)
class ExtractedEntity:
    name: str
    type: str
    confidence: float = 1.0
    properties: dict[str, Any] | None = None


@dataclass(frozen=True)
class ExtractedRelation:
    source: str
    target: str
    relation_type: str
    confidence: float = 1.0


@dataclass(frozen=True)
class ExtractionUsage:
    """What one extraction cost, for the usage log: a model's tokens and their price."""

    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Extraction:
    """What an extractor found in one text (``usage``: what finding it cost, if anything)."""

    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)
    usage: ExtractionUsage | None = None


@dataclass(frozen=True)
class ValidationSchema:
    """Rules a mind's knowledge graph enforces on write.

    ``required_properties`` maps an entity type to the property keys an entity of that type must
    carry; ``allowed_relations`` lists (source type, relation type, target type) triples, or is
    None to allow any relation.
    """

    required_properties: dict[str, list[str]] = field(default_factory=dict)
    allowed_relations: list[tuple[str, str, str]] | None = None


@dataclass(frozen=True)
class SearchResult:
    frame: Frame
    rrf_score: float
    relevance_score: float
    final_score: float
    explain: dict[str, Any]
    #: How well the frame matches the query, the same on every backend (query-term coverage and
    #: vector confidence; :mod:`waggle_store.search.match`): what threshold decisions read.
    #: None from producers that do not compute it (then ``rrf_score`` stands in).
    match_score: float | None = None


@dataclass(frozen=True)
class MemoryInput:
    content: str
    created_at: datetime | str | None = None
    importance: str | None = None
    source: str | None = None
    #: The memory's metadata (a dict of JSON values, see ``Frame.metadata``), or None.
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class Where:
    """A search filter (``mind.search(where=...)``, also given as a dict of these keys); every
    given part must hold. ``source``/``importance``: one value or a list of them;
    ``min_salience``: the frame's salience (set by consolidation) at least this; ``metadata``:
    each key's value in the frame's metadata equal to the given JSON scalar."""

    source: str | Sequence[str] | None = None
    importance: str | Sequence[str] | None = None
    min_salience: float | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class CognifyResult:
    frame_id: int
    entities_extracted: int
    relations_created: int
    related_frames: list[int]
    vector_status: str
    #: Linking runs after the memory is committed; if it failed, why (the memory is stored).
    link_error: str | None = None
    #: Why the vector is pending (provider failure, quota, another embedding model), if it is.
    vector_error: str | None = None


@dataclass(frozen=True)
class BatchResult:
    """``frame_ids`` in input order (None where an item failed, with ``failures`` saying why);
    ``created`` in input order, True where this call stored the item as a new memory, False
    where the mind already held the same content (the id is that memory's) or the item failed.
    Counting ``created`` counts what the call added, also when another writer stored the same
    content between the caller's own check and this call."""

    frame_ids: list[int | None]
    failures: list[tuple[int, str]]
    created: list[bool] = field(default_factory=list)


@dataclass(frozen=True)
class ExternalDocument:
    content: str
    document_id: str
    score: float
    title: str | None = None
    document_type: str | None = None


@dataclass(frozen=True)
class CombinedResult:
    content: str
    source: str
    attribution: str
    score: float
    metadata: dict[str, Any]


@dataclass(frozen=True)
class CombinedRetrievalResult:
    workspace_results: list[CombinedResult]
    personal_results: list[CombinedResult]
    external_results: list[CombinedResult]
    external_available: bool
    external_skipped: bool
    external_error: str | None
    has_conflict: bool
    conflict_note: str | None


@dataclass(frozen=True)
class EmbedderStatus:
    """What the embedding chain is doing: which provider answers and why others did not."""

    active_provider: str | None
    model: str | None
    dimensions: int | None
    available_providers: list[str]
    #: The provider's current failure: set by a failed call or probe, cleared by the next
    #: successful one (or why "auto" fell back to hashing, for as long as it does).
    last_error: str | None
    tier: str | None = None
    #: When ``last_error``'s failure happened (None without a failed call).
    last_error_at: datetime | None = None
    #: When the provider last answered again after a failure (None if it never failed).
    recovered_at: datetime | None = None
    #: Why this provider: named by the caller, by ``WAGGLE_EMBEDDER``, or chosen by "auto"
    #: (and which providers "auto" passed over because they send text off this machine).
    reason: str | None = None


@dataclass(frozen=True)
class QuotaStatus:
    tier: str | None
    quota: int
    used: int
    remaining: int
    percentage: float
    resets_at: datetime


@dataclass(frozen=True)
class Health:
    dialect: str
    versions: dict[str, str]
    keyword_search: bool
    vector_search: bool
    reasons: list[str]
    embedder: EmbedderStatus | None
    driver: str


@dataclass(frozen=True)
class EmbeddingModelInfo:
    """A mind's embedding model. ``status``: "active", or "switching" while an explicit switch
    re-embeds the mind into another model (this one still serves search until it flips)."""

    provider: str
    model: str
    dimensions: int
    status: str


@dataclass(frozen=True)
class SwitchReport:
    """What ``switch_embedding_model`` did for one mind; ``from_model``/``to_model`` are
    ``provider/model/dimensions`` (``from_model`` None when the mind had no model yet)."""

    mind: str
    from_model: str | None
    to_model: str
    frames_embedded: int
    switched: bool


# The lifecycle records live in their own module (size); they are records like the above.
from waggle_store.records.conversations import AgentRecord as AgentRecord  # noqa: E402
from waggle_store.records.conversations import CanonicalContext as CanonicalContext  # noqa: E402
from waggle_store.records.conversations import Conversation as Conversation  # noqa: E402
from waggle_store.records.conversations import ConversationInfo as ConversationInfo  # noqa: E402
from waggle_store.records.conversations import Message as Message  # noqa: E402
from waggle_store.records.lifecycle import ConsolidationReport as ConsolidationReport  # noqa: E402
from waggle_store.records.lifecycle import ExportReport as ExportReport  # noqa: E402
from waggle_store.records.lifecycle import HarvestReport as HarvestReport  # noqa: E402
from waggle_store.records.lifecycle import HarvestSource as HarvestSource  # noqa: E402
from waggle_store.records.lifecycle import ImportReport as ImportReport  # noqa: E402
from waggle_store.records.lifecycle import PurgeReport as PurgeReport  # noqa: E402
from waggle_store.records.lifecycle import UsageBudget as UsageBudget  # noqa: E402
from waggle_store.records.lifecycle import UsageDay as UsageDay  # noqa: E402
from waggle_store.records.lifecycle import UsageMonth as UsageMonth  # noqa: E402
from waggle_store.records.lifecycle import UsageTotals as UsageTotals  # noqa: E402


def from_values(cls: type[_T], values: Sequence[Any]) -> _T:
    """``cls(*values)`` for the frozen dataclasses a search builds per result (:class:`Frame`,
    :class:`SearchResult`): the same instance (the same ``__dict__``), built without the
    generated ``__init__``, which sets each field through ``object.__setattr__`` (about half the
    cost). Their ``__init__`` only stores the fields (no ``__post_init__``, every
    field given), so nothing is skipped; ``values`` must hold every field, in order."""
    instance = object.__new__(cls)
    instance.__dict__.update(zip(_FIELDS[cls], values, strict=True))
    return instance


#: The classes :func:`from_values` builds, with their field names in order.
_FIELDS: dict[type[Any], tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in (Frame, SearchResult)
}

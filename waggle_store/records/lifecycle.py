"""Records of the memory lifecycle: harvest, consolidation, the usage log, export, import and
purge.

Frozen dataclasses like every record; kept apart from the core records only to keep modules
small. Import them from ``waggle_store.records`` (or the top-level package).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

__all__ = [
    "ConsolidationReport",
    "ExportReport",
    "HarvestReport",
    "HarvestSource",
    "ImportReport",
    "PurgeReport",
    "UsageBudget",
    "UsageDay",
    "UsageMonth",
    "UsageTotals",
]


@dataclass(frozen=True)
class HarvestSource:
    """A registered import source of a mind and what its syncs have brought in so far."""

    name: str
    kind: str
    path: str | None
    display_name: str
    last_synced_at: datetime | None
    items_imported: int
    frames_created: int
    auto_sync: bool
    sync_interval_hours: int
    last_content_hash: str | None


@dataclass(frozen=True)
class HarvestReport:
    sources_synced: int
    sources_skipped: int
    items_seen: int
    items_imported: int
    frames_created: int
    failures: list[tuple[str, str]]  # (item reference, error)


@dataclass(frozen=True)
class ConsolidationReport:
    fragments_processed: int
    fragments_decayed: int
    fragments_merged: int
    fragments_deleted: int
    #: (frame id merged away, id of the frame it was merged into), one pair per merged frame;
    #: like ``pruned``, left out of ``==``, which compares the counts.
    merges: list[tuple[int, int]] = field(default_factory=list, compare=False)
    #: The ids of the frames pruned (salience below ``prune_below``).
    pruned: list[int] = field(default_factory=list, compare=False)


@dataclass(frozen=True)
class UsageTotals:
    """Summed usage; ``mind`` is None when the totals span minds, ``model`` when they span
    models."""

    mind: str | None
    model: str | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class UsageDay:
    day: date
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class UsageMonth:
    month: str  # "YYYY-MM", UTC
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class UsageBudget:
    """A mind's monthly budget and this (UTC) month's spend; ``budget_usd`` None = no budget."""

    mind: str
    month: str
    budget_usd: float | None
    spent_usd: float
    remaining_usd: float | None
    exceeded: bool


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote: the file (None for a file object without a name), how many lines
    (``records``, the header included) and how many of the main kinds."""

    path: str | None
    records: int
    frames: int
    entities: int
    relations: int
    sessions: int = 0
    mentions: int = 0
    vectors: int = 0
    conversations: int = 0
    messages: int = 0
    agents: int = 0
    aliases: int = 0
    #: Earlier states of entities and relations in recorded time.
    versions: int = 0


@dataclass(frozen=True)
class ImportReport:
    """What an import did to the mind ``mind``.

    ``duplicates_skipped`` counts frames the mind already held (same content hash and type):
    they were not inserted, and whatever referred to them now refers to the existing frame.
    ``problems`` lists the data repaired or skipped, one entry per kind of problem with its count
    and an example record; it never lists a fatal error (those raise ``InvalidInputError``).
    """

    mind: str
    frames_imported: int
    entities_imported: int
    relations_imported: int
    sessions_imported: int
    duplicates_skipped: int
    problems: list[str] = field(default_factory=list)
    awareness_imported: int = 0
    mentions_imported: int = 0
    kv_imported: int = 0
    vectors_imported: int = 0
    #: Imported frames left without a vector (``pending``): ``store.reconcile()`` embeds them.
    vectors_pending: int = 0
    harvest_sources_imported: int = 0
    conversations_imported: int = 0
    messages_imported: int = 0
    agents_imported: int = 0
    aliases_imported: int = 0
    #: Earlier states of the imported entities and relations in recorded time.
    versions_imported: int = 0

    @property
    def fragments_imported(self) -> int:
        """OpenFang's name for the frames imported (its report prints fragments / entities)."""
        return self.frames_imported


@dataclass(frozen=True)
class PurgeReport:
    """What ``store.purge()`` did: the size in bytes of the store's files (SQLite: the database
    and its WAL) or tables (PostgreSQL: the schema's tables, indexes and TOAST) before and
    after."""

    bytes_before: int
    bytes_after: int

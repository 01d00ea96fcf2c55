"""waggle_store: the durable memory of AI agents (SQLite or PostgreSQL, hybrid search).

Only the public names live here. Names whose modules pull in heavier code (embedding providers,
extraction, combined retrieval) are imported on first use, so ``import waggle_store`` stays cheap
and never imports an optional dependency.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from waggle_store.errors import (
    BudgetExceededError,
    ConflictError,
    DatabaseUnavailableError,
    DimensionMismatchError,
    EmbeddingProviderError,
    EmbeddingQuotaExceededError,
    InvalidInputError,
    InvalidVectorError,
    MigrationError,
    MissingExtensionError,
    NotFoundError,
    ReadOnlyStorageError,
    StorageBusyError,
    StorageError,
    StorageFullError,
    TierError,
    UnsupportedDialectError,
    ValidationError,
    WaggleStoreError,
)
from waggle_store.mind import Mind
from waggle_store.records import (
    AwarenessItem,
    BatchResult,
    CognifyResult,
    CombinedResult,
    CombinedRetrievalResult,
    CompactionReport,
    ConsolidationReport,
    EmbedderStatus,
    EmbeddingModelInfo,
    Entity,
    ExportReport,
    ExternalDocument,
    ExtractedEntity,
    ExtractedRelation,
    Frame,
    FrameStats,
    GopState,
    HarvestReport,
    HarvestSource,
    Health,
    Identity,
    ImportReport,
    MemoryInput,
    MindInfo,
    QuotaStatus,
    ReconcileReport,
    Relation,
    SearchResult,
    Session,
    SwitchReport,
    UsageBudget,
    UsageDay,
    UsageMonth,
    UsageTotals,
    ValidationSchema,
    Where,
)
from waggle_store.store import Store, open_store

_LAZY = {
    "TierPolicy": "waggle_store.embeddings.tiers",
    "CombinedRetrieval": "waggle_store.pipeline.combined",
    "extract_entities": "waggle_store.knowledge.extract",
    "extract_relations": "waggle_store.knowledge.extract",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'waggle_store' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AwarenessItem",
    "BatchResult",
    "BudgetExceededError",
    "CognifyResult",
    "CombinedResult",
    "CombinedRetrieval",
    "CombinedRetrievalResult",
    "CompactionReport",
    "ConflictError",
    "ConsolidationReport",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbedderStatus",
    "EmbeddingModelInfo",
    "EmbeddingProviderError",
    "EmbeddingQuotaExceededError",
    "Entity",
    "ExportReport",
    "ExternalDocument",
    "ExtractedEntity",
    "ExtractedRelation",
    "Frame",
    "FrameStats",
    "GopState",
    "HarvestReport",
    "HarvestSource",
    "Health",
    "Identity",
    "ImportReport",
    "InvalidInputError",
    "InvalidVectorError",
    "MemoryInput",
    "MigrationError",
    "Mind",
    "MindInfo",
    "MissingExtensionError",
    "NotFoundError",
    "QuotaStatus",
    "ReadOnlyStorageError",
    "ReconcileReport",
    "Relation",
    "SearchResult",
    "Session",
    "StorageBusyError",
    "StorageError",
    "StorageFullError",
    "Store",
    "SwitchReport",
    "TierError",
    "TierPolicy",
    "UnsupportedDialectError",
    "UsageBudget",
    "UsageDay",
    "UsageMonth",
    "UsageTotals",
    "ValidationError",
    "ValidationSchema",
    "WaggleStoreError",
    "Where",
    "extract_entities",
    "extract_relations",
    "open_store",
]

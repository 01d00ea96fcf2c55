"""ORM models, importable by host apps that want to join against waggle_store tables."""

from waggle_store.models.awareness import AWARENESS_CATEGORIES, AwarenessRow
from waggle_store.models.base import (
    SCHEMA,
    TABLE_PREFIX,
    Base,
    UTCDateTime,
    schema_translate_map,
    table_name,
)
from waggle_store.models.conversations import (
    CONVERSATION_KINDS,
    MESSAGE_ROLES,
    AgentRow,
    ConversationRow,
    MessageRow,
)
from waggle_store.models.embeddings import (
    EmbeddingModelRow,
    EmbeddingStagingRow,
    EmbeddingUsage,
    FrameEmbeddingRow,
    MindEmbeddingModelRow,
)
from waggle_store.models.frames import FRAME_SOURCES, FRAME_TYPES, IMPORTANCE_LEVELS, FrameRow
from waggle_store.models.identity import IdentityRow
from waggle_store.models.knowledge import (
    AliasRow,
    EntityMentionRow,
    EntityRow,
    EntityVersionRow,
    PendingExtractionRow,
    RelationRow,
    RelationVersionRow,
)
from waggle_store.models.mind import MIND_KINDS, MindRow, StoreMeta
from waggle_store.models.sessions import SESSION_STATUSES, SessionRow
from waggle_store.models.substrate import (
    HarvestSourceRow,
    HarvestTombstoneRow,
    KVRow,
    UsageLogRow,
)

__all__ = [
    "AWARENESS_CATEGORIES",
    "CONVERSATION_KINDS",
    "FRAME_SOURCES",
    "FRAME_TYPES",
    "IMPORTANCE_LEVELS",
    "MESSAGE_ROLES",
    "MIND_KINDS",
    "SCHEMA",
    "SESSION_STATUSES",
    "TABLE_PREFIX",
    "AgentRow",
    "AliasRow",
    "AwarenessRow",
    "Base",
    "ConversationRow",
    "EmbeddingModelRow",
    "EmbeddingStagingRow",
    "EmbeddingUsage",
    "EntityMentionRow",
    "EntityRow",
    "EntityVersionRow",
    "FrameEmbeddingRow",
    "FrameRow",
    "HarvestSourceRow",
    "HarvestTombstoneRow",
    "IdentityRow",
    "KVRow",
    "MessageRow",
    "MindEmbeddingModelRow",
    "MindRow",
    "PendingExtractionRow",
    "RelationRow",
    "RelationVersionRow",
    "SessionRow",
    "StoreMeta",
    "UTCDateTime",
    "UsageLogRow",
    "schema_translate_map",
    "table_name",
]

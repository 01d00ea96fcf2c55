"""Row-level security on the tables whose rows belong to a mind through a parent row.

Revision ``0011`` puts the bound-mind policy (``postgres_maint.RLS_POLICY``) on every table with
a ``mind_id`` column. The tables here have none: a row belongs to the mind of the row it hangs
from (a frame's vector manifest, its staged re-embedding, an entity mention). Their policy has
the same name and the same meaning, said through the parent: every row while
``waggle.bound_mind`` is unset or empty; while it is set, the rows whose parent belongs to that
mind, one probe of the parent's primary key per row read or written. The unset test comes first,
so an unbound store's role does not run the probe.

Reads (``USING``) go through the first parent listed; writes (``WITH CHECK``) through every
parent, so a bound role cannot link a row of its own mind to another mind's row (foreign keys
are checked without row security). :data:`STORE_WIDE_TABLES` hold no mind's rows and stay
without row security.
"""

from __future__ import annotations

from typing import Final

from waggle_store.dialects.base import T_EMBEDDINGS, T_FRAMES, T_MENTIONS
from waggle_store.dialects.postgres_engine import BOUND_MIND_SETTING
from waggle_store.dialects.postgres_maint import RLS_POLICY
from waggle_store.models.base import table_name
from waggle_store.schema_version import VERSION_TABLE

T_STAGING: Final = table_name("frame_embedding_staging")
T_ENTITIES: Final = table_name("knowledge_entities")

#: Each table whose rows belong to a mind through a parent -> its ``(column, parent table)``
#: pairs; the parent's key is ``id`` and its mind is ``mind_id``.
CHILD_TABLES: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    T_EMBEDDINGS: (("frame_id", T_FRAMES),),
    T_STAGING: (("frame_id", T_FRAMES),),
    T_MENTIONS: (("frame_id", T_FRAMES), ("entity_id", T_ENTITIES)),
}

#: Tables of the store that hold no mind's rows, and why they stay without row security.
STORE_WIDE_TABLES: Final[dict[str, str]] = {
    VERSION_TABLE: "the schema's revision (the runtime role may only read it)",
    table_name("store_meta"): "the store's own settings, one set for every mind",
    table_name("embedding_models"): "the registry of embedding models every mind shares",
    table_name("embedding_usage"): "quota counters per user (open_store's user_id), not per mind",
    table_name("agents"): "the agents registry, keyed by agent name; a row needs no mind",
}

_UNSET: Final = f"coalesce(current_setting('{BOUND_MIND_SETTING}', true), '') = ''"
_BOUND: Final = f"nullif(current_setting('{BOUND_MIND_SETTING}', true), '')::bigint"


def _owned(table: str, column: str, parent: str) -> str:
    return (f"EXISTS (SELECT 1 FROM {parent} p WHERE p.id = {table}.{column} "
            f"AND p.mind_id = {_BOUND})")


def child_conditions(table: str) -> tuple[str, str]:
    """``(USING, WITH CHECK)`` of ``table``'s bound-mind policy (a key of
    :data:`CHILD_TABLES`)."""
    parents = CHILD_TABLES[table]
    using = _owned(table, *parents[0])
    check = " AND ".join(_owned(table, column, parent) for column, parent in parents)
    return f"{_UNSET} OR {using}", f"{_UNSET} OR ({check})"


def child_rls_statements(table: str) -> list[str]:
    """Enable row-level security on ``table`` (a key of :data:`CHILD_TABLES`, a constant name)
    with the bound-mind policy through its parents; not forced, as on the tables with a
    ``mind_id`` (the owner is exempt)."""
    using, check = child_conditions(table)
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {RLS_POLICY} ON {table}",
        f"CREATE POLICY {RLS_POLICY} ON {table} USING ({using}) WITH CHECK ({check})",
    ]


def drop_child_rls_statements(table: str) -> list[str]:
    """Undo :func:`child_rls_statements` on ``table``."""
    return [
        f"DROP POLICY IF EXISTS {RLS_POLICY} ON {table}",
        f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY",
    ]


__all__ = ["CHILD_TABLES", "STORE_WIDE_TABLES", "T_ENTITIES", "T_STAGING", "child_conditions",
           "child_rls_statements", "drop_child_rls_statements"]

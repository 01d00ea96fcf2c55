"""What every knowledge-graph repository shares: input checks, the name key, row → record
conversions, the per-mind graph lock and the specs of the set-at-a-time writes.

"Active" means ``valid_to IS NULL``. Retiring sets ``valid_to`` and never deletes a row, so the
``valid_at`` queries can still answer what was true at a past time (bitemporality).
"""

from __future__ import annotations

import json
import math
import unicodedata
from dataclasses import dataclass
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store import textinput
from waggle_store.errors import InvalidInputError
from waggle_store.models import MindRow
from waggle_store.models.knowledge import EntityRow, RelationRow
from waggle_store.records import Entity, Relation
from waggle_store.repositories.common import MAX_PROPERTIES_BYTES, locks_rows

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_TYPE_LENGTH",
    "EdgeSpec",
    "EntitySpec",
    "check_confidence",
    "check_label",
    "check_limit",
    "check_properties",
    "graph_locked",
    "lock_graph",
    "name_key",
    "note_graph_lock",
    "to_entity",
    "to_relation",
]

MAX_TYPE_LENGTH = 100  # the entity_type / relation_type columns are VARCHAR(100)
MAX_NAME_LENGTH = 500
_LOCK_INFO_KEY = "waggle_store.knowledge.graph_lock"
#: Built once: every write path runs it (building it per call cost as much as executing it).
_MINDS = cast(sa.Table, MindRow.__table__)  # plain columns: no ORM result loading
_LOCK_MIND = (sa.select(_MINDS.c.id).where(_MINDS.c.id == sa.bindparam("mind_id"))
              .with_for_update(key_share=True))


@dataclass(frozen=True)
class EntitySpec:
    """One entity for :meth:`EntityRepository.upsert_many`."""

    entity_type: str
    name: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class EdgeSpec:
    """One edge for :meth:`RelationRepository.ensure_many`."""

    source_id: int
    target_id: int
    relation_type: str
    confidence: float
    properties: dict[str, Any]
    unordered: bool = False


# -- input checks -----------------------------------------------------------------------------


def check_label(value: object, what: str, max_length: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string, got {value!r}")
    if "\x00" in value:
        raise InvalidInputError(f"{what} must not contain NUL characters")
    if len(value) > max_length:
        raise InvalidInputError(
            f"{what} is {len(value)} characters long; the limit is {max_length}")
    return value


def check_properties(value: object) -> dict[str, Any]:
    """Properties are a JSON object; checked here so a bad value fails before any SQL runs."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"properties must be a dict, got {type(value).__name__}")
    if not all(isinstance(k, str) for k in value):
        raise InvalidInputError("property names must be strings")
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"properties must be JSON-serialisable: {exc}") from exc
    if "\\u0000" in encoded:
        raise InvalidInputError("properties contain a NUL character, which JSONB cannot store")
    if len(encoded.encode("utf-8")) > MAX_PROPERTIES_BYTES:
        raise InvalidInputError(
            f"properties are {len(encoded.encode('utf-8'))} bytes as JSON; the maximum is "
            f"{MAX_PROPERTIES_BYTES} (MAX_PROPERTIES_BYTES)"
        )
    return dict(value)


def check_confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"confidence must be a number between 0 and 1, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, got {value!r}")
    return float(value)


def check_limit(limit: object) -> int:
    """The shared rule (:func:`waggle_store.textinput.check_limit`)."""
    return textinput.check_limit(limit)


def name_key(name: str) -> str:
    """The key upserts and name lookups match on: NFKC, whitespace collapsed, case-folded.

    Folding in Python (not SQL ``lower()``) gives full Unicode case-insensitivity on both
    dialects; SQLite's ``lower()`` and ``LIKE`` only fold ASCII.
    """
    return " ".join(unicodedata.normalize("NFKC", name).split()).casefold()


# -- conversions ------------------------------------------------------------------------------


def to_entity(row: EntityRow) -> Entity:
    return Entity(row.id, row.entity_type, row.name, dict(row.properties or {}),
                  row.valid_from, row.valid_to, row.recorded_at)


def to_relation(row: RelationRow) -> Relation:
    return Relation(row.id, row.source_id, row.target_id, row.relation_type, row.confidence,
                    dict(row.properties or {}), row.valid_from, row.valid_to, row.recorded_at)


# -- the graph lock ---------------------------------------------------------------------------


def lock_graph(session: Session, mind_id: int) -> None:
    """Lock the mind row for the rest of the transaction: the first lock of every write path.

    **The lock order** (one for every write path, so no two writers can deadlock): the mind row
    (this function), then session rows (``SessionRepository.row(lock=True)``), then the rows
    being written. cognify, frames.create_i, the graph writes and the embedding-model switch
    all take it in this order.

    It serialises get-or-create writes to one mind's graph and the frame dedup check.

    Without a unique index on (mind, type, name_key), two Postgres transactions could both miss
    an entity and both insert it. Locking the mind row (``FOR NO KEY UPDATE``, so frame inserts
    referencing the mind are not blocked) makes the check-then-insert atomic per mind. SQLite
    needs nothing: its writers are already serialised by ``BEGIN IMMEDIATE`` (the clause would
    not be rendered there, so the statement is not run at all).

    The lock is taken once per (transaction or savepoint): Postgres drops a row lock taken
    inside a savepoint that is rolled back, so a lock taken in a savepoint only counts for it.
    The bookkeeping lives in ``session.info`` (not on a repository), so every repository over
    the same session shares it.
    """
    if graph_locked(session, mind_id):
        return
    session.execute(_LOCK_MIND, {"mind_id": mind_id})
    note_graph_lock(session, mind_id)


def graph_locked(session: Session, mind_id: int) -> bool:
    """Whether :func:`lock_graph` has nothing to do: the mind row is locked in this transaction
    (or in the savepoint it runs in) already, or the database is SQLite, whose writers
    ``BEGIN IMMEDIATE`` serialises (a locking SELECT there only reads a row)."""
    if not locks_rows(session):
        return True
    root = session.get_transaction()
    scope = session.get_nested_transaction() or root
    held: tuple[object, dict[object, set[int]]] | None = session.info.get(_LOCK_INFO_KEY)
    if held is None or held[0] is not root:
        return False
    return mind_id in held[1].get(root, ()) or mind_id in held[1].get(scope, ())


def note_graph_lock(session: Session, mind_id: int) -> None:
    """Record that the mind row is locked in the current transaction or savepoint (by
    :func:`lock_graph`, or by a statement that locks it along with another row:
    ``frame_sql.LOCK_MIND_AND_SESSION``)."""
    root = session.get_transaction()
    scope = session.get_nested_transaction() or root
    held: tuple[object, dict[object, set[int]]] | None = session.info.get(_LOCK_INFO_KEY)
    if held is None or held[0] is not root:
        held = (root, {})
        session.info[_LOCK_INFO_KEY] = held
    held[1].setdefault(scope, set()).add(mind_id)

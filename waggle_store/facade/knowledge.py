"""``mind.knowledge``: the bitemporal knowledge graph of one mind.

Each method is one short transaction (``store.write()`` / ``store.read()``) over the
repositories of :mod:`waggle_store.repositories.knowledge`, and returns frozen records, never
ORM rows.
Writes read the mind's ValidationSchema inside the same transaction, so a schema change and a
write cannot interleave into a write the schema forbids.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.errors import NotFoundError
from waggle_store.records import Entity, EntityVersion, Relation, ValidationSchema
from waggle_store.repositories.exclusive import ExclusiveRepository
from waggle_store.repositories.knowledge import MAX_NODES, KnowledgeRepository
from waggle_store.repositories.knowledge_common import to_entity, to_relation
from waggle_store.repositories.merge import add_alias
from waggle_store.repositories.versions import VersionRepository
from waggle_store.textinput import check_id
from waggle_store.timeutil import ensure_utc, optional_bound, optional_utc


def _check_id(value: object, what: str) -> int:
    return check_id(value, name=what)


class KnowledgeAPI:
    """Entities and typed relations with validity windows; retiring never deletes."""

    def __init__(self, mind: MindContext) -> None:
        self._mind = mind
        self._store = mind.store

    def _repo(self, session: Session) -> KnowledgeRepository:
        return KnowledgeRepository(session, self._mind.id)

    # -- entities -----------------------------------------------------------------------------

    def create_entity(self, entity_type: str, name: str, properties: dict[str, Any] | None = None,
                      *, valid_from: datetime | str | None = None,
                      valid_to: datetime | str | None = None) -> Entity:
        """Creates the entity; an active entity of the same type and resolved name (case,
        spacing, punctuation, aliases) is returned instead of a second one.

        ``valid_from`` (default now) is when it became true in the world; ``valid_to`` (default
        open) lets a caller record a fact that is already over, e.g. a past employer.
        """
        start = optional_bound(valid_from, name="valid_from")
        end = optional_bound(valid_to, name="valid_to")
        with self._store.write() as session:
            kg = self._repo(session)
            row = kg.entities.create(entity_type, name, properties, valid_from=start, valid_to=end,
                                     schema=kg.schema.get())
            return to_entity(row)

    def get_entity(self, entity_id: int) -> Entity | None:
        """The entity, retired or not; None when it does not exist in this mind."""
        with self._store.read() as session:
            row = self._repo(session).entities.get(_check_id(entity_id, "entity_id"))
            return None if row is None else to_entity(row)

    def update_entity(self, entity_id: int, *, name: str | None = None,
                      properties: dict[str, Any] | None = None,
                      entity_type: str | None = None) -> Entity:
        """Rename, retype and/or replace the properties of an active entity.

        Writes a new version: the state it replaces stays readable (:meth:`history`,
        :meth:`entities_as_of` with ``recorded=``)."""
        with self._store.write() as session:
            kg = self._repo(session)
            row = kg.entities.update(_check_id(entity_id, "entity_id"), name=name,
                                     properties=properties, entity_type=entity_type,
                                     schema=kg.schema.get())
            return to_entity(row)

    def history(self, entity_id: int) -> list[EntityVersion]:
        """Every recorded state of the entity, oldest first (the last is the current one);
        NotFoundError when it does not exist in this mind."""
        with self._store.read() as session:
            kg = self._require(session, entity_id, "entity_id")
            return VersionRepository(session, kg.mind_id).entity_history(entity_id)

    def entities_as_of(self, *, recorded: datetime | str | None = None,
                       valid: datetime | str | None = None, limit: int = 500) -> list[Entity]:
        """Entities as the store held them at ``recorded`` (None: now) that were true in the
        world at ``valid`` (None: at any time), in name order: one statement."""
        rec, val = optional_utc(recorded, name="recorded"), optional_utc(valid, name="valid")
        with self._store.read() as session:
            return VersionRepository(session, self._mind.id).entities_as_of(
                recorded=rec, valid=val, limit=limit)

    def relations_as_of(self, *, recorded: datetime | str | None = None,
                        valid: datetime | str | None = None, limit: int = 500) -> list[Relation]:
        """Relations as the store held them at ``recorded`` (None: now) that were true in the
        world at ``valid`` (None: at any time), in id order: one statement."""
        rec, val = optional_utc(recorded, name="recorded"), optional_utc(valid, name="valid")
        with self._store.read() as session:
            return VersionRepository(session, self._mind.id).relations_as_of(
                recorded=rec, valid=val, limit=limit)

    def entities(self, *, entity_type: str | None = None, limit: int = 100,
                 offset: int = 0) -> list[Entity]:
        """Active entities (of one type, if given) in name order, a page at a time."""
        with self._store.read() as session:
            rows = self._repo(session).entities.page(entity_type, limit, offset)
            return [to_entity(r) for r in rows]

    def search_entities(self, query: str, limit: int = 100) -> list[Entity]:
        with self._store.read() as session:
            return [to_entity(r) for r in self._repo(session).entities.search(query, limit)]

    def entities_by_type(self, entity_type: str, limit: int = 500) -> list[Entity]:
        with self._store.read() as session:
            rows = self._repo(session).entities.by_type(entity_type, limit)
            return [to_entity(r) for r in rows]

    def entity_type_counts(self) -> dict[str, int]:
        with self._store.read() as session:
            return self._repo(session).entities.type_counts()

    def entity_count(self) -> int:
        """Active entities (Waggle's getEntityCount)."""
        return sum(self.entity_type_counts().values())

    def entities_valid_at(self, when: datetime | str, limit: int = 500) -> list[Entity]:
        """Entities true at ``when`` (valid_from ≤ when < valid_to), retired ones included."""
        at = ensure_utc(when, name="when")
        with self._store.read() as session:
            return [to_entity(r) for r in self._repo(session).entities.valid_at(at, limit)]

    def retire_entity(self, entity_id: int) -> None:
        """End the entity's validity now, and that of its active relations.

        Retiring twice is a no-op."""
        with self._store.write() as session:
            self._repo(session).entities.retire(_check_id(entity_id, "entity_id"))

    # -- relations ----------------------------------------------------------------------------

    def create_relation(self, source_id: int, target_id: int, relation_type: str, *,
                        confidence: float = 1.0,
                        properties: dict[str, Any] | None = None) -> Relation:
        """Both ends must be active entities of this mind; an active edge of this type between
        them already is returned instead of a second one."""
        with self._store.write() as session:
            kg = self._repo(session)
            row = kg.relations.create(_check_id(source_id, "source_id"),
                                      _check_id(target_id, "target_id"), relation_type,
                                      confidence=confidence, properties=properties,
                                      schema=kg.schema.get())
            return to_relation(row)

    def get_relation(self, relation_id: int) -> Relation | None:
        with self._store.read() as session:
            row = self._repo(session).relations.get(_check_id(relation_id, "relation_id"))
            return None if row is None else to_relation(row)

    def relations_from(self, entity_id: int, relation_type: str | None = None) -> list[Relation]:
        return self._relations(entity_id, relation_type, "from")

    def relations_to(self, entity_id: int, relation_type: str | None = None) -> list[Relation]:
        return self._relations(entity_id, relation_type, "to")

    def _relations(self, entity_id: int, relation_type: str | None,
                   direction: str) -> list[Relation]:
        with self._store.read() as session:
            rows = self._repo(session).relations.of_entity(_check_id(entity_id, "entity_id"),
                                                           relation_type, direction=direction)
            return [to_relation(r) for r in rows]

    def relations_valid_at(self, when: datetime | str, limit: int = 500) -> list[Relation]:
        at = ensure_utc(when, name="when")
        with self._store.read() as session:
            rows = self._repo(session).relations.valid_at(at, limit)
            return [to_relation(r) for r in rows]

    def retire_relation(self, relation_id: int) -> None:
        with self._store.write() as session:
            self._repo(session).relations.retire(_check_id(relation_id, "relation_id"))

    # -- names --------------------------------------------------------------------------------

    def add_alias(self, alias: str, canonical_name: str) -> None:
        """Make ``alias`` name the same entity as ``canonical_name`` ("pg" -> "PostgreSQL").

        Resolution folds case, spacing and punctuation first; built-in alias groups cover
        common technology names. Existing entities are re-keyed: an entity named by the alias
        and one named by the canonical name (of the same type) become one, the older keeping
        its id and receiving the other's relations and mentions; the other is retired."""
        with self._store.write() as session:
            add_alias(session, self._mind.id, alias, canonical_name)

    def resolve(self, name: str) -> Entity | None:
        """The active entity ``name`` stands for (through case, spacing, punctuation and
        aliases), or None; the oldest when entities of several types share the name."""
        with self._store.read() as session:
            row = self._repo(session).entities.resolve(name)
            return None if row is None else to_entity(row)

    def set_exclusive(self, relation_type: str, exclusive: bool = True) -> None:
        """Make ``relation_type`` exclusive (or not) in this mind: a new relation of an
        exclusive type from a source ends the source's previous one of that type (its valid_to
        becomes the new one's valid_from; history keeps it). ``works_at``, ``located_in`` and
        ``reports_to`` are exclusive by default. Existing relations are not changed."""
        with self._store.write() as session:
            ExclusiveRepository(session, self._mind.id).set(relation_type, exclusive)

    # -- walks --------------------------------------------------------------------------------

    def traverse(self, start_id: int, relation_type: str | None = None,
                 max_depth: int = 3, *, max_nodes: int = MAX_NODES) -> list[Entity]:
        """Entities reachable along outgoing edges (of one type, if given), in BFS order.

        ``max_depth`` is at most 20; the walk stops after ``max_nodes`` visits (a node reached
        at several depths counts at each), so a dense graph returns the nearest entities."""
        with self._store.read() as session:
            kg = self._require(session, start_id)
            rows = kg.graph.traverse(start_id, relation_type, max_depth, max_nodes)
            return [to_entity(row) for row, _ in rows]

    def bfs_distances(self, start_id: int, max_depth: int = 3, *,
                      max_nodes: int = MAX_NODES) -> dict[int, int]:
        """Entity id → hops along outgoing active edges of any type; the start is not included.

        Bounded as :meth:`traverse` is."""
        with self._store.read() as session:
            kg = self._require(session, start_id)
            hops = kg.graph.distances([start_id], max_depth, undirected=False,
                                      max_nodes=max_nodes)
            hops.pop(start_id, None)
            return hops

    def _require(self, session: Session, entity_id: int,
                 what: str = "start_id") -> KnowledgeRepository:
        """The repositories, once the entity is known to exist in this mind."""
        kg = self._repo(session)
        if kg.entities.get(_check_id(entity_id, what)) is None:
            raise NotFoundError(f"entity {entity_id} does not exist in this mind")
        return kg

    # -- schema -------------------------------------------------------------------------------

    def set_validation_schema(self, schema: ValidationSchema | None) -> None:
        """Enforce ``schema`` on later writes (None removes it).

        Existing rows are not re-checked."""
        with self._store.write() as session:
            self._repo(session).schema.set(schema)

    def validation_schema(self) -> ValidationSchema | None:
        with self._store.read() as session:
            return self._repo(session).schema.get()

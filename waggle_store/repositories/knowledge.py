"""The knowledge graph of one mind, as one object over the caller's unit of work.

The graph is several table families (entities, relations, mentions, the validation schema kept
in ``minds.settings``), each with its own repository of the same shape as the others:
``XRepository(session, mind_id)``, taking the caller's Session and never committing.
:class:`KnowledgeRepository` builds them all over one session, so a pipeline that writes a
frame's entities, mentions and edges in one transaction names the mind once.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from waggle_store.repositories.entities import EntityRepository
from waggle_store.repositories.graph import MAX_DEPTH, MAX_NODES, GraphRepository
from waggle_store.repositories.knowledge_common import EdgeSpec, EntitySpec, lock_graph
from waggle_store.repositories.knowledge_schema import ValidationSchemaRepository
from waggle_store.repositories.mentions import MentionRepository
from waggle_store.repositories.relations import RelationRepository

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "EdgeSpec",
    "EntityRepository",
    "EntitySpec",
    "GraphRepository",
    "KnowledgeRepository",
    "MentionRepository",
    "RelationRepository",
    "ValidationSchemaRepository",
]


class KnowledgeRepository:
    """``entities``, ``relations``, ``graph`` (walks), ``mentions`` and ``schema`` of one mind."""

    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id
        self.entities = EntityRepository(session, mind_id)
        self.relations = RelationRepository(session, mind_id)
        self.graph = GraphRepository(session, mind_id)
        self.mentions = MentionRepository(session, mind_id)
        self.schema = ValidationSchemaRepository(session, mind_id)

    def lock(self) -> None:
        """Take the per-mind graph lock now, for the rest of the transaction.

        The get-or-create writes take it themselves; a caller that opens savepoints per item
        takes it once at the root first, so the savepoints reuse it (a row lock taken inside a
        savepoint that rolls back is lost on Postgres).
        """
        lock_graph(self.session, self.mind_id)

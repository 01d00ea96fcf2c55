"""Helpers shared by the knowledge tests: the repositories over a unit of work, and a statement
counter on a store's engine."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.orm import Session

import waggle_store as ws
from waggle_store.repositories.knowledge import KnowledgeRepository


def kg(session: Session, mind_id: int) -> KnowledgeRepository:
    """The mind's knowledge repositories over the test's unit of work."""
    return KnowledgeRepository(session, mind_id)


@contextmanager
def count_statements(store: ws.Store) -> Iterator[list[str]]:
    """The SQL statements the store's engine sends while the block runs, in order."""
    seen: list[str] = []

    def before(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", before)

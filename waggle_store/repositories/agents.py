"""Agents repository: each agent's manifest and state, its name unique case-insensitively.

Not scoped to a mind: an agent's memory is the mind of the same name, which this repository
neither creates nor needs. Names are matched through ``name_key`` (the name case-folded, under a
unique constraint), so "Alice" and "alice" are one agent and concurrent saves of either spelling
meet on one row; the spelling the agent was first saved with is kept.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models import AgentRow, MindRow
from waggle_store.records import AgentRecord
from waggle_store.repositories.common import check_json, get_or_create, rowcount
from waggle_store.repositories.minds import check_mind_name
from waggle_store.timeutil import utcnow

__all__ = ["AgentRepository", "check_document", "name_key", "to_agent"]


def name_key(name: str) -> str:
    """The key agent names are matched on: the name case-folded (full Unicode folding)."""
    return check_mind_name(name).casefold()


def check_document(value: object, *, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInputError(f"{name} must be a dict, got {type(value).__name__}")
    return dict(check_json(value, name=name))


def to_agent(row: AgentRow) -> AgentRecord:
    return AgentRecord(row.name, dict(row.manifest or {}), dict(row.state or {}), row.name,
                       row.created_at, row.updated_at)


class AgentRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def row(self, name: str, *, lock: bool = False) -> AgentRow | None:
        query = sa.select(AgentRow).where(AgentRow.name_key == name_key(name))
        if lock:
            query = query.with_for_update().execution_options(populate_existing=True)
        return self.session.scalar(query)

    def require(self, name: str, *, lock: bool = False) -> AgentRow:
        found = self.row(name, lock=lock)
        if found is None:
            raise NotFoundError(f"no agent named {name!r}")
        return found

    def list(self) -> list[AgentRecord]:
        return [to_agent(r) for r in self.session.scalars(
            sa.select(AgentRow).order_by(AgentRow.name_key, AgentRow.id))]

    def save(self, name: str, manifest: dict[str, Any], state: dict[str, Any] | None, *,
             created_at: Any = None, updated_at: Any = None) -> AgentRecord:
        """Insert the agent, or update its manifest (and state, when given) under the name it
        was first saved with."""
        key = name_key(name)
        manifest = check_document(manifest, name="manifest")
        state = None if state is None else check_document(state, name="state")
        now = utcnow()
        row, created = get_or_create(
            self.session, lambda: self.row(name),
            lambda: AgentRow(name=name, name_key=key, manifest=manifest, state=state or {},
                             created_at=created_at or now, updated_at=updated_at or now))
        if not created:
            row = self.require(name, lock=True)
            row.manifest = manifest
            if state is not None:
                row.state = state
            row.updated_at = updated_at or now
        self.session.flush()
        return to_agent(row)

    def set_state(self, name: str, state: dict[str, Any]) -> AgentRecord:
        checked = check_document(state, name="state")
        row = self.require(name, lock=True)
        row.state = checked
        row.updated_at = utcnow()
        self.session.flush()
        return to_agent(row)

    def delete(self, name: str, *, drop_mind: bool) -> None:
        """Delete the agent; ``drop_mind`` also deletes its mind (with every row of it) when
        there is one."""
        row = self.require(name)
        mind_name = row.name
        self.session.delete(row)
        self.session.flush()
        if drop_mind:
            rowcount(self.session.execute(sa.delete(MindRow).where(MindRow.name == mind_name)))

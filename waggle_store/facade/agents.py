"""``store.agents``: the agents registry (an agent's manifest and state).

An agent's memory is the mind of the same name (``store.mind(record.mind)``). Saving an agent
creates no mind (``store.mind(name)`` does, on first use); deleting one keeps its mind unless
``drop_mind=True``. Names are unique case-insensitively and keep the spelling of the first save:
``save("ALICE", ...)`` after ``save("alice", ...)`` updates agent "alice".
"""

from __future__ import annotations

from typing import Any

from waggle_store.context import StoreContext
from waggle_store.errors import InvalidInputError
from waggle_store.records import AgentRecord
from waggle_store.repositories.agents import AgentRepository, to_agent


class AgentsAPI:
    def __init__(self, store: StoreContext) -> None:
        self.store = store

    def save(self, name: str, manifest: dict[str, Any], *,
             state: dict[str, Any] | None = None) -> AgentRecord:
        """Insert or update an agent; ``state=None`` keeps an existing agent's state ({} for a
        new one)."""
        with self.store.write() as s:
            return AgentRepository(s).save(name, manifest, state)

    def get(self, name: str) -> AgentRecord | None:
        with self.store.read() as s:
            row = AgentRepository(s).row(name)
            return None if row is None else to_agent(row)

    def list(self) -> list[AgentRecord]:
        """Every agent, by name (case-insensitively)."""
        with self.store.read() as s:
            return AgentRepository(s).list()

    def set_state(self, name: str, state: dict[str, Any]) -> AgentRecord:
        with self.store.write() as s:
            return AgentRepository(s).set_state(name, state)

    def delete(self, name: str, *, drop_mind: bool = False) -> None:
        """Delete the agent (NotFoundError if there is none); ``drop_mind=True`` also drops its
        mind and every row of it, in the same transaction."""
        if not isinstance(drop_mind, bool):
            raise InvalidInputError("drop_mind must be True or False")
        with self.store.write() as s:
            AgentRepository(s).delete(name, drop_mind=drop_mind)

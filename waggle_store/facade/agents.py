"""``store.agents``: the agents registry (an agent's manifest and state).

An agent's memory is the mind of the same name (``store.mind(record.mind)``). Saving an agent
creates no mind (``store.mind(name)`` does, on first use); deleting one keeps its mind unless
``drop_mind=True``. Names are unique case-insensitively and keep the spelling of the first save:
``save("ALICE", ...)`` after ``save("alice", ...)`` updates agent "alice".

A store bound to one mind (``open_store(..., bound_mind=NAME)``) knows one agent: the one whose
mind is its own (named NAME, spelled the same). Any other is missing to it: ``get`` returns None,
``list`` leaves it out, ``save``, ``set_state`` and ``delete`` raise ``NotFoundError`` and change
nothing, so one tenant's store can neither read another's agent state nor drop its mind.
"""

from __future__ import annotations

from typing import Any

from waggle_store.context import StoreContext
from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.records import AgentRecord
from waggle_store.repositories.agents import AgentRepository, to_agent


class AgentsAPI:
    """``bound``: the name of the one mind a bound store sees (None: every agent)."""

    def __init__(self, store: StoreContext, bound: str | None = None) -> None:
        self.store = store
        self.bound = bound

    def _visible(self, repo: AgentRepository, name: str) -> bool:
        """Whether the agent ``name`` (stored or not) is this store's to see: always for an
        unbound store; for a bound one, only the agent of its own mind."""
        if self.bound is None:
            return True
        if name != self.bound:
            return False
        row = repo.row(name)  # names match case-insensitively: "Alice" is another mind's agent
        return row is None or row.name == self.bound

    def _require_visible(self, repo: AgentRepository, name: str) -> None:
        if not self._visible(repo, name):
            raise NotFoundError(f"no agent named {name!r} (this store is bound to one mind)")

    def save(self, name: str, manifest: dict[str, Any], *,
             state: dict[str, Any] | None = None) -> AgentRecord:
        """Insert or update an agent; ``state=None`` keeps an existing agent's state ({} for a
        new one)."""
        with self.store.write() as s:
            repo = AgentRepository(s)
            self._require_visible(repo, name)
            return repo.save(name, manifest, state)

    def get(self, name: str) -> AgentRecord | None:
        with self.store.read() as s:
            repo = AgentRepository(s)
            row = repo.row(name) if self._visible(repo, name) else None
            return None if row is None else to_agent(row)

    def list(self) -> list[AgentRecord]:
        """Every agent, by name (case-insensitively); a bound store's own agent only."""
        with self.store.read() as s:
            agents = AgentRepository(s).list()
        return agents if self.bound is None else [a for a in agents if a.name == self.bound]

    def set_state(self, name: str, state: dict[str, Any]) -> AgentRecord:
        with self.store.write() as s:
            repo = AgentRepository(s)
            self._require_visible(repo, name)
            return repo.set_state(name, state)

    def delete(self, name: str, *, drop_mind: bool = False) -> None:
        """Delete the agent (NotFoundError if there is none); ``drop_mind=True`` also drops its
        mind and every row of it, in the same transaction."""
        if not isinstance(drop_mind, bool):
            raise InvalidInputError("drop_mind must be True or False")
        with self.store.write() as s:
            repo = AgentRepository(s)
            self._require_visible(repo, name)
            repo.delete(name, drop_mind=drop_mind)

"""``mind.identity``: layer 0, who the agent is."""

from __future__ import annotations

from typing import Any

from waggle_store.context import MindContext
from waggle_store.records import Identity
from waggle_store.repositories.identity import IdentityRepository


class IdentityAPI:
    def __init__(self, mind: MindContext) -> None:
        self.mind = mind

    def get(self) -> Identity | None:
        with self.mind.read() as s:
            return IdentityRepository(s, self.mind.id).get()

    def set(self, *, name: str, role: str = "", department: str = "", personality: str = "",
            capabilities: str = "", system_prompt: str = "") -> Identity:
        """Create the identity or replace all of its fields (created_at is kept)."""
        with self.mind.write() as s:
            return IdentityRepository(s, self.mind.id).set(
                name=name, role=role, department=department, personality=personality,
                capabilities=capabilities, system_prompt=system_prompt)

    def update(self, **fields: Any) -> Identity:
        """Change some fields; an unknown field is an InvalidInputError, no identity a
        NotFoundError."""
        with self.mind.write() as s:
            return IdentityRepository(s, self.mind.id).update(**fields)

    def to_context(self) -> str:
        """The identity as prompt lines (``Name: …``), empty fields left out; "" if none."""
        identity = self.get()
        if identity is None:
            return ""
        labels = (
            ("Name", identity.name),
            ("Role", identity.role),
            ("Department", identity.department),
            ("Personality", identity.personality),
            ("Capabilities", identity.capabilities),
            ("System Prompt", identity.system_prompt),
        )
        return "\n".join(f"{label}: {value}" for label, value in labels if value or label == "Name")

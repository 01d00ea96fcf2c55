"""The validation schema of a mind's knowledge graph: where it is stored and how it is enforced.

The schema lives in ``minds.settings`` under :data:`SCHEMA_SETTINGS_KEY`, so it travels with the
mind (export, drop) and needs no table of its own. The checks are pure functions, not
repository methods: the caller loads the schema once per transaction and the entity and
relation repositories check each write against it, which keeps a bulk pipeline from re-reading
it for every entity.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError, ValidationError
from waggle_store.models import MindRow
from waggle_store.records import ValidationSchema

__all__ = [
    "SCHEMA_SETTINGS_KEY",
    "ValidationSchemaRepository",
    "check_entity",
    "check_relation",
]

SCHEMA_SETTINGS_KEY = "knowledge.validation_schema"


class ValidationSchemaRepository:
    """The schema of one mind, read and written inside the caller's unit of work."""

    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def get(self) -> ValidationSchema | None:
        settings = self.session.scalar(
            sa.select(MindRow.settings).where(MindRow.id == self.mind_id)) or {}
        raw = settings.get(SCHEMA_SETTINGS_KEY)
        if raw is None:
            return None
        allowed = raw.get("allowed_relations")
        return ValidationSchema(
            required_properties={k: list(v) for k, v in raw.get("required_properties", {}).items()},
            allowed_relations=None if allowed is None else [(s, r, t) for s, r, t in allowed],
        )

    def set(self, schema: ValidationSchema | None) -> None:
        """Store the schema in ``minds.settings`` (read-modify-write under a row lock)."""
        payload = None if schema is None else _schema_payload(schema)
        row = self.session.scalar(
            sa.select(MindRow).where(MindRow.id == self.mind_id).with_for_update())
        if row is None:
            raise NotFoundError(f"mind {self.mind_id} does not exist")
        settings = {k: v for k, v in (row.settings or {}).items() if k != SCHEMA_SETTINGS_KEY}
        if payload is not None:
            settings[SCHEMA_SETTINGS_KEY] = payload
        row.settings = settings  # a new dict: the JSON column does not track in-place mutation


def _schema_payload(schema: object) -> dict[str, Any]:
    if not isinstance(schema, ValidationSchema):
        raise InvalidInputError(f"expected a ValidationSchema or None, got {type(schema).__name__}")
    required = schema.required_properties
    if not isinstance(required, dict) or not all(
        isinstance(t, str) and isinstance(keys, (list, tuple))
        and all(isinstance(k, str) for k in keys)
        for t, keys in required.items()
    ):
        raise InvalidInputError(
            "required_properties must map entity types to lists of property names")
    allowed = schema.allowed_relations
    if allowed is not None and not (
        isinstance(allowed, (list, tuple))
        and all(isinstance(t, (list, tuple)) and len(t) == 3 and all(isinstance(p, str) for p in t)
                for t in allowed)
    ):
        raise InvalidInputError(
            "allowed_relations must be None or a list of (source_type, relation_type, target_type)"
        )
    return {
        "required_properties": {t: list(keys) for t, keys in required.items()},
        "allowed_relations": None if allowed is None else [list(t) for t in allowed],
    }


def check_entity(schema: ValidationSchema | None, entity_type: str,
                 properties: dict[str, Any]) -> None:
    """Types without an entry in ``required_properties`` pass, as in Waggle."""
    if schema is None:
        return
    for key in schema.required_properties.get(entity_type, []):
        if key not in properties:
            raise ValidationError(
                f"Validation failed: required property '{key}' missing for type '{entity_type}'"
            )


def check_relation(schema: ValidationSchema | None, source_type: str, relation_type: str,
                   target_type: str) -> None:
    """A listed schema is a closed world: only listed triples pass; ``"*"`` matches any part."""
    if schema is None or schema.allowed_relations is None:
        return
    wanted = (source_type, relation_type, target_type)
    for triple in schema.allowed_relations:
        if all(p == "*" or p == w for p, w in zip(triple, wanted, strict=True)):
            return
    raise ValidationError(
        f"Validation failed: relation '{relation_type}' not allowed from type '{source_type}' "
        f"to type '{target_type}' (allowed: {[tuple(t) for t in schema.allowed_relations]})"
    )

"""Layer 0 repository: the one identity row of a mind."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models import IdentityRow
from waggle_store.records import Identity
from waggle_store.repositories.common import check_text, get_or_create
from waggle_store.timeutil import utcnow

# The only columns update() may set: a key that is not in this tuple is refused, so caller keys
# never reach the SQL.
IDENTITY_FIELDS = ("name", "role", "department", "personality", "capabilities", "system_prompt")


def to_identity(row: IdentityRow) -> Identity:
    return Identity(row.name, row.role, row.department, row.personality, row.capabilities,
                    row.system_prompt, row.created_at, row.updated_at)


def _reject_unknown(keys: Any) -> None:
    unknown = sorted(set(keys) - set(IDENTITY_FIELDS))
    if unknown:
        raise InvalidInputError(
            f"unknown identity field(s) {', '.join(unknown)}; allowed: {', '.join(IDENTITY_FIELDS)}"
        )


def _check_fields(fields: dict[str, Any]) -> dict[str, str]:
    _reject_unknown(fields)
    return {k: check_text(v, name=f"identity {k}", allow_empty=k != "name")
            for k, v in fields.items()}


class IdentityRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def _row(self) -> IdentityRow | None:
        return self.session.scalar(select(IdentityRow).where(IdentityRow.mind_id == self.mind_id))

    def get(self) -> Identity | None:
        row = self._row()
        return None if row is None else to_identity(row)

    def set(self, **fields: str) -> Identity:
        """Create the identity, or replace every field of the existing one (created_at stays)."""
        values = dict.fromkeys(IDENTITY_FIELDS, "") | _check_fields(fields)
        now = utcnow()
        row, created = get_or_create(
            self.session, self._row,
            lambda: IdentityRow(mind_id=self.mind_id, created_at=now, updated_at=now, **values))
        if created:
            return to_identity(row)
        # It existed, or a concurrent set() created it first (Postgres): replace it like any other.
        for key, value in values.items():
            setattr(row, key, value)
        row.updated_at = utcnow()
        self.session.flush()
        return to_identity(row)

    def update(self, **fields: Any) -> Identity:
        """Change the given fields; None means "leave as is" and no field at all is a no-op."""
        _reject_unknown(fields)  # before anything else, whatever the values
        checked = _check_fields({k: v for k, v in fields.items() if v is not None})
        row = self._row()
        if row is None:
            raise NotFoundError("no identity configured for this mind; call identity.set() first")
        if not checked:
            return to_identity(row)
        for key, value in checked.items():
            setattr(row, key, value)
        row.updated_at = utcnow()
        self.session.flush()
        return to_identity(row)

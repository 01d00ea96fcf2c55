"""Per-mind key/value store (the OpenFang substrate's KV), values are JSON."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, delete, select
from sqlalchemy.orm import Session

from waggle_store.models import KVRow
from waggle_store.repositories.common import (
    MAX_KEY_LENGTH,
    check_json,
    check_name,
    get_or_create,
    rowcount,
)
from waggle_store.timeutil import utcnow


def _stored(value: Any) -> Any:
    # A Python None must be stored as JSON null, not SQL NULL (the column is NOT NULL, and
    # get() must tell "stored None" from "missing").
    return JSON.NULL if value is None else value


class KVRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def _row(self, key: str) -> KVRow | None:
        return self.session.scalar(
            select(KVRow).where(KVRow.mind_id == self.mind_id, KVRow.key == key))

    def get(self, key: str, default: Any = None) -> Any:
        check_name(key, name="key", max_length=MAX_KEY_LENGTH)
        row = self._row(key)
        return default if row is None else row.value

    def set(self, key: str, value: Any) -> None:
        check_name(key, name="key", max_length=MAX_KEY_LENGTH)
        value = check_json(value, name=f"value of {key!r}")
        row, created = get_or_create(
            self.session, lambda: self._row(key),
            lambda: KVRow(mind_id=self.mind_id, key=key, value=_stored(value)))
        if created:
            return
        # It existed, or a concurrent set() inserted it first: overwrite either way.
        row.value = _stored(value)
        row.updated_at = utcnow()
        self.session.flush()

    def delete(self, key: str) -> bool:
        check_name(key, name="key", max_length=MAX_KEY_LENGTH)
        result = self.session.execute(
            delete(KVRow).where(KVRow.mind_id == self.mind_id, KVRow.key == key))
        return rowcount(result) > 0

    def items(self) -> list[tuple[str, Any]]:
        rows = self.session.execute(
            select(KVRow.key, KVRow.value).where(KVRow.mind_id == self.mind_id).order_by(KVRow.key))
        return [(k, v) for k, v in rows]

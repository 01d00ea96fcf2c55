"""Layer 1 repository: short-term working state with optional expiry."""

from __future__ import annotations

from datetime import datetime
from types import EllipsisType
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models import AWARENESS_CATEGORIES, AwarenessRow
from waggle_store.records import AwarenessItem
from waggle_store.repositories.common import (
    check_choice,
    check_id,
    check_int,
    check_json,
    check_text,
    rowcount,
)
from waggle_store.textinput import check_limit
from waggle_store.timeutil import optional_utc, utcnow

MAX_ACTIVE_ITEMS = 10
"""active() returns at most this many items unless told otherwise; add() never
evicts."""


def to_item(row: AwarenessRow) -> AwarenessItem:
    return AwarenessItem(row.id, row.category, row.content, row.priority, dict(row.meta or {}),
                         row.created_at, row.expires_at)


class AwarenessRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def add(self, category: str, content: str, *, priority: int = 0,
            metadata: dict[str, Any] | None = None,
            expires_at: datetime | str | None = None) -> AwarenessItem:
        check_choice(category, AWARENESS_CATEGORIES, name="awareness category")
        check_text(content, name="awareness content")
        check_int(priority, name="priority", minimum=-(2**31), maximum=2**31 - 1)
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict):
            raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
        meta = check_json(metadata, name="metadata")
        expires = optional_utc(expires_at, name="expires_at")
        row = AwarenessRow(mind_id=self.mind_id, category=category, content=content,
                           priority=priority, meta=meta, expires_at=expires)
        self.session.add(row)
        self.session.flush()
        return to_item(row)

    def active(self, category: str | None = None, *,
               now: datetime | None = None, limit: int = MAX_ACTIVE_ITEMS) -> list[AwarenessItem]:
        """Unexpired items, priority first, newest first among equals, at most ``limit``.

        Expiry compares times in SQL against a bound aware datetime
        (never as strings), so an item expiring a second from now is still shown.
        """
        moment = now or utcnow()
        query = select(AwarenessRow).where(
            AwarenessRow.mind_id == self.mind_id,
            or_(AwarenessRow.expires_at.is_(None), AwarenessRow.expires_at > moment),
        )
        if category is not None:
            check_choice(category, AWARENESS_CATEGORIES, name="awareness category")
            query = query.where(AwarenessRow.category == category)
        query = (query.order_by(AwarenessRow.priority.desc(), AwarenessRow.id.desc())
                 .limit(check_limit(limit)))
        return [to_item(r) for r in self.session.scalars(query)]

    def by_status(self, status: str, *, now: datetime | None = None) -> list[AwarenessItem]:
        """Unexpired items whose ``metadata["status"]`` is ``status``, priority first (newest
        first among equals), all of them."""
        check_text(status, name="status")
        moment = now or utcnow()
        query = select(AwarenessRow).where(
            AwarenessRow.mind_id == self.mind_id,
            or_(AwarenessRow.expires_at.is_(None), AwarenessRow.expires_at > moment),
            AwarenessRow.meta["status"].as_string() == status,
        ).order_by(AwarenessRow.priority.desc(), AwarenessRow.id.desc())
        return [to_item(r) for r in self.session.scalars(query)]

    def _row(self, item_id: int) -> AwarenessRow:
        check_id(item_id, name="item_id")
        row = self.session.scalar(select(AwarenessRow).where(
            AwarenessRow.mind_id == self.mind_id, AwarenessRow.id == item_id))
        if row is None:
            raise NotFoundError(f"awareness item {item_id} not found in this mind")
        return row

    def update(self, item_id: int, *, content: str | None = None, priority: int | None = None,
               expires_at: datetime | str | EllipsisType | None = ...,
               category: str | None = None) -> AwarenessItem:
        """Change the given fields; ``expires_at=None`` clears the expiry, ``...`` keeps it.
        Everything is checked before the row changes."""
        row = self._row(item_id)
        if content is not None:
            check_text(content, name="awareness content")
        if priority is not None:
            check_int(priority, name="priority", minimum=-(2**31), maximum=2**31 - 1)
        if category is not None:
            check_choice(category, AWARENESS_CATEGORIES, name="awareness category")
        expires = (row.expires_at if isinstance(expires_at, EllipsisType)
                   else optional_utc(expires_at, name="expires_at"))
        if content is not None:
            row.content = content
        if priority is not None:
            row.priority = priority
        if category is not None:
            row.category = category
        row.expires_at = expires
        self.session.flush()
        return to_item(row)

    def update_metadata(self, item_id: int, metadata: dict[str, Any]) -> AwarenessItem:
        """Merge ``metadata`` into the item's (shallow: its keys replace the item's)."""
        row = self._row(item_id)
        if not isinstance(metadata, dict):
            raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
        row.meta = check_json({**(row.meta or {}), **metadata}, name="metadata")
        self.session.flush()
        return to_item(row)

    def get(self, item_id: int) -> AwarenessItem | None:
        check_id(item_id, name="item_id")
        row = self.session.scalar(select(AwarenessRow).where(
            AwarenessRow.mind_id == self.mind_id, AwarenessRow.id == item_id))
        return None if row is None else to_item(row)

    def remove(self, item_id: int) -> None:
        check_id(item_id, name="item_id")
        result = self.session.execute(delete(AwarenessRow).where(
            AwarenessRow.mind_id == self.mind_id, AwarenessRow.id == item_id))
        if rowcount(result) == 0:
            raise NotFoundError(f"awareness item {item_id} not found in this mind")

    def clear(self, category: str | None = None) -> int:
        query = delete(AwarenessRow).where(AwarenessRow.mind_id == self.mind_id)
        if category is not None:
            check_choice(category, AWARENESS_CATEGORIES, name="awareness category")
            query = query.where(AwarenessRow.category == category)
        result = self.session.execute(query)
        return rowcount(result)

"""Memories whose extraction failed: stored, with their entities still to be found.

A row per frame; ``reconcile()`` and ``mind.recognify`` extract it again and delete the row.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.models.knowledge import PendingExtractionRow
from waggle_store.timeutil import utcnow

__all__ = ["PendingExtractionRepository"]

_MAX_ERROR = 2000


class PendingExtractionRepository:
    def __init__(self, session: Session, mind_id: int | None) -> None:
        self.session = session
        self.mind_id = mind_id

    def mark(self, frame_id: int, error: str) -> None:
        """Record (or count again) a failed extraction of ``frame_id``."""
        assert self.mind_id is not None
        row = self.session.get(PendingExtractionRow, frame_id)
        if row is None:
            self.session.add(PendingExtractionRow(frame_id=frame_id, mind_id=self.mind_id,
                                                  error=error[:_MAX_ERROR], attempts=1,
                                                  updated_at=utcnow()))
        else:
            row.error, row.attempts, row.updated_at = error[:_MAX_ERROR], row.attempts + 1, utcnow()
        self.session.flush()

    def clear(self, frame_id: int) -> None:
        self.session.execute(sa.delete(PendingExtractionRow)
                             .where(PendingExtractionRow.frame_id == frame_id))

    def pending(self, limit: int, after: int = 0) -> list[tuple[int, int]]:
        """(frame id, mind id) of pending extractions (of this mind, or all when mind_id is
        None), by frame id after ``after``."""
        query = (sa.select(PendingExtractionRow.frame_id, PendingExtractionRow.mind_id)
                 .where(PendingExtractionRow.frame_id > after))
        if self.mind_id is not None:
            query = query.where(PendingExtractionRow.mind_id == self.mind_id)
        rows = self.session.execute(query.order_by(PendingExtractionRow.frame_id).limit(limit))
        return [(int(f), int(m)) for f, m in rows]

    def status(self, frame_id: int) -> str | None:
        """The error of a pending extraction of ``frame_id``, None when it is not pending."""
        return self.session.scalar(sa.select(PendingExtractionRow.error)
                                   .where(PendingExtractionRow.frame_id == frame_id))

"""The embedding quota's counts (``waggle_embedding_usage``): one row per user per UTC month.

Each method is one statement on the caller's Session (it never commits). The quota's decisions
(the month key, the tier's limit, what to do when a concurrent transaction creates the month's
row first) are :mod:`waggle_store.embeddings.quota`'s: that layer sits below the repositories,
so the store hands it this repository (it matches the quota's ``UsageCounter`` protocol).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, case, select, update
from sqlalchemy.orm import Session

from waggle_store.models import EmbeddingUsage
from waggle_store.models.idioms import insert_or_none, rowcount

__all__ = ["EmbeddingUsageRepository"]


class EmbeddingUsageRepository:
    """The monthly embedding counts of every user of a store."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def count(self, user_id: str, month: str) -> int | None:
        """The count of ``user_id`` in ``month`` ("YYYY-MM"); None when that month has no row."""
        found = self.session.execute(
            select(EmbeddingUsage.count).where(
                EmbeddingUsage.user_id == user_id, EmbeddingUsage.year_month == month)
        ).scalar_one_or_none()
        return None if found is None else int(found)

    def add(self, user_id: str, month: str, n: int, *, limit: int | None, at: datetime) -> bool:
        """Add ``n`` to the month's count unless the sum would pass ``limit`` (None: no limit).

        One conditional UPDATE, so the check and the increment are atomic. False when nothing
        was added: the sum would pass the limit, or the month has no row yet."""
        row = and_(EmbeddingUsage.user_id == user_id, EmbeddingUsage.year_month == month)
        guarded = row if limit is None else and_(row, EmbeddingUsage.count + n <= limit)
        result = self.session.execute(
            update(EmbeddingUsage)
            .where(guarded)
            .values(count=EmbeddingUsage.count + n, updated_at=at)
            .execution_options(synchronize_session=False)
        )
        return rowcount(result) == 1

    def create(self, user_id: str, month: str, n: int, *, at: datetime) -> bool:
        """The month's row, counting ``n``, inserted in a savepoint; False (nothing written, the
        caller's transaction goes on) when another transaction created that row first."""
        first = EmbeddingUsage(user_id=user_id, year_month=month, count=n, updated_at=at)
        return insert_or_none(self.session, first) is not None

    def subtract(self, user_id: str, month: str, n: int, *, at: datetime) -> None:
        """Take ``n`` off the month's count, never below zero (a month without a row stays
        without one)."""
        self.session.execute(
            update(EmbeddingUsage)
            .where(EmbeddingUsage.user_id == user_id, EmbeddingUsage.year_month == month)
            .values(count=case((EmbeddingUsage.count >= n, EmbeddingUsage.count - n), else_=0),
                    updated_at=at)
            .execution_options(synchronize_session=False)
        )

"""Monthly embedding quotas, counted per user per UTC month in ``embedding_usage``.

The check and the increment are one conditional UPDATE, so two processes embedding at once can
neither lose a count nor both slip past the limit (as a read, compare, then write could).
The month is the UTC month: a local-time month key makes the same instant fall in different
months for different hosts. Only real embeddings are counted; the hashing fallback is
no service and costs nothing (:func:`is_billable`).

These functions read and change the counts through a :class:`UsageCounter` over the caller's
Session (the store hands them
:class:`~waggle_store.repositories.embedding_usage.EmbeddingUsageRepository`: this layer sits
below the repositories and imports none). Nothing commits: the caller owns the unit of work, so
a reservation can be rolled back together with the write it paid for.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from waggle_store.embeddings.tiers import UNLIMITED, TierPolicy
from waggle_store.errors import EmbeddingQuotaExceededError, InvalidInputError, StorageError
from waggle_store.records import QuotaStatus

__all__ = ["UsageCounter", "is_billable", "next_month_start", "quota_status", "release",
           "reserve", "usage", "year_month"]


class UsageCounter(Protocol):
    """One statement per method, in the caller's transaction, on the counts of (user, month)."""

    def count(self, user_id: str, month: str) -> int | None:
        """The count, or None when the month has no row yet."""
        ...

    def add(self, user_id: str, month: str, n: int, *, limit: int | None, at: datetime) -> bool:
        """Add ``n`` atomically unless the sum would pass ``limit`` (None: no limit); False when
        nothing was added (over the limit, or no row yet)."""
        ...

    def create(self, user_id: str, month: str, n: int, *, at: datetime) -> bool:
        """The month's row counting ``n``, in a savepoint; False when another transaction created
        it first (nothing written, the caller's transaction goes on)."""
        ...

    def subtract(self, user_id: str, month: str, n: int, *, at: datetime) -> None:
        """Take ``n`` off the count, never below zero."""
        ...


def _utc(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if now.tzinfo is None:
        raise InvalidInputError("now must be timezone-aware")
    return now.astimezone(UTC)


def year_month(now: datetime | None = None) -> str:
    """The UTC month key, "YYYY-MM"."""
    return _utc(now).strftime("%Y-%m")


def next_month_start(now: datetime | None = None) -> datetime:
    """The first instant of the next UTC month: when a monthly quota resets."""
    t = _utc(now)
    if t.month == 12:
        return datetime(t.year + 1, 1, 1, tzinfo=UTC)
    return datetime(t.year, t.month + 1, 1, tzinfo=UTC)


def is_billable(embedder: object) -> bool:
    """Whether embeddings by ``embedder`` count toward the quota (the hashing fallback does not)."""
    return getattr(embedder, "provider", None) not in (None, "hashing")


def _quota(tier: str | None, policy: TierPolicy | None) -> int:
    if tier is None:
        return UNLIMITED
    return (policy or TierPolicy.default()).quota_for(tier)


def usage(counter: UsageCounter, user_id: str, now: datetime | None = None) -> int:
    """Embeddings counted for ``user_id`` in the UTC month of ``now``."""
    return counter.count(user_id, year_month(now)) or 0


def reserve(
    counter: UsageCounter,
    user_id: str,
    n: int,
    *,
    tier: str | None,
    policy: TierPolicy | None,
    now: datetime | None = None,
) -> int:
    """Count ``n`` embeddings for ``user_id`` if the tier's quota allows; return the new total.

    Raises EmbeddingQuotaExceededError (nothing counted) when ``used + n`` would pass the quota:
    with a quota of 500, the 500th embedding succeeds and the 501st fails.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InvalidInputError(f"n must be a non-negative int, got {n!r}")
    when = _utc(now)
    month = year_month(when)
    quota = _quota(tier, policy)
    tier_name = (policy or TierPolicy.default()).canonical(tier) if tier is not None else "none"
    if n == 0:
        return usage(counter, user_id, when)

    limit = None if quota < 0 else quota
    for _ in range(3):
        if counter.add(user_id, month, n, limit=limit, at=when):
            return usage(counter, user_id, when)
        current = counter.count(user_id, month)
        if current is not None:
            if 0 <= quota < current + n:
                # The guard refused: the increment would pass the quota.
                raise EmbeddingQuotaExceededError(tier_name, quota, current)
            # The row appeared after our UPDATE looked (another transaction created this
            # month's row and committed in between): the conditional UPDATE decides again.
            continue
        if 0 <= quota < n:
            raise EmbeddingQuotaExceededError(tier_name, quota, 0)
        if not counter.create(user_id, month, n, at=when):
            # Another transaction created this month's row first; its row now exists, so the
            # conditional UPDATE decides (once more) whether there is room for ours.
            continue
        return n
    raise StorageError(
        f"could not count embeddings for user {user_id!r}: the usage row kept being created "
        "and removed by concurrent transactions"
    )


def quota_status(
    counter: UsageCounter,
    user_id: str,
    tier: str | None,
    policy: TierPolicy | None,
    now: datetime | None = None,
) -> QuotaStatus:
    """Usage against quota this UTC month; quota -1 (and remaining -1) means unlimited."""
    when = _utc(now)
    quota = _quota(tier, policy)
    used = usage(counter, user_id, when)
    canonical = (policy or TierPolicy.default()).canonical(tier) if tier is not None else None
    if quota < 0:
        remaining, percentage = UNLIMITED, 0.0
    elif quota == 0:
        remaining, percentage = 0, 100.0
    else:
        remaining = max(0, quota - used)
        percentage = round(used / quota * 100.0, 2)
    return QuotaStatus(
        tier=canonical,
        quota=quota,
        used=used,
        remaining=remaining,
        percentage=percentage,
        resets_at=next_month_start(when),
    )


def release(counter: UsageCounter, user_id: str, n: int, *, now: datetime | None = None) -> None:
    """Give back ``n`` embeddings reserved with :func:`reserve` for a call that failed (never
    below zero)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InvalidInputError(f"n must be a non-negative int, got {n!r}")
    if n == 0:
        return
    when = _utc(now)
    counter.subtract(user_id, year_month(when), n, at=when)

"""Monthly embedding quotas on both dialects: atomic counting, the exact limit, status, months."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.orm import Session

import waggle_store as ws
from waggle_store.embeddings import HashingEmbedder, TierPolicy
from waggle_store.embeddings.quota import (
    is_billable,
    next_month_start,
    quota_status,
    release,
    reserve,
    usage,
    year_month,
)
from waggle_store.errors import EmbeddingQuotaExceededError, InvalidInputError
from waggle_store.repositories.embedding_usage import EmbeddingUsageRepository

JUNE = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


def test_concurrent_reservations_lose_no_count(store: ws.Store) -> None:
    threads_n, per_thread = 8, 25
    policy = TierPolicy.default()
    errors: list[Exception] = []
    start = threading.Barrier(threads_n)

    def worker() -> None:
        try:
            start.wait()
            for _ in range(per_thread):
                with Session(store.engine) as session:
                    counter = EmbeddingUsageRepository(session)
                    reserve(counter, "alice", 1, tier="TEAMS", policy=policy, now=JUNE)
                    session.commit()
        except Exception as exc:  # noqa: BLE001 - re-raised by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        assert usage(counter, "alice", JUNE) == threads_n * per_thread


def test_concurrent_reservations_stop_exactly_at_the_quota(store: ws.Store) -> None:
    policy = TierPolicy.default().with_quota("FREE", 50)
    granted: list[int] = []
    refused: list[EmbeddingQuotaExceededError] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        for _ in range(10):
            with Session(store.engine) as session:
                counter = EmbeddingUsageRepository(session)
                try:
                    total = reserve(counter, "bob", 1, tier="FREE", policy=policy, now=JUNE)
                    session.commit()
                except EmbeddingQuotaExceededError as exc:
                    session.rollback()
                    with lock:
                        refused.append(exc)
                    continue
            with lock:
                granted.append(total)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(granted) == 50
    assert sorted(granted) == list(range(1, 51))
    assert len(refused) == 30
    assert all(e.current == 50 and e.quota == 50 for e in refused)


def test_quota_error_fires_at_exactly_the_limit(store: ws.Store) -> None:
    policy = TierPolicy.default().with_quota("FREE", 500)
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        assert reserve(counter, "carol", 499, tier="FREE", policy=policy, now=JUNE) == 499
        session.commit()
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        assert reserve(counter, "carol", 1, tier="FREE", policy=policy, now=JUNE) == 500
        session.commit()
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        with pytest.raises(EmbeddingQuotaExceededError) as info:
            reserve(counter, "carol", 1, tier="free", policy=policy, now=JUNE)
        assert (info.value.tier, info.value.quota, info.value.current) == ("FREE", 500, 500)
        assert "500 of 500" in str(info.value)
        assert usage(counter, "carol", JUNE) == 500  # a refusal counts nothing


def test_a_batch_larger_than_what_is_left_is_refused_whole(store: ws.Store) -> None:
    policy = TierPolicy.default().with_quota("FREE", 10)
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        reserve(counter, "dave", 8, tier="FREE", policy=policy, now=JUNE)
        with pytest.raises(EmbeddingQuotaExceededError) as info:
            reserve(counter, "dave", 3, tier="FREE", policy=policy, now=JUNE)
        assert info.value.current == 8
        assert reserve(counter, "dave", 2, tier="FREE", policy=policy, now=JUNE) == 10
        # No row yet and a first batch above the quota: refused before inserting anything.
        with pytest.raises(EmbeddingQuotaExceededError) as first:
            reserve(counter, "erin", 11, tier="FREE", policy=policy, now=JUNE)
        assert first.value.current == 0
        assert usage(counter, "erin", JUNE) == 0
        session.commit()


def test_unlimited_tiers_and_no_tier_still_count(store: ws.Store) -> None:
    policy = TierPolicy.default()
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        assert reserve(counter, "frank", 999_999, tier="TEAMS", policy=policy, now=JUNE) == 999_999
        assert reserve(counter, "frank", 1, tier=None, policy=None, now=JUNE) == 1_000_000
        assert reserve(counter, "frank", 0, tier="TEAMS", policy=policy, now=JUNE) == 1_000_000
        with pytest.raises(InvalidInputError):
            reserve(counter, "frank", -1, tier="TEAMS", policy=policy, now=JUNE)
        session.commit()


def test_months_are_utc_and_counted_separately(store: ws.Store) -> None:
    policy = TierPolicy.default().with_quota("FREE", 5)
    # 23:30 on May 31st at UTC-2 is already June 1st in UTC.
    late_may_local = datetime(2025, 5, 31, 23, 30, tzinfo=timezone(timedelta(hours=-2)))
    assert year_month(late_may_local) == "2025-06"
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        reserve(
            counter, "gina", 5, tier="FREE", policy=policy, now=datetime(2025, 5, 2, tzinfo=UTC)
        )
        assert reserve(counter, "gina", 5, tier="FREE", policy=policy, now=late_may_local) == 5
        assert usage(counter, "gina", datetime(2025, 5, 20, tzinfo=UTC)) == 5
        session.commit()


def test_release_gives_back_never_below_zero_and_only_its_month(store: ws.Store) -> None:
    policy = TierPolicy.default().with_quota("FREE", 10)
    july = datetime(2025, 7, 1, tzinfo=UTC)
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        reserve(counter, "jack", 10, tier="FREE", policy=policy, now=JUNE)
        release(counter, "jack", 4, now=JUNE)
        assert usage(counter, "jack", JUNE) == 6
        assert reserve(counter, "jack", 4, tier="FREE", policy=policy, now=JUNE) == 10
        release(counter, "jack", 25, now=JUNE)
        assert usage(counter, "jack", JUNE) == 0
        release(counter, "jack", 3, now=july)  # July has no row: none is made
        assert counter.count("jack", "2025-07") is None
        with pytest.raises(InvalidInputError):
            release(counter, "jack", -1, now=JUNE)
        session.commit()
    with Session(store.engine) as session:
        assert usage(EmbeddingUsageRepository(session), "jack", JUNE) == 0

def test_quota_status(store: ws.Store) -> None:
    policy = TierPolicy.default().with_quota("FREE", 500)
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        reserve(counter, "hank", 250, tier="FREE", policy=policy, now=JUNE)
        session.commit()
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        status = quota_status(counter, "hank", "free", policy, now=JUNE)
        assert status.tier == "FREE"
        assert (status.quota, status.used, status.remaining) == (500, 250, 250)
        assert status.percentage == 50
        assert status.resets_at == datetime(2025, 7, 1, tzinfo=UTC)

        unlimited = quota_status(counter, "hank", "TEAMS", policy, now=JUNE)
        assert (unlimited.quota, unlimited.used, unlimited.remaining) == (-1, 250, -1)
        assert unlimited.percentage == 0

        nobody = quota_status(counter, "nobody", None, None, now=JUNE)
        assert (nobody.tier, nobody.quota, nobody.used) == (None, -1, 0)


def test_store_quota_status_reads_the_same_table(store_factory: object) -> None:
    policy = TierPolicy.default().with_quota("FREE", 100)
    store = store_factory(tier="FREE", user_id="ivy", tier_policy=policy)  # type: ignore[operator]
    with Session(store.engine) as session:
        counter = EmbeddingUsageRepository(session)
        reserve(counter, "ivy", 10, tier="FREE", policy=policy)
        session.commit()
    status = store.quota_status()
    assert (status.tier, status.quota, status.used, status.remaining) == ("FREE", 100, 10, 90)


def test_next_month_start_and_billing() -> None:
    assert next_month_start(datetime(2025, 12, 31, 23, 59, tzinfo=UTC)) == datetime(
        2026, 1, 1, tzinfo=UTC
    )
    with pytest.raises(InvalidInputError):
        year_month(datetime(2025, 1, 1))
    assert is_billable(HashingEmbedder()) is False
    assert is_billable(type("E", (), {"provider": "openai"})()) is True

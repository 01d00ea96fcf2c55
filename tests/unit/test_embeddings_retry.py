"""The retry policy in isolation: what is retried, how long it waits, when it stops."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime, timedelta

import pytest
import tenacity

from waggle_store.embeddings.retry import (
    ProviderCallError,
    RetryPolicy,
    call_with_retry,
    classify_status,
    parse_retry_after,
)
from waggle_store.errors import EmbeddingProviderError


class Script:
    """A callable failing with the given errors, then returning "ok"; records sleeps."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0
        self.sleeps: list[float] = []

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def transient(retry_after: float | None = None) -> ProviderCallError:
    return ProviderCallError(
        "x: HTTP 503", provider="x", status=503, retryable=True, retry_after=retry_after
    )


def test_retries_transient_then_succeeds() -> None:
    script = Script(transient(), transient())
    assert call_with_retry(script, provider="x", policy=RetryPolicy(), sleep=script.sleep) == "ok"
    assert script.calls == 3
    assert len(script.sleeps) == 2
    assert all(0 <= s <= RetryPolicy().max_wait for s in script.sleeps)


def test_backoff_is_jittered_and_bounded() -> None:
    policy = RetryPolicy(max_attempts=30, initial_wait=0.1, max_wait=0.4, deadline=1000)
    script = Script(*[transient() for _ in range(29)])
    call_with_retry(script, provider="x", policy=policy, sleep=script.sleep)
    assert max(script.sleeps) <= 0.4
    assert len(set(script.sleeps)) > 5  # random, not a fixed ladder


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    policy = RetryPolicy(initial_wait=0.01, max_wait=0.02, retry_after_cap=3.0)
    script = Script(transient(retry_after=2.0), transient(retry_after=60.0))
    call_with_retry(script, provider="x", policy=policy, sleep=script.sleep)
    assert script.sleeps == [2.0, 3.0]


def test_gives_up_after_max_attempts_with_cause() -> None:
    cause = ConnectionResetError("peer reset")
    err = ProviderCallError("x: reset", provider="x", retryable=True)
    err.__cause__ = cause
    script = Script(err, transient(), transient(), transient())
    with pytest.raises(EmbeddingProviderError) as info:
        call_with_retry(
            script, provider="x", policy=RetryPolicy(max_attempts=3), sleep=script.sleep
        )
    assert script.calls == 3
    assert type(info.value) is EmbeddingProviderError
    assert info.value.provider == "x"
    assert info.value.status == 503
    assert "after 3 attempts" in str(info.value)
    assert isinstance(info.value.__cause__, ProviderCallError)


def test_non_retryable_fails_at_once() -> None:
    script = Script(ProviderCallError("x: HTTP 401", provider="x", status=401))
    with pytest.raises(EmbeddingProviderError) as info:
        call_with_retry(script, provider="x", sleep=script.sleep)
    assert script.calls == 1
    assert script.sleeps == []
    assert info.value.status == 401


class FakeClock:
    """A monotonic clock that moves only when the retry loop sleeps: every wait is recorded,
    none is real, so the deadline is tested by what the loop decides, not by how long it took."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.mark.parametrize(
    ("deadline", "calls"),
    [
        (0.5, 3),  # waits 0.2 + 0.2; a third 0.2 s wait would end at 0.6 s, past the deadline
        (0.7, 4),  # one more wait fits; the fourth would end at 0.8 s
    ],
)
def test_total_deadline_stops_before_a_sleep_that_would_pass_it(
    monkeypatch: pytest.MonkeyPatch, deadline: float, calls: int
) -> None:
    clock = FakeClock()
    # tenacity measures the time since the first attempt with its module's time.monotonic().
    monkeypatch.setattr(tenacity, "time", clock)
    policy = RetryPolicy(max_attempts=100, initial_wait=0.01, retry_after_cap=10, deadline=deadline)
    script = Script(*[transient(retry_after=0.2) for _ in range(100)])
    with pytest.raises(EmbeddingProviderError, match=f"after {calls} attempts"):
        call_with_retry(script, provider="x", policy=policy, sleep=clock.sleep)
    assert script.calls == calls
    assert clock.sleeps == [0.2] * (calls - 1)
    assert clock.now <= deadline < clock.now + 0.2


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (422, False),
        (408, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (504, True),
    ],
)
def test_classify_status(status: int, retryable: bool) -> None:
    assert classify_status("p", status, "m").retryable is retryable


def test_billing_quota_429_is_not_retryable() -> None:
    body = {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}
    err = classify_status("openai", 429, "quota", body=body, headers={"retry-after": "1"})
    assert err.retryable is False
    assert "insufficient_quota" in str(err)


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": "-3"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "nan"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None
    future = datetime.now(UTC) + timedelta(seconds=30)
    seconds = parse_retry_after({"Retry-After": email.utils.format_datetime(future, usegmt=True)})
    assert seconds is not None
    assert 25 <= seconds <= 30


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="deadline must not be negative"):
        RetryPolicy(deadline=-1)
    assert RetryPolicy.no_retry().max_attempts == 1

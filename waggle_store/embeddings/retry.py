"""The one retry policy every remote embedding call goes through.

SDK-internal retries are switched off so that a single policy decides: retry what can succeed on
a second try (429 rate limits, 5xx, timeouts, dropped connections) with jittered exponential
backoff, honouring ``Retry-After`` up to a cap, within a maximum number of attempts and a total
deadline; never retry what cannot (bad request, auth, not found, validation, a billing-quota 429,
a malformed response, a dimension mismatch), because repeating those only burns time and quota.

Providers translate their SDK's exceptions into :class:`ProviderCallError` (one failed attempt,
classified); :func:`call_with_retry` retries the retryable ones and finally raises a plain
:class:`~waggle_store.errors.EmbeddingProviderError` chained to the original cause.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)

from waggle_store.errors import EmbeddingProviderError, scrub_secrets

T = TypeVar("T")

#: HTTP statuses worth a second try. 408 is a server-side timeout, the others are overload/outage.
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try a remote call before giving up.

    The defaults are deliberately small: a store embeds before it writes, and a failed embedding
    only leaves the frame ``pending`` for ``reconcile()``, so waiting minutes is never worth it.
    """

    max_attempts: int = 3
    initial_wait: float = 0.2
    max_wait: float = 2.0
    retry_after_cap: float = 5.0
    deadline: float = 20.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be at least 1")
        for name in ("initial_wait", "max_wait", "retry_after_cap", "deadline"):
            if getattr(self, name) < 0:
                raise ValueError(f"RetryPolicy.{name} must not be negative")

    @classmethod
    def no_retry(cls) -> RetryPolicy:
        """A single attempt: what a quick availability probe wants."""
        return cls(max_attempts=1)


DEFAULT_POLICY = RetryPolicy()


class ProviderCallError(EmbeddingProviderError):
    """One failed attempt at a remote call, classified as worth retrying or not."""

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status, retryable=retryable)
        self.retry_after = retry_after


def is_retryable_status(status: int | None) -> bool:
    return status is not None and status in RETRYABLE_STATUSES


def is_billing_quota(body: object) -> bool:
    """True for a 429 that means "out of credit" (OpenAI's ``insufficient_quota``), not "slow
    down"."""
    return "insufficient_quota" in repr(body)


def parse_retry_after(headers: Mapping[str, Any] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (delta-seconds or HTTP-date)."""
    if not headers:
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    millis = _seconds(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    seconds = _seconds(raw)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(str(raw))
    except (TypeError, ValueError):
        return None  # a garbled optional header means "no advice", not an error
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _seconds(raw: object) -> float | None:
    if raw is None:
        return None
    try:
        value = float(str(raw))
    except ValueError:
        return None
    return max(0.0, value) if math.isfinite(value) else None  # NaN/inf are no advice either


def classify_status(
    provider: str,
    status: int,
    message: str,
    *,
    body: object = None,
    headers: Mapping[str, Any] | None = None,
) -> ProviderCallError:
    """Turn an HTTP error status into a classified attempt failure."""
    if status == 429 and is_billing_quota(body if body is not None else message):
        return ProviderCallError(
            f"{provider}: billing quota exhausted (HTTP 429 insufficient_quota): {message}",
            provider=provider,
            status=status,
            retryable=False,
        )
    hint = {
        401: "check the API key",
        403: "the API key is not allowed to use this model",
        404: "unknown model or wrong base URL",
    }.get(status)
    suffix = f" ({hint})" if hint else ""
    return ProviderCallError(
        f"{provider}: HTTP {status}{suffix}: {message}",
        provider=provider,
        status=status,
        retryable=is_retryable_status(status),
        retry_after=parse_retry_after(headers) if status in (429, 503) else None,
    )


def _wait(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    backoff = wait_random_exponential(multiplier=policy.initial_wait, max=policy.max_wait)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, ProviderCallError) and exc.retry_after is not None:
            return min(exc.retry_after, policy.retry_after_cap)
        return float(backoff(state))

    return wait


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderCallError) and exc.retryable


def call_with_retry(
    fn: Callable[[], T],
    *,
    provider: str,
    policy: RetryPolicy = DEFAULT_POLICY,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``fn`` under ``policy``; ``fn`` must raise :class:`ProviderCallError` on failure.

    The final error is an :class:`EmbeddingProviderError` naming the provider, the HTTP status
    (if any) and the number of attempts, with the SDK's own exception as ``__cause__``.
    """
    retrying = Retrying(
        stop=stop_after_attempt(policy.max_attempts) | stop_before_delay(policy.deadline),
        wait=_wait(policy),
        retry=retry_if_exception(_retryable),
        reraise=True,
        sleep=sleep,
    )
    attempts = 0

    def attempt() -> T:
        nonlocal attempts
        attempts += 1
        return fn()

    try:
        return retrying(attempt)
    except ProviderCallError as exc:
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        cause: BaseException | None = exc.__cause__ if exc.__cause__ is not None else exc
        if cause is not None and scrub_secrets(str(cause)) != str(cause):
            cause = None  # the SDK's own error text holds a credential: not chained, not logged
        raise EmbeddingProviderError(
            f"{exc}{tries}", provider=provider, status=exc.status, retryable=exc.retryable
        ) from cause


__all__ = [
    "DEFAULT_POLICY",
    "RETRYABLE_STATUSES",
    "ProviderCallError",
    "RetryPolicy",
    "call_with_retry",
    "classify_status",
    "is_billing_quota",
    "parse_retry_after",
]

"""Every error waggle_store raises on purpose derives from :class:`WaggleStoreError`.

Driver errors are wrapped in one of these so that a caller never has to import SQLAlchemy,
sqlite3 or psycopg just to catch what a memory store raised.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

# Credentials a provider's error text can carry: a URL's user:password (a proxy's), an
# Authorization header or an api-key-like field's value, and bare API tokens (sk-..., pa-...).
_SECRET_PATTERNS = (
    (re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^\s/@'\"]+@"), r"\1***@"),
    (re.compile(r"(?i)\b((?:proxy-)?authorization)(['\"]?\s*[:=]\s*['\"]?)[^'\"\n,}]+"),
     r"\1\2***"),
    (re.compile(r"(?i)\b([a-z0-9_-]*(?:api[-_]?key|secret|password|passwd|token))"
                r"(['\"]?\s*[:=]\s*['\"]?)[^\s'\",}&]+"), r"\1\2***"),
    (re.compile(r"(?i)\bbearer\s+[a-z0-9._~+/=-]{8,}"), "Bearer ***"),
    (re.compile(r"\b(sk|pk|rk|pa|key)-[A-Za-z0-9_-]{8,}"), r"\1-***"),
)


def scrub_secrets(text: str) -> str:
    """``text`` with credentials masked: URL userinfo, ``Authorization``/api-key/token/password
    values and ``sk-...``-like tokens become ``***``. Every provider error passes through here
    before it is logged, stored (``embedding_status()``, a frame's vector error) or raised."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class WaggleStoreError(Exception):
    """Root of every error raised on purpose by waggle_store."""


class InvalidInputError(WaggleStoreError, ValueError):
    """The caller passed a value the API does not accept (the message says which and why)."""


class UnsupportedDialectError(InvalidInputError):
    """A URL or Engine of a database backend waggle_store has no dialect adapter for.

    Raised before any driver is imported, so ``mysql://`` says "unsupported" instead of failing
    on a missing ``MySQLdb`` or, worse, running Postgres SQL against MySQL. The message names the
    backend and the supported ones, never the URL (it may hold a password).
    """


class WaggleStoreWarning(UserWarning):
    """Something works, but not the way it should (an affected SQLite, a fallback embedder)."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


#: Why a PostgreSQL store runs keyword-only when its role may not install pgvector, and the fix.
PGVECTOR_NOT_INSTALLED = (
    "vector search off: the pgvector extension is available on this server but not installed "
    "in this database, and this role may not install it: a superuser (or the database owner, "
    "where pgvector is trusted) runs `CREATE EXTENSION vector;` in this database, then "
    "store.reconcile() embeds the pending memories"
)


def warn_at_caller(message: str, category: type[Warning] = WaggleStoreWarning) -> None:
    """``warnings.warn`` attributed to the first frame outside waggle_store (the application's
    ``open_store`` call), whatever depth of the package it is raised from."""
    level = 2  # stacklevel 2 is the frame that called this function
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    warnings.warn(message, category, stacklevel=level)


class NotFoundError(WaggleStoreError, LookupError):
    """A named row (frame, session, entity, ...) does not exist in this mind."""


class ConflictError(WaggleStoreError):
    """A write would break a uniqueness or integrity rule of the store."""


class ValidationError(InvalidInputError):
    """A knowledge-graph write violates the mind's ValidationSchema."""


class DimensionMismatchError(InvalidInputError):
    """A vector's dimension differs from the embedding model's registered dimension."""


class InvalidVectorError(InvalidInputError):
    """A vector holds NaN, an infinity, or is all zeros: it cannot be stored or compared."""


class MissingExtensionError(WaggleStoreError):
    """A database capability (SQLite extension loading, sqlite-vec, pgvector) is unavailable."""


class MigrationError(WaggleStoreError):
    """Running, checking or locating the Alembic migrations failed."""


class VectorTableMissingError(MigrationError):
    """The vector table of the store's embedding model is missing (or incomplete) and this
    store runs no DDL (opened with ``upgrade=False``): an admin step creates it. Writes keep
    their vectors pending with this message; ``reconcile()`` embeds them once it exists."""


class StorageError(WaggleStoreError):
    """The database rejected an operation for a reason that is not the caller's input."""


class DatabaseUnavailableError(StorageError):
    """The database cannot be reached (refused, timed out, connection lost). The message names
    the host and port (or the file), never the password."""


class StorageFullError(StorageError):
    """The disk, or the database's own size limit, is full: nothing of the call was stored."""


class ReadOnlyStorageError(StorageError):
    """The database (file, directory or server) refuses writes."""


class StorageBusyError(StorageError):
    """The database stayed locked by another writer for longer than the busy timeout."""


class EmbeddingProviderError(WaggleStoreError):
    """An embedding provider failed (after retries, where retrying made sense).

    ``provider`` names the provider, ``status`` carries the HTTP status when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(scrub_secrets(str(message)))
        self.provider = provider
        self.status = status
        self.retryable = retryable


class TierError(WaggleStoreError):
    """The user's tier does not allow the requested embedding provider."""

    def __init__(self, required: str, actual: str, provider: str | None = None) -> None:
        what = f" for provider '{provider}'" if provider else ""
        super().__init__(f"Tier insufficient{what}: requires {required}, actual is {actual}")
        self.required = required
        self.actual = actual
        self.provider = provider


class EmbeddingQuotaExceededError(WaggleStoreError):
    """The user's monthly embedding quota is used up."""

    def __init__(self, tier: str, quota: int, current: int) -> None:
        super().__init__(
            f"Monthly embedding quota exceeded for tier {tier}: {current} of {quota} used"
        )
        self.tier = tier
        self.quota = quota
        self.current = current


class BudgetExceededError(WaggleStoreError):
    """A mind has spent its monthly usage budget (``store.usage.check_budget``)."""

    def __init__(self, mind: str, budget_usd: float, spent_usd: float, month: str) -> None:
        super().__init__(
            f"mind {mind!r} has spent ${spent_usd:.4f} of its ${budget_usd:.4f} budget for {month}"
        )
        self.mind = mind
        self.budget_usd = budget_usd
        self.spent_usd = spent_usd
        self.month = month


__all__ = [
    "BudgetExceededError",
    "ConflictError",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbeddingProviderError",
    "EmbeddingQuotaExceededError",
    "InvalidInputError",
    "InvalidVectorError",
    "MigrationError",
    "MissingExtensionError",
    "NotFoundError",
    "StorageError",
    "TierError",
    "UnsupportedDialectError",
    "ValidationError",
    "VectorTableMissingError",
    "WaggleStoreError",
    "WaggleStoreWarning",
]

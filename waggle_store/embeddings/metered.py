"""Quota enforcement around a store's embedder.

Every real embedding (document or query) is counted against the user's monthly quota when the
store was opened with a tier. The check runs before the provider is called, so an exhausted
quota costs no provider call; the count is taken after the provider answered, so a failed call
costs no quota. The hashing fallback is never counted (it is no service).

The embedder is given what it needs to count — a :class:`QuotaMeter` over the store's unit of
work — not the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from waggle_store.embeddings.base import Embedder
from waggle_store.embeddings.quota import is_billable, reserve, usage
from waggle_store.embeddings.tiers import UNLIMITED, TierPolicy
from waggle_store.errors import EmbeddingQuotaExceededError
from waggle_store.unitofwork import Database

__all__ = ["MeteredEmbedder", "QuotaMeter"]


class QuotaMeter:
    """One user's monthly embedding count under one tier, read and raised in short transactions."""

    def __init__(self, db: Database, *, user_id: str, tier: str,
                 policy: TierPolicy | None) -> None:
        self._db = db
        self.user_id = user_id
        self.tier = tier
        self.policy = policy or TierPolicy.default()

    def check(self, n: int) -> None:
        """Raise EmbeddingQuotaExceededError if ``n`` more embeddings would pass the quota."""
        quota = self.policy.quota_for(self.tier)
        if quota == UNLIMITED:
            return
        with self._db.read() as session:
            used = usage(session, self.user_id)
        if used + n > quota:
            raise EmbeddingQuotaExceededError(self.policy.canonical(self.tier), quota, used)

    def count(self, n: int) -> None:
        """Record ``n`` embeddings the provider has made."""
        if n:
            with self._db.write() as session:
                reserve(session, self.user_id, n, tier=self.tier, policy=self.policy)


class MeteredEmbedder:
    """Delegates to ``inner`` (provider, model, status() ...) and meters its embeddings."""

    def __init__(self, inner: Embedder, meter: QuotaMeter) -> None:
        self.inner = inner
        self.meter = meter
        self.user_id = meter.user_id
        self.tier = meter.tier
        self.policy = meter.policy

    def __getattr__(self, name: str) -> Any:  # status(), is_fallback, ... of the inner embedder
        return getattr(self.inner, name)

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def _billable(self) -> bool:
        return is_billable(self.inner)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        billable = self._billable()
        if billable:
            self.meter.check(len(texts))
        vectors: list[list[float]] = self.inner.embed_documents(texts)
        if billable:
            self.meter.count(len(vectors))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        billable = self._billable()
        if billable:
            self.meter.check(1)
        vector: list[float] = self.inner.embed_query(text)
        if billable:
            self.meter.count(1)
        return vector

    def __repr__(self) -> str:
        return f"<MeteredEmbedder {self.inner!r} user={self.user_id!r} tier={self.tier!r}>"

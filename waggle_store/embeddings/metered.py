"""Quota enforcement around a store's embedder.

Every real embedding (document or query) is counted against the user's monthly quota when the
store was opened with a tier. The check runs before the provider is called, so an exhausted
quota costs no provider call; the count is taken after the provider answered, so a failed call
costs no quota. The hashing fallback is never counted (it is no service).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from waggle_store.embeddings.quota import is_billable, reserve, usage
from waggle_store.embeddings.tiers import UNLIMITED, TierPolicy
from waggle_store.errors import EmbeddingQuotaExceededError

if TYPE_CHECKING:
    from waggle_store.store import Store


class MeteredEmbedder:
    """Delegates to ``inner`` (provider, model, status() ...) and meters its embeddings."""

    def __init__(self, inner: Any, store: Store, *, user_id: str, tier: str,
                 policy: TierPolicy | None) -> None:
        self.inner = inner
        self._store = store
        self.user_id = user_id
        self.tier = tier
        self.policy = policy or TierPolicy.default()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _check(self, n: int) -> None:
        quota = self.policy.quota_for(self.tier)
        if quota == UNLIMITED or not is_billable(self.inner):
            return
        with self._store.read() as session:
            used = usage(session, self.user_id)
        if used + n > quota:
            raise EmbeddingQuotaExceededError(self.policy.canonical(self.tier), quota, used)

    def _count(self, n: int) -> None:
        if n and is_billable(self.inner):
            with self._store.write() as session:
                reserve(session, self.user_id, n, tier=self.tier, policy=self.policy)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self._check(len(texts))
        vectors: list[list[float]] = self.inner.embed_documents(texts)
        self._count(len(vectors))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        self._check(1)
        vector: list[float] = self.inner.embed_query(text)
        self._count(1)
        return vector

    def __repr__(self) -> str:
        return f"<MeteredEmbedder {self.inner!r} user={self.user_id!r} tier={self.tier!r}>"

"""Quota enforcement around a store's embedder.

Every real embedding (document or query) is counted against the user's monthly quota when the
store was opened with a tier. The embeddings are *reserved* (an atomic, quota-guarded increment)
before the provider is called, so an exhausted quota costs no provider call and concurrent
callers can never together pass the quota; a call that fails gives its reservation back, so a
failed call costs no quota. The hashing fallback is never counted (it is no service).

The embedder is given what it needs to count — a :class:`QuotaMeter` over the store's unit of
work and the counter the store hands it (its repository of the counts) — not the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from waggle_store.embeddings.base import Embedder
from waggle_store.embeddings.quota import UsageCounter, is_billable, release, reserve
from waggle_store.embeddings.sentences import text_form_of
from waggle_store.embeddings.tiers import TierPolicy
from waggle_store.unitofwork import Database

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["MeteredEmbedder", "QuotaMeter"]


class QuotaMeter:
    """One user's monthly embedding count under one tier, read and raised in short transactions.

    ``counter`` makes the :class:`~waggle_store.embeddings.quota.UsageCounter` of a transaction's
    Session (the store passes its repository of the counts)."""

    def __init__(self, db: Database, counter: Callable[[Session], UsageCounter], *,
                 user_id: str, tier: str, policy: TierPolicy | None) -> None:
        self._db = db
        self._counter = counter
        self.user_id = user_id
        self.tier = tier
        self.policy = policy or TierPolicy.default()

    def reserve(self, n: int) -> None:
        """Count ``n`` embeddings about to be made; EmbeddingQuotaExceededError (nothing
        counted) if they would pass the quota."""
        if n:
            with self._db.write() as session:
                reserve(self._counter(session), self.user_id, n, tier=self.tier,
                        policy=self.policy)

    def release(self, n: int) -> None:
        """Give back ``n`` reserved embeddings the provider did not make."""
        if n:
            with self._db.write() as session:
                release(self._counter(session), self.user_id, n)


class MeteredEmbedder:
    """Delegates to ``inner`` (provider, model, status() ...) and meters its embeddings."""

    #: Never beside a search's reads (:func:`~waggle_store.embeddings.base.embeds_beside_reads`):
    #: reserving the quota takes a pooled connection and a write transaction of its own, which a
    #: search already holding its read connection must not wait for (with every pooled connection
    #: held by such searches, none would come).
    embeds_beside_reads = False

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

    @property
    def text_form(self) -> str:
        """The inner embedder's: the meter counts documents, however each is embedded."""
        return text_form_of(self.inner)

    def _billable(self) -> bool:
        return is_billable(self.inner)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        n = len(texts) if self._billable() else 0
        self.meter.reserve(n)
        try:
            vectors: list[list[float]] = self.inner.embed_documents(texts)
        except BaseException:
            self.meter.release(n)
            raise
        if n > len(vectors):  # a short answer is refused by the caller; only bill what came
            self.meter.release(n - len(vectors))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        n = 1 if self._billable() else 0
        self.meter.reserve(n)
        try:
            vector: list[float] = self.inner.embed_query(text)
        except BaseException:
            self.meter.release(n)
            raise
        return vector

    def __repr__(self) -> str:
        return f"<MeteredEmbedder {self.inner!r} user={self.user_id!r} tier={self.tier!r}>"

"""What every network-backed embedder shares: batching, retries, dimension learning, checks.

A remote model's dimension is learned from its first answer (a probe, if ``dimensions`` is read
before anything was embedded) unless it was configured; from then on every answer must have that
dimension, because a store keeps one vector index per (provider, model, dimensions) and a vector
of another size would silently belong to a different model.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import partial

from waggle_store.embeddings.base import PROBE_TEXT, make_model_id, split_batches, validate_vector
from waggle_store.embeddings.retry import (
    DEFAULT_POLICY,
    ProviderCallError,
    RetryPolicy,
    call_with_retry,
)
from waggle_store.errors import DimensionMismatchError, InvalidVectorError


class RemoteEmbedder(ABC):
    """Base of the HTTP providers; subclasses implement one request in :meth:`_request`."""

    provider: str = "remote"
    #: Most inputs one request may carry, and a character budget that keeps it under the
    #: provider's token limit (a token is at least one character).
    max_batch_items: int = 256
    max_batch_chars: int | None = None

    def __init__(
        self, model: str, *, dimensions: int | None, retry: RetryPolicy | None, timeout: float
    ) -> None:
        self.model = model
        self._dimensions = dimensions
        #: Seconds one request may take; a probe may ask for less (:meth:`probe`).
        self.timeout = timeout
        self.retry_policy = retry if retry is not None else DEFAULT_POLICY
        self._lock = threading.Lock()

    # -- the Embedder protocol -------------------------------------------------------------

    @property
    def dimensions(self) -> int:
        """The model's dimension; asks the provider once if it was neither configured nor seen."""
        if self._dimensions is None:
            self.probe()
        assert self._dimensions is not None  # set by the probe, or the probe raised
        return self._dimensions

    @property
    def known_dimensions(self) -> int | None:
        """The dimension if configured or already seen, without asking the provider."""
        return self._dimensions

    @property
    def model_id(self) -> str:
        return make_model_id(self.provider, self.model, self.dimensions)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(list(texts), kind="document", policy=self.retry_policy)

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], kind="query", policy=self.retry_policy)[0]

    # -- probing ----------------------------------------------------------------------------

    def probe(self, policy: RetryPolicy | None = None, *, timeout: float | None = None) -> int:
        """Embed the probe text once; returns the dimension (and learns it if it was unknown).

        ``timeout`` shortens this one call: "auto" asks each candidate briefly, because a server
        that accepts connections but never answers must not hold the first embedding for the
        full request timeout (30 s for Ollama) before the next candidate is tried.
        """
        vec = self._embed(
            [PROBE_TEXT], kind="document", policy=policy or self.retry_policy, timeout=timeout
        )[0]
        return len(vec)

    # -- shared machinery -------------------------------------------------------------------

    def _embed(
        self, texts: list[str], *, kind: str, policy: RetryPolicy, timeout: float | None = None
    ) -> list[list[float]]:
        seconds = self.timeout if timeout is None else timeout
        out: list[list[float]] = []
        for batch in split_batches(
            texts, max_items=self.max_batch_items, max_chars=self.max_batch_chars
        ):
            raw = call_with_retry(
                partial(self._checked_request, batch, kind, seconds),
                provider=self.provider,
                policy=policy,
            )
            out.extend(raw)
        return out

    def _checked_request(self, batch: list[str], kind: str, timeout: float) -> list[list[float]]:
        vectors = self._request(batch, kind, timeout)
        if len(vectors) != len(batch):
            raise ProviderCallError(
                f"{self.provider}: malformed response: {len(vectors)} vectors for "
                f"{len(batch)} inputs",
                provider=self.provider,
            )
        expected = self._expected_dimensions(vectors)
        checked: list[list[float]] = []
        for vec in vectors:
            try:
                checked.append(validate_vector(vec, expected, normalize=True))
            except DimensionMismatchError as exc:
                raise ProviderCallError(
                    f"{self.provider}: model {self.model!r} returned a vector of the wrong "
                    f"dimension: {exc}",
                    provider=self.provider,
                ) from exc
            except InvalidVectorError as exc:
                raise ProviderCallError(
                    f"{self.provider}: malformed response from model {self.model!r}: {exc}",
                    provider=self.provider,
                ) from exc
        return checked

    def _expected_dimensions(self, vectors: list[list[float]]) -> int:
        with self._lock:
            if self._dimensions is None:
                first = vectors[0] if vectors else None
                if not isinstance(first, list) or not first:
                    raise ProviderCallError(
                        f"{self.provider}: malformed response: no usable vector",
                        provider=self.provider,
                    )
                self._dimensions = len(first)
            return self._dimensions

    @abstractmethod
    def _request(self, batch: list[str], kind: str, timeout: float) -> list[list[float]]:
        """Send one request; raise :class:`ProviderCallError` (classified) on any failure.

        ``kind`` is "document" or "query", for providers whose models embed them differently;
        ``timeout`` is the seconds this request may take.
        """

    def __repr__(self) -> str:
        dims = self._dimensions if self._dimensions is not None else "?"
        return f"{type(self).__name__}(model={self.model!r}, dimensions={dims})"


__all__ = ["RemoteEmbedder"]

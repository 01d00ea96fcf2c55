"""Voyage AI embeddings through the voyageai SDK (extra ``voyage``), SDK retries off.

Voyage embeds documents and queries asymmetrically (``input_type``), which matters for retrieval
quality, so :meth:`embed_query` and :meth:`embed_documents` send different input types.
"""

from __future__ import annotations

import os
from typing import Any

from waggle_store.embeddings.remote import RemoteEmbedder
from waggle_store.embeddings.retry import ProviderCallError, RetryPolicy, classify_status
from waggle_store.errors import EmbeddingProviderError


def _import_voyageai() -> Any:
    try:
        import voyageai
    except ImportError as exc:
        raise EmbeddingProviderError(
            "voyage: the voyageai package is not installed (pip install 'waggle-store[voyage]')",
            provider="voyage",
        ) from exc
    return voyageai


class VoyageEmbedder(RemoteEmbedder):
    """Voyage AI (``VOYAGE_API_KEY``); ``base_url`` like "https://api.voyageai.com/v1"."""

    provider = "voyage"
    # Voyage caps one request at 1,000 inputs and 320K tokens for its larger models.
    max_batch_items = 1000
    max_batch_chars = 320_000

    def __init__(
        self,
        model: str = "voyage-3-lite",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 15.0,
        retry: RetryPolicy | None = None,
        dimensions: int | None = None,
    ) -> None:
        key = api_key or os.environ.get("VOYAGE_API_KEY")
        if not key:
            raise EmbeddingProviderError(
                "voyage: no API key (pass api_key= or set VOYAGE_API_KEY)", provider="voyage"
            )
        super().__init__(model, dimensions=dimensions, retry=retry, timeout=timeout)
        self._voyageai = _import_voyageai()
        self.base_url = base_url.rstrip("/") if base_url else None
        self._api_key = key
        self._client = self._client_for(timeout)

    def _client_for(self, timeout: float) -> Any:
        # The SDK takes its timeout per client only; a probe's shorter one gets its own client.
        return self._voyageai.Client(
            api_key=self._api_key, max_retries=0, timeout=timeout, base_url=self.base_url
        )

    def _request(self, batch: list[str], kind: str, timeout: float) -> list[list[float]]:
        err = self._voyageai.error
        client = self._client if timeout == self.timeout else self._client_for(timeout)
        try:
            result = client.embed(batch, model=self.model, input_type=kind)
        except err.Timeout as exc:
            raise ProviderCallError(
                f"voyage: no answer within {timeout}s", provider=self.provider, retryable=True
            ) from exc
        except err.APIConnectionError as exc:
            raise ProviderCallError(
                f"voyage: cannot reach the API: {exc}", provider=self.provider, retryable=True
            ) from exc
        except err.VoyageError as exc:
            status = exc.http_status
            if isinstance(status, int) and status >= 400:
                raise classify_status(
                    self.provider,
                    status,
                    str(exc.user_message),
                    body=exc.json_body if exc.json_body is not None else exc.http_body,
                    headers=exc.headers,
                ) from exc
            raise ProviderCallError(
                f"voyage: malformed response: {exc}", provider=self.provider, status=status
            ) from exc
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ProviderCallError(
                f"voyage: malformed response: {exc!r}", provider=self.provider
            ) from exc
        embeddings = getattr(result, "embeddings", None)
        if not isinstance(embeddings, list):
            raise ProviderCallError(
                "voyage: malformed response: no embeddings", provider=self.provider
            )
        return [list(vec) for vec in embeddings]


__all__ = ["VoyageEmbedder"]

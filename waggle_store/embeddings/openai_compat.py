"""OpenAI and any OpenAI-compatible endpoint (LiteLLM proxy, vLLM, ...), through the openai SDK.

The SDK is imported only when one of these embedders is built (extra ``openai``), and its own
retries are off: :mod:`waggle_store.embeddings.retry` decides.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from waggle_store.embeddings.remote import RemoteEmbedder
from waggle_store.embeddings.retry import ProviderCallError, RetryPolicy, classify_status
from waggle_store.errors import EmbeddingProviderError, InvalidInputError

if TYPE_CHECKING:
    import openai

# OpenAI caps one request at 2,048 inputs and 300,000 tokens.
_MAX_ITEMS = 2048
_MAX_CHARS = 300_000


def _import_openai(provider: str) -> Any:
    try:
        import openai
    except ImportError as exc:
        raise EmbeddingProviderError(
            f"{provider}: the openai package is not installed (pip install 'waggle-store[openai]')",
            provider=provider,
        ) from exc
    return openai


class _OpenAICompatibleEmbedder(RemoteEmbedder):
    max_batch_items = _MAX_ITEMS
    max_batch_chars = _MAX_CHARS

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None,
        dimensions: int | None,
        send_dimensions: bool,
        timeout: float,
        retry: RetryPolicy | None,
    ) -> None:
        if dimensions is not None and (isinstance(dimensions, bool) or dimensions < 1):
            raise InvalidInputError(f"dimensions must be a positive int, got {dimensions!r}")
        super().__init__(model, dimensions=dimensions, retry=retry, timeout=timeout)
        self._openai = _import_openai(self.provider)
        self.base_url = base_url
        self._send_dimensions = send_dimensions
        self._client: openai.OpenAI = self._openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    def close(self) -> None:
        self._client.close()

    def _request(self, batch: list[str], kind: str, timeout: float) -> list[list[float]]:
        sdk = self._openai
        extra: dict[str, Any] = {}
        if self._send_dimensions and self._dimensions is not None:
            extra["dimensions"] = self._dimensions
        try:
            response = self._client.embeddings.create(
                model=self.model, input=batch, encoding_format="float", timeout=timeout, **extra
            )
        except sdk.APITimeoutError as exc:
            raise ProviderCallError(
                f"{self.provider}: no answer within {timeout}s",
                provider=self.provider,
                retryable=True,
            ) from exc
        except sdk.APIConnectionError as exc:
            raise ProviderCallError(
                f"{self.provider}: cannot reach {self._client.base_url}: {exc}",
                provider=self.provider,
                retryable=True,
            ) from exc
        except sdk.APIStatusError as exc:
            raise classify_status(
                self.provider,
                exc.status_code,
                exc.message,
                body=exc.body,
                headers=exc.response.headers,
            ) from exc
        except (sdk.APIError, ValueError, TypeError) as exc:
            # APIResponseValidationError, or a body that is not the JSON it claims to be.
            raise ProviderCallError(
                f"{self.provider}: malformed response: {exc}", provider=self.provider
            ) from exc
        try:
            items = sorted(response.data, key=lambda d: d.index)
            return [list(item.embedding) for item in items]
        except (AttributeError, TypeError) as exc:
            raise ProviderCallError(
                f"{self.provider}: malformed response: {type(response).__name__} has no embeddings",
                provider=self.provider,
            ) from exc


class OpenAIEmbedder(_OpenAICompatibleEmbedder):
    """OpenAI embeddings (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``).

    ``dimensions`` asks a text-embedding-3 model for a shorter vector (the API shortens and
    re-normalises it), which is how a smaller index is obtained without truncating by hand.
    """

    provider = "openai"

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dimensions: int | None = None,
        timeout: float = 15.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise EmbeddingProviderError(
                "openai: no API key (pass api_key= or set OPENAI_API_KEY)", provider="openai"
            )
        super().__init__(
            model,
            api_key=key,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
            dimensions=dimensions,
            send_dimensions=dimensions is not None,
            timeout=timeout,
            retry=retry,
        )


def litellm_base_url(base_url: str) -> str:
    """The SDK base URL for a proxy URL given with or without a trailing ``/v1``: the endpoint
    lives at ``<url without trailing /v1>/v1/embeddings``."""
    url = base_url.strip().rstrip("/")
    url = url.removesuffix("/v1")
    return f"{url}/v1"


class LiteLLMEmbedder(_OpenAICompatibleEmbedder):
    """Any OpenAI-compatible embeddings endpoint, e.g. a LiteLLM proxy.

    Such proxies often need no key; the SDK insists on one, so a placeholder is sent then.
    """

    provider = "litellm"

    def __init__(
        self,
        model: str = "text-embedding",
        *,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 15.0,
        dimensions: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not base_url:
            raise InvalidInputError("LiteLLMEmbedder needs base_url (the proxy's address)")
        super().__init__(
            model,
            api_key=api_key or "no-key",
            base_url=litellm_base_url(base_url),
            dimensions=dimensions,
            send_dimensions=False,
            timeout=timeout,
            retry=retry,
        )


def litellm_from_env() -> LiteLLMEmbedder:
    """A LiteLLMEmbedder from ``LITELLM_BASE_URL`` (or ``LITELLM_PROXY_API_BASE``) and its key.

    A proxy has no conventional default address, so without one this raises instead of guessing.
    """
    base_url = os.environ.get("LITELLM_BASE_URL") or os.environ.get("LITELLM_PROXY_API_BASE")
    if not base_url:
        raise EmbeddingProviderError(
            "litellm: no endpoint (set LITELLM_BASE_URL, or pass a LiteLLMEmbedder instance)",
            provider="litellm",
        )
    key = os.environ.get("LITELLM_API_KEY") or os.environ.get("LITELLM_PROXY_API_KEY")
    return LiteLLMEmbedder(base_url=base_url, api_key=key)


__all__ = ["LiteLLMEmbedder", "OpenAIEmbedder", "litellm_base_url", "litellm_from_env"]

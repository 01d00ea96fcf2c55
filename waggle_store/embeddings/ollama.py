"""Ollama's ``/api/embed`` endpoint, spoken directly over httpx (Ollama has no SDK we need).

httpx is imported when an Ollama embedder is built, not with this module: the provider table
imports every provider, and httpx (with what it pulls in) would slow every
``import waggle_store``.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from waggle_store.embeddings.remote import RemoteEmbedder
from waggle_store.embeddings.retry import ProviderCallError, RetryPolicy, classify_status

if TYPE_CHECKING:
    import httpx

DEFAULT_HOST = "http://localhost:11434"
_DEFAULT_PORT = 11434


def normalize_host(host: str) -> str:
    """Accept what ``OLLAMA_HOST`` accepts: "host", "host:port", "0.0.0.0", or a full URL."""
    import httpx

    host = host.strip().rstrip("/")
    if "://" not in host:
        host = f"http://{host}"
    url = httpx.URL(host)
    # 0.0.0.0 is where a server listens, not an address a client can reach it on.
    hostname = "127.0.0.1" if url.host in ("0.0.0.0", "") else url.host
    port = url.port or (_DEFAULT_PORT if url.scheme == "http" else None)
    netloc = f"[{hostname}]" if ":" in hostname else hostname
    if port is not None:
        netloc = f"{netloc}:{port}"
    path = url.path.rstrip("/")
    return f"{url.scheme}://{netloc}{path}"


class OllamaEmbedder(RemoteEmbedder):
    """An Ollama server (``OLLAMA_HOST``, default http://localhost:11434)."""

    provider = "ollama"
    max_batch_items = 256

    def __init__(
        self,
        model: str = "nomic-embed-text",
        *,
        host: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        dimensions: int | None = None,
    ) -> None:
        import httpx

        super().__init__(model, dimensions=dimensions, retry=retry, timeout=timeout)
        self.host = normalize_host(host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST)
        self._client = httpx.Client(base_url=self.host, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def _request(self, batch: list[str], kind: str, timeout: float) -> list[list[float]]:
        import httpx

        try:
            response = self._client.post(
                "/api/embed", json={"model": self.model, "input": batch}, timeout=timeout
            )
        except httpx.TimeoutException as exc:
            raise ProviderCallError(
                f"ollama: no answer from {self.host} within {timeout}s",
                provider=self.provider,
                retryable=True,
            ) from exc
        except httpx.TransportError as exc:
            raise ProviderCallError(
                f"ollama: cannot reach {self.host}: {exc}", provider=self.provider, retryable=True
            ) from exc
        if response.status_code >= 400:
            body = _json_or_text(response)
            message = body.get("error", body) if isinstance(body, dict) else body
            if response.status_code == 404:
                message = f"{message} (is the model pulled? `ollama pull {self.model}`)"
            raise classify_status(
                self.provider,
                response.status_code,
                str(message),
                body=body,
                headers=response.headers,
            )
        try:
            data = response.json()
            embeddings = data["embeddings"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderCallError(
                f"ollama: malformed response (expected JSON with 'embeddings'): "
                f"{response.text[:200]!r}",
                provider=self.provider,
                status=response.status_code,
            ) from exc
        if not isinstance(embeddings, list):
            raise ProviderCallError(
                "ollama: malformed response: 'embeddings' is not a list",
                provider=self.provider,
                status=response.status_code,
            )
        return embeddings


def _json_or_text(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (ValueError, json.JSONDecodeError):
        return response.text[:500]


__all__ = ["OllamaEmbedder", "normalize_host"]

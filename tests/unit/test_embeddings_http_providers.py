"""The remote providers against a real HTTP server on 127.0.0.1, through the real SDK code paths.

Every failure case asserts how many requests reached the server and what the caller got: the
retry policy is only as good as the number of times it knocks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import pytest

from waggle_store.embeddings import (
    LiteLLMEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    RetryPolicy,
    VoyageEmbedder,
)
from waggle_store.embeddings.remote import RemoteEmbedder
from waggle_store.errors import EmbeddingProviderError

from embedding_http import EmbeddingServer, Reply, closed_port_url, embedding_server, fake_vector

__all__ = ["embedding_server"]  # the fixture, imported for pytest

FAST = RetryPolicy(
    max_attempts=3, initial_wait=0.01, max_wait=0.05, retry_after_cap=5.0, deadline=10
)
PROVIDERS = ["openai", "voyage", "ollama", "litellm"]

Factory = Callable[..., RemoteEmbedder]


def make(provider: str, base: str, **kw: Any) -> RemoteEmbedder:
    """Build ``provider`` pointed at ``base`` (the server's root URL)."""
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 5.0)
    if provider == "openai":
        return OpenAIEmbedder(api_key="sk-test", base_url=base + "/openai/v1", **kw)
    if provider == "voyage":
        return VoyageEmbedder(api_key="pa-test", base_url=base + "/voyage/v1", **kw)
    if provider == "ollama":
        return OllamaEmbedder(host=base, **kw)
    if provider == "litellm":
        return LiteLLMEmbedder(base_url=base + "/openai", **kw)
    raise AssertionError(provider)


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def unit(vec: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vec))
    return [x / norm for x in vec]


def assert_close(a: list[float], b: list[float]) -> None:
    assert a == pytest.approx(b, abs=1e-6)


# -- success ---------------------------------------------------------------------------------


def test_success_returns_unit_vectors_learns_dimension(
    embedding_server: EmbeddingServer, provider: str
) -> None:
    emb = make(provider, embedding_server.url)
    vectors = emb.embed_documents(["alpha", "beta", "gamma"])
    assert embedding_server.count == 1
    assert len(vectors) == 3
    for text, vec in zip(["alpha", "beta", "gamma"], vectors, strict=True):
        assert_close(vec, unit(fake_vector(text, 8)))
    assert emb.dimensions == 8
    assert emb.model_id == f"{emb.provider}/{emb.model}/8"
    assert embedding_server.count == 1  # dimension was learned, not probed again


def test_request_format_and_input_type(embedding_server: EmbeddingServer, provider: str) -> None:
    emb = make(provider, embedding_server.url)
    emb.embed_documents(["a document"])
    emb.embed_query("a query")
    first, second = (r.body for r in embedding_server.requests)
    assert first["model"] == emb.model
    assert first["input"] == ["a document"]
    if provider == "voyage":
        assert (first["input_type"], second["input_type"]) == ("document", "query")
        assert embedding_server.requests[0].path == "/voyage/v1/embeddings"
    elif provider == "ollama":
        assert embedding_server.requests[0].path == "/api/embed"
    else:
        assert first["encoding_format"] == "float"
        assert embedding_server.requests[0].path == "/openai/v1/embeddings"
        assert "dimensions" not in first


def test_openai_sends_configured_dimensions(embedding_server: EmbeddingServer) -> None:
    emb = OpenAIEmbedder(
        "text-embedding-3-large",
        api_key="sk-test",
        base_url=embedding_server.openai_base_url,
        dimensions=8,
        retry=FAST,
    )
    assert emb.dimensions == 8
    assert embedding_server.count == 0  # a configured dimension needs no probe
    emb.embed_query("x")
    assert embedding_server.requests[0].body["dimensions"] == 8
    assert embedding_server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_reading_unknown_dimension_probes_once(embedding_server: EmbeddingServer) -> None:
    emb = make("ollama", embedding_server.url)
    assert emb.dimensions == 8
    assert emb.dimensions == 8
    assert embedding_server.count == 1
    assert embedding_server.requests[0].body["input"] == ["waggle embedding probe"]


def test_batches_split_to_provider_limit(embedding_server: EmbeddingServer, provider: str) -> None:
    emb = make(provider, embedding_server.url)
    emb.max_batch_items = 2
    texts = [f"text {i}" for i in range(5)]
    vectors = emb.embed_documents(texts)
    assert [len(r.body["input"]) for r in embedding_server.requests] == [2, 2, 1]
    for text, vec in zip(texts, vectors, strict=True):
        assert_close(vec, unit(fake_vector(text, 8)))


def test_empty_input_makes_no_request(embedding_server: EmbeddingServer, provider: str) -> None:
    assert make(provider, embedding_server.url).embed_documents([]) == []
    assert embedding_server.count == 0


# -- retried failures ------------------------------------------------------------------------


def test_429_retry_after_is_honoured(embedding_server: EmbeddingServer, provider: str) -> None:
    embedding_server.script(
        Reply.error(429, "slow down", code="rate_limit_exceeded", retry_after=1)
    )
    emb = make(provider, embedding_server.url)
    vec = emb.embed_query("hello")
    assert len(vec) == 8
    first, second = embedding_server.requests
    assert embedding_server.count == 2
    # The backoff alone would wait at most 0.05 s: only Retry-After explains a full second.
    assert second.at - first.at >= 0.95


def test_retry_after_is_capped(embedding_server: EmbeddingServer) -> None:
    embedding_server.script(Reply.error(429, "slow down", retry_after=3600))
    policy = RetryPolicy(max_attempts=2, initial_wait=0.01, max_wait=0.05, retry_after_cap=0.2)
    emb = make("openai", embedding_server.url, retry=policy)
    started = time.monotonic()
    emb.embed_query("hello")
    assert embedding_server.count == 2
    assert time.monotonic() - started < 3


def test_500_twice_then_success(embedding_server: EmbeddingServer, provider: str) -> None:
    embedding_server.script(Reply.error(500, "boom"), Reply.error(500, "boom"))
    vectors = make(provider, embedding_server.url).embed_documents(["a", "b"])
    assert embedding_server.count == 3
    assert len(vectors) == 2


def test_5xx_exhausts_attempts(embedding_server: EmbeddingServer, provider: str) -> None:
    embedding_server.script(*[Reply.error(503, "overloaded")] * 5)
    with pytest.raises(EmbeddingProviderError) as info:
        make(provider, embedding_server.url).embed_query("x")
    assert embedding_server.count == 3
    assert info.value.status == 503
    assert info.value.provider == provider
    assert "after 3 attempts" in str(info.value)


def test_hang_past_timeout(embedding_server: EmbeddingServer, provider: str) -> None:
    embedding_server.script(Reply.hanging(5), Reply.hanging(5))
    policy = RetryPolicy(max_attempts=2, initial_wait=0.01, max_wait=0.05)
    emb = make(provider, embedding_server.url, retry=policy, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(EmbeddingProviderError) as info:
        emb.embed_query("x")
    assert time.monotonic() - started < 4
    assert embedding_server.count == 2
    assert info.value.status is None
    assert "timeout" in type(info.value.__cause__).__name__.lower() or "within" in str(info.value)


def test_connection_refused(provider: str) -> None:
    emb = make(provider, closed_port_url())
    with pytest.raises(EmbeddingProviderError) as info:
        emb.embed_query("x")
    assert info.value.status is None
    assert info.value.provider == provider
    assert "after 3 attempts" in str(info.value)  # connection errors are retried
    assert info.value.__cause__ is not None


# -- never retried ---------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(
    embedding_server: EmbeddingServer, provider: str, status: int
) -> None:
    embedding_server.script(Reply.error(status, "nope"))
    with pytest.raises(EmbeddingProviderError) as info:
        make(provider, embedding_server.url).embed_query("x")
    assert embedding_server.count == 1
    assert info.value.status == status
    assert info.value.retryable is False
    assert info.value.__cause__ is not None  # the SDK's own exception, for debugging


def test_insufficient_quota_429_is_not_retried(
    embedding_server: EmbeddingServer, provider: str
) -> None:
    embedding_server.script(
        Reply.error(
            429, "You exceeded your current quota", code="insufficient_quota", retry_after=0
        )
    )
    with pytest.raises(EmbeddingProviderError) as info:
        make(provider, embedding_server.url).embed_query("x")
    assert embedding_server.count == 1
    assert info.value.status == 429
    assert "insufficient_quota" in str(info.value)


def test_malformed_json_is_not_retried(embedding_server: EmbeddingServer, provider: str) -> None:
    embedding_server.script(Reply.malformed())
    with pytest.raises(EmbeddingProviderError) as info:
        make(provider, embedding_server.url).embed_query("x")
    assert embedding_server.count == 1
    assert "malformed" in str(info.value)


def test_wrong_dimension_is_not_retried(embedding_server: EmbeddingServer, provider: str) -> None:
    embedding_server.script(Reply.ok(dims=7))
    emb = make(provider, embedding_server.url, dimensions=8)
    with pytest.raises(EmbeddingProviderError) as info:
        emb.embed_query("x")
    assert embedding_server.count == 1
    assert "dimension" in str(info.value)


def test_dimension_change_after_learning_is_an_error(embedding_server: EmbeddingServer) -> None:
    emb = make("ollama", embedding_server.url)
    emb.embed_query("first")
    embedding_server.script(Reply.ok(dims=16))
    with pytest.raises(EmbeddingProviderError, match="dimension"):
        emb.embed_query("second")
    assert embedding_server.count == 2
    assert emb.dimensions == 8


def test_missing_api_keys_fail_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(EmbeddingProviderError, match="OPENAI_API_KEY"):
        OpenAIEmbedder()
    with pytest.raises(EmbeddingProviderError, match="VOYAGE_API_KEY"):
        VoyageEmbedder()


def test_environment_configures_openai_and_ollama(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", embedding_server.openai_base_url)
    monkeypatch.setenv("OLLAMA_HOST", embedding_server.url.removeprefix("http://"))
    OpenAIEmbedder(retry=FAST).embed_query("x")
    OllamaEmbedder(retry=FAST).embed_query("x")
    assert embedding_server.requests[0].headers["authorization"] == "Bearer sk-env"
    assert [r.path for r in embedding_server.requests] == ["/openai/v1/embeddings", "/api/embed"]

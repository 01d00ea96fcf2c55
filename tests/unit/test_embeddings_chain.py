"""resolve_embedder / EmbeddingChain: "auto" probing order, fallback, explicit failures, status.

No test here touches the real network: Ollama points at the local test server or a closed local
port, API keys are removed (or point at the local server), and the local provider is made
unavailable unless a test wants it.
"""

from __future__ import annotations

import warnings

import pytest

from waggle_store.embeddings import (
    EmbeddingChain,
    EmbeddingFallbackWarning,
    HashingEmbedder,
    OllamaEmbedder,
    RetryPolicy,
    resolve_embedder,
)
from waggle_store.embeddings import registry as registry_module
from waggle_store.errors import EmbeddingProviderError, InvalidInputError

from embedding_http import EmbeddingServer, Reply, closed_port_url, embedding_server

__all__ = ["embedding_server"]

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing answers unless a test says so."""
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "VOYAGE_API_KEY",
        "LITELLM_BASE_URL",
        "LITELLM_PROXY_API_BASE",
        "LITELLM_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", closed_port_url())
    real = registry_module.package_available
    monkeypatch.setattr(
        registry_module,
        "package_available",
        lambda name: name != "sentence_transformers" and real(name),
    )


def resolve_quietly(spec: str, **kw: object) -> EmbeddingChain:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmbeddingFallbackWarning)
        chain = resolve_embedder(spec, **kw)  # type: ignore[arg-type]
        assert chain is not None
        chain.resolve()  # "auto" settles on first use; settle it here, where warnings are quiet
    return chain


def test_none_means_no_embedder() -> None:
    assert resolve_embedder(None) is None


def test_auto_falls_back_to_hashing_with_a_warning_and_reason() -> None:
    chain = resolve_embedder("auto")
    assert chain is not None
    with pytest.warns(EmbeddingFallbackWarning, match="no embedding provider answered"):
        assert chain.is_fallback is True  # settling "auto" (first use) is when it warns
    assert chain.provider == "hashing"
    assert isinstance(chain.active, HashingEmbedder)
    status = chain.status()
    assert status.active_provider == "hashing"
    assert status.available_providers == ["hashing"]
    assert status.dimensions == 384
    assert status.last_error is not None
    for reason in (
        "local: sentence-transformers not installed",
        "ollama:",
        "voyage: VOYAGE_API_KEY not set",
        "openai: OPENAI_API_KEY not set",
    ):
        assert reason in status.last_error
    assert len(chain.embed_query("still works")) == 384


def test_auto_stops_at_the_first_provider_that_answers(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", embedding_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", embedding_server.openai_base_url)
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingFallbackWarning)
        chain = resolve_embedder("auto")
        assert chain is not None
        assert chain.provider == "ollama"
    assert chain.is_fallback is False
    assert chain.model_id == "ollama/nomic-embed-text/8"
    # Ollama answered the probe; voyage and openai were never asked.
    assert [r.path for r in embedding_server.requests] == ["/api/embed"]
    status = chain.status()
    assert status.last_error is None
    assert status.available_providers == ["ollama", "hashing"]


def test_auto_does_not_move_on_to_openai_when_ollama_is_down(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API key in the environment is not consent to send text off this machine."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", embedding_server.openai_base_url)
    chain = resolve_quietly("auto")
    assert chain.provider == "hashing"
    assert embedding_server.requests == []
    assert "openai: sends text off this machine" in (chain.status().reason or "")


def test_auto_probe_is_a_single_attempt(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", embedding_server.url)
    embedding_server.script(Reply.error(503, "warming up"))
    chain = resolve_quietly("auto")
    assert chain.is_fallback
    assert embedding_server.count == 1
    assert "HTTP 503" in (chain.status().last_error or "")


def test_auto_respects_the_tier(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", embedding_server.openai_base_url)
    chain = resolve_quietly("auto", tier="FREE")
    assert chain.is_fallback
    assert embedding_server.count == 0  # openai is not a FREE provider: not even probed
    assert "openai: not allowed for tier FREE" in (chain.status().last_error or "")
    assert chain.status().tier == "FREE"


def test_explicit_provider_failing_its_probe_raises() -> None:
    with pytest.raises(EmbeddingProviderError) as info:
        resolve_embedder("ollama", probe_policy=RetryPolicy.no_retry())
    assert info.value.provider == "ollama"
    with pytest.raises(EmbeddingProviderError, match="OPENAI_API_KEY"):
        resolve_embedder("openai")
    with pytest.raises(EmbeddingProviderError, match="LITELLM_BASE_URL"):
        resolve_embedder("litellm")


def test_explicit_provider_probe_uses_retries(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", embedding_server.url)
    embedding_server.script(Reply.error(500, "boom"))
    chain = resolve_embedder("Ollama", probe_policy=FAST)
    assert chain is not None
    assert chain.provider == "ollama"
    assert embedding_server.count == 2


def test_explicit_litellm_from_environment(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_BASE_URL", embedding_server.url + "/openai/v1/")
    chain = resolve_embedder("litellm")
    assert chain is not None
    assert chain.model_id == "litellm/text-embedding/8"
    assert embedding_server.requests[0].headers["authorization"] == "Bearer no-key"


def test_explicit_hashing_is_not_a_fallback() -> None:
    chain = resolve_embedder("hashing")
    assert chain is not None
    assert chain.is_fallback is False
    assert chain.status().last_error is None


def test_unknown_provider_name() -> None:
    with pytest.raises(InvalidInputError, match="unknown embedding provider 'mock'"):
        resolve_embedder("mock")
    with pytest.raises(InvalidInputError):
        resolve_embedder(42)  # type: ignore[arg-type]


def test_instance_is_wrapped_without_a_probe(embedding_server: EmbeddingServer) -> None:
    emb = OllamaEmbedder(host=embedding_server.url, retry=FAST)
    chain = resolve_embedder(emb)
    assert chain is not None
    assert chain.active is emb
    status = chain.status()  # a status report makes no network call
    assert (status.active_provider, status.dimensions) == ("ollama", None)
    assert embedding_server.count == 0
    assert chain.dimensions == 8  # reading the dimension itself does probe, once
    assert chain.status().dimensions == 8
    assert embedding_server.count == 1
    assert resolve_embedder(chain) is chain


def test_runtime_failure_raises_and_is_recorded(embedding_server: EmbeddingServer) -> None:
    chain = resolve_embedder(OllamaEmbedder(host=embedding_server.url, retry=FAST))
    assert chain is not None
    assert len(chain.embed_documents(["ok"])[0]) == 8
    embedding_server.script(*[Reply.error(500, "down")] * 3)
    with pytest.raises(EmbeddingProviderError):
        chain.embed_documents(["no fake vector please"])
    assert "HTTP 500" in (chain.status().last_error or "")
    assert chain.provider == "ollama"  # no silent switch to another model


def test_reprobe_switches_from_fallback_when_a_provider_appears(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = resolve_quietly("auto")
    assert chain.is_fallback
    monkeypatch.setenv("OLLAMA_HOST", embedding_server.url)
    status = chain.reprobe()
    assert status.active_provider == "ollama"
    assert status.last_error is None
    assert chain.is_fallback is False
    assert chain.model_id == "ollama/nomic-embed-text/8"


def test_reprobe_of_explicit_provider_records_errors(embedding_server: EmbeddingServer) -> None:
    chain = resolve_embedder(OllamaEmbedder(host=embedding_server.url, retry=FAST))
    assert chain is not None
    embedding_server.script(*[Reply.error(500, "down")] * 3)
    assert "HTTP 500" in (chain.reprobe().last_error or "")
    assert chain.reprobe().last_error is None


def test_a_success_clears_the_last_error(embedding_server: EmbeddingServer) -> None:
    chain = resolve_embedder(OllamaEmbedder(host=embedding_server.url, retry=FAST))
    assert chain is not None
    embedding_server.script(*[Reply.error(500, "down")] * 3)
    with pytest.raises(EmbeddingProviderError):
        chain.embed_query("during the outage")
    failed = chain.status()
    assert "HTTP 500" in (failed.last_error or "")
    assert failed.last_error_at is not None
    assert failed.recovered_at is None
    chain.embed_query("after the outage")
    recovered = chain.status()
    assert recovered.last_error is None
    assert recovered.last_error_at is None
    assert recovered.recovered_at is not None


def test_the_fallback_reason_stays_while_the_fallback_answers(
    embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", embedding_server.url)
    embedding_server.script(Reply.error(503, "warming up"))
    chain = resolve_quietly("auto")
    chain.embed_query("hashing answers this")
    assert chain.is_fallback
    assert "HTTP 503" in (chain.status().last_error or "")

"""Privacy by default: "auto" never sends text off this machine unless the user named the
provider, ``health()`` says which provider and why, provider errors lose their credentials
before they are logged, stored or raised, and the user's text is never logged above DEBUG."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from sqlalchemy import select

import waggle_store as ws
from tests.conftest import Target
from waggle_store.embeddings import EmbeddingFallbackWarning
from waggle_store.embeddings import registry as registry_module
from waggle_store.embeddings.auto import plan_auto
from waggle_store.errors import scrub_secrets
from waggle_store.models import FrameEmbeddingRow

from embedding_http import EmbeddingServer, Reply, closed_port_url, embedding_server

__all__ = ["embedding_server"]

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-live-0123456789abcdefSECRET"
PROXY_PASSWORD = "hunter2proxy"


@pytest.fixture(autouse=True)
def developer_machine(monkeypatch: pytest.MonkeyPatch, embedding_server: EmbeddingServer) -> None:
    """An OpenAI key set for other reasons, a reachable OpenAI-compatible server, no local
    model, no Ollama, no WAGGLE_EMBEDDER."""
    for name in ("VOYAGE_API_KEY", "LITELLM_BASE_URL", "LITELLM_PROXY_API_BASE",
                 "WAGGLE_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", embedding_server.openai_base_url)
    monkeypatch.setenv("OLLAMA_HOST", closed_port_url())
    real = registry_module.package_available
    monkeypatch.setattr(registry_module, "package_available",
                        lambda name: name != "sentence_transformers" and real(name))


def test_auto_never_sends_text_to_a_remote_provider(
        target: Target, embedding_server: EmbeddingServer) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmbeddingFallbackWarning)
        store = target.open(embedder="auto")
        try:
            mind = store.mind("private")
            mind.cognify("my bank password hint is the dog's name")
            mind.search("bank password")
            health = store.health()
        finally:
            store.close()
    assert embedding_server.count == 0  # the OpenAI-compatible server never saw a request
    assert health.embedder is not None
    assert health.embedder.active_provider == "hashing"
    reason = health.embedder.reason or ""
    assert "openai: sends text off this machine" in reason
    assert "WAGGLE_EMBEDDER=openai" in reason  # how to choose it, named
    # Falling back to hashing is a degradation: health's reasons say so, and why.
    assert any("openai: sends text off this machine" in r for r in health.reasons)


def test_waggle_embedder_names_the_remote_provider(
        target: Target, embedding_server: EmbeddingServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAGGLE_EMBEDDER", "openai")
    store = target.open(embedder="auto")
    try:
        store.mind("m").cognify("sent because the user named the provider")
        status = store.embedding_status()
    finally:
        store.close()
    assert status.active_provider == "openai"
    assert status.reason == "named by WAGGLE_EMBEDDER (openai)"
    assert embedding_server.count >= 1


def test_remote_ollama_is_not_chosen_by_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://203.0.113.7:11434")
    assert "ollama" not in plan_auto(None, None).candidates
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11434")
    assert "ollama" in plan_auto(None, None).candidates


def _leaks(text: str | None) -> bool:
    return text is not None and (SECRET in text or PROXY_PASSWORD in text)


def test_provider_errors_are_scrubbed_everywhere(
        target: Target, embedding_server: EmbeddingServer,
        caplog: pytest.LogCaptureFixture) -> None:
    hostile = (f"upstream proxy http://bob:{PROXY_PASSWORD}@proxy.internal:3128 said no; "
               f"request had Authorization: Bearer {SECRET}")
    embedding_server.script(Reply.ok(), *[Reply.error(401, hostile)] * 5)
    caplog.set_level(logging.DEBUG, logger="waggle_store")
    store = target.open(embedder="openai")
    try:
        result = store.mind("m").cognify("text whose embedding fails")
        with store.read() as session:
            stored = session.scalar(select(FrameEmbeddingRow.error).where(
                FrameEmbeddingRow.frame_id == result.frame_id))
        status = store.embedding_status()
        health = store.health()
    finally:
        store.close()
    assert embedding_server.count >= 2  # the probe, then the failed embedding
    assert result.vector_status != "ready"
    assert result.vector_error
    assert "***" in result.vector_error
    assert not _leaks(result.vector_error)
    assert stored
    assert "***" in stored
    assert not _leaks(stored)
    assert status.last_error
    assert not _leaks(status.last_error)
    assert not any(_leaks(r) for r in health.reasons)
    assert not any(_leaks(r.getMessage()) for r in caplog.records)

    embedding_server.script(Reply.error(401, hostile))
    with pytest.raises(ws.EmbeddingProviderError) as raised:
        target.open(embedder="openai")  # the probe of a named provider fails: raised
    assert "***" in str(raised.value)
    assert not _leaks(str(raised.value))
    assert raised.value.__cause__ is None or not _leaks(str(raised.value.__cause__))


def test_scrub_secrets_masks_each_kind_of_credential() -> None:
    text = scrub_secrets(
        f"http://u:{PROXY_PASSWORD}@h/x api_key={SECRET}&x=1 "
        f"{{'Authorization': 'Bearer {SECRET}'}} token: {SECRET} bare {SECRET}"
    )
    assert not _leaks(text)
    assert "http://***@h/x" in text


def test_an_external_search_failure_logs_no_query_above_debug(
        caplog: pytest.LogCaptureFixture, store_factory: object) -> None:
    class Failing:
        def search(self, query: str, limit: int) -> list[object]:
            raise RuntimeError(f"backend at http://svc:{PROXY_PASSWORD}@10.0.0.1 down")

    caplog.set_level(logging.DEBUG)
    store = store_factory()  # type: ignore[operator]
    ws.CombinedRetrieval(workspace=store.mind("m"), external=Failing()).search(
        "what is alice's salary", limit=5)
    above_debug = [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG]
    assert above_debug, "the failure is still reported"
    assert not any("salary" in m or PROXY_PASSWORD in m for m in above_debug)


@pytest.mark.sqlite
def test_the_cli_health_says_which_provider_and_why(tmp_path: Path,
                                                    embedding_server: EmbeddingServer) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with ws.open_store(url, embedder=None):
        pass
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WAGGLE_", "OLLAMA"))}
    env.update(PYTHONPATH=str(REPO), OPENAI_API_KEY=SECRET, OLLAMA_HOST=closed_port_url(),
               OPENAI_BASE_URL=embedding_server.openai_base_url, PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-m", "waggle_store", "--url", url, "health",
                           "--json"], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    reason = json.loads(done.stdout)["embedder"]["reason"]
    assert "openai: sends text off this machine" in reason
    assert SECRET not in done.stdout
    assert embedding_server.count == 0

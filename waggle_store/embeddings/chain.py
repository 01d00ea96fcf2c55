"""Choosing the embedder: "auto" probing, explicit providers, tier checks, and status.

"auto" probes ``local → ollama → voyage → openai`` and stops at the first that answers (the seed
probed every provider even after a success, making remote calls at startup for nothing, §23.15).
When nothing answers it falls back to hashing, loudly: a warning, ``is_fallback`` and
``status().last_error``. An explicitly named provider that does not answer raises instead: a
caller who asked for OpenAI must not silently get vectors of another model.

A failure while embedding later is raised, never papered over with a fake vector (the seed
returned a mock vector and counted it as usage).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import threading
import warnings
from collections.abc import Callable, Sequence

from waggle_store.embeddings.base import PROBE_TEXT, Embedder
from waggle_store.embeddings.hashing import HashingEmbedder
from waggle_store.embeddings.retry import RetryPolicy
from waggle_store.embeddings.tiers import TierPolicy
from waggle_store.errors import (
    EmbeddingProviderError,
    InvalidInputError,
    TierError,
    WaggleStoreError,
)
from waggle_store.records import EmbedderStatus

#: The seed's probe order. litellm is not in it: it needs an address nobody has by default.
AUTO_ORDER = ("local", "ollama", "voyage", "openai")
PROVIDER_NAMES = ("local", "ollama", "voyage", "openai", "litellm", "hashing")
_ALIASES = {"inprocess": "local", "sentence-transformers": "local"}


class EmbeddingFallbackWarning(UserWarning):
    """No embedding provider answered; the store uses lexical hashing vectors."""


def _package_available(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _skip_reason(provider: str) -> str | None:
    """Why "auto" does not even try ``provider`` (no package, no key), or None to probe it."""
    if provider == "local" and not _package_available("sentence_transformers"):
        return "sentence-transformers not installed"
    if provider == "voyage":
        if not os.environ.get("VOYAGE_API_KEY"):
            return "VOYAGE_API_KEY not set"
        if not _package_available("voyageai"):
            return "voyageai not installed"
    if provider == "openai":
        if not os.environ.get("OPENAI_API_KEY"):
            return "OPENAI_API_KEY not set"
        if not _package_available("openai"):
            return "openai not installed"
    return None


def build_provider(name: str) -> Embedder:
    """Construct a provider by name from its defaults and the environment (no network call)."""
    from waggle_store.embeddings.local import LocalEmbedder
    from waggle_store.embeddings.ollama import OllamaEmbedder

    if name == "local":
        return LocalEmbedder()
    if name == "ollama":
        return OllamaEmbedder()
    if name == "voyage":
        from waggle_store.embeddings.voyage import VoyageEmbedder

        return VoyageEmbedder()
    if name == "openai":
        from waggle_store.embeddings.openai_compat import OpenAIEmbedder

        return OpenAIEmbedder()
    if name == "litellm":
        from waggle_store.embeddings.openai_compat import LiteLLMEmbedder

        base_url = os.environ.get("LITELLM_BASE_URL") or os.environ.get("LITELLM_PROXY_API_BASE")
        if not base_url:
            raise EmbeddingProviderError(
                "litellm: no endpoint (set LITELLM_BASE_URL, or pass a LiteLLMEmbedder instance)",
                provider="litellm",
            )
        key = os.environ.get("LITELLM_API_KEY") or os.environ.get("LITELLM_PROXY_API_KEY")
        return LiteLLMEmbedder(base_url=base_url, api_key=key)
    if name == "hashing":
        return HashingEmbedder()
    raise InvalidInputError(
        f"unknown embedding provider {name!r}; expected 'auto', None, an Embedder, "
        f"or one of {', '.join(PROVIDER_NAMES)}"
    )


def probe(embedder: Embedder, policy: RetryPolicy | None = None) -> None:
    """Make one real embedding; raise EmbeddingProviderError if the provider does not answer."""
    probe_fn: Callable[..., object] | None = getattr(embedder, "probe", None)
    try:
        if probe_fn is not None:
            probe_fn(policy)
        else:
            embedder.embed_query(PROBE_TEXT)
    except EmbeddingProviderError:
        raise
    except WaggleStoreError as exc:
        raise EmbeddingProviderError(
            f"{embedder.provider}: probe failed: {exc}", provider=embedder.provider
        ) from exc


class EmbeddingChain:
    """The store's embedder: delegates to the active provider and reports how it was chosen."""

    def __init__(
        self,
        active: Embedder,
        *,
        spec: str | None,
        tier: str | None = None,
        tier_policy: TierPolicy | None = None,
        is_fallback: bool = False,
        last_error: str | None = None,
        probe_policy: RetryPolicy | None = None,
    ) -> None:
        self._active = active
        self._spec = spec
        self._tier = tier
        self._policy = tier_policy
        self._probe_policy = probe_policy
        self.is_fallback = is_fallback
        self._last_error = last_error
        self._lock = threading.Lock()

    # -- the Embedder protocol, delegated ---------------------------------------------------

    @property
    def active(self) -> Embedder:
        return self._active

    @property
    def provider(self) -> str:
        return self._active.provider

    @property
    def model(self) -> str:
        return self._active.model

    @property
    def dimensions(self) -> int:
        return self._active.dimensions

    @property
    def model_id(self) -> str:
        return self._active.model_id

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            return self._active.embed_documents(texts)
        except EmbeddingProviderError as exc:
            self._last_error = str(exc)
            raise

    def embed_query(self, text: str) -> list[float]:
        try:
            return self._active.embed_query(text)
        except EmbeddingProviderError as exc:
            self._last_error = str(exc)
            raise

    # -- status -----------------------------------------------------------------------------

    def status(self) -> EmbedderStatus:
        active = self._active
        available = [active.provider]
        if active.provider != "hashing":
            available.append("hashing")
        # A status report must not make network calls or load models: read what is known.
        missing = object()
        known = inspect.getattr_static(active, "known_dimensions", missing)
        dims: int | None
        if known is missing:
            dims = active.dimensions
        else:
            dims = getattr(active, "known_dimensions", None)
        return EmbedderStatus(
            active_provider=active.provider,
            model=active.model,
            dimensions=dims,
            available_providers=available,
            last_error=self._last_error,
            tier=self._tier,
        )

    def reprobe(self) -> EmbedderStatus:
        """Probe again: "auto" may switch provider (e.g. Ollama came up); others record errors."""
        with self._lock:
            if self._spec == "auto":
                fresh = _resolve_auto(self._tier, self._policy, self._probe_policy)
                self._active = fresh._active
                self.is_fallback = fresh.is_fallback
                self._last_error = fresh._last_error
            else:
                try:
                    probe(self._active, self._probe_policy)
                    self._last_error = None
                except EmbeddingProviderError as exc:
                    self._last_error = str(exc)
        return self.status()

    def __repr__(self) -> str:
        extra = ", fallback" if self.is_fallback else ""
        return f"EmbeddingChain({self._active!r}{extra})"


def _looks_like_embedder(obj: object) -> bool:
    # Not isinstance(obj, Embedder): on Python 3.11 a runtime protocol check reads every
    # attribute, and reading a remote embedder's ``dimensions`` makes a network call.
    needed = ("provider", "model", "dimensions", "model_id", "embed_documents", "embed_query")
    missing = object()
    return all(inspect.getattr_static(obj, name, missing) is not missing for name in needed)


def _check_tier(provider: str, tier: str | None, policy: TierPolicy) -> None:
    if tier is None or policy.allows(tier, provider):
        return
    required = policy.minimum_tier_for(provider)
    raise TierError(
        required=required or "no tier", actual=policy.canonical(tier), provider=provider
    )


def _resolve_auto(
    tier: str | None, policy: TierPolicy | None, probe_policy: RetryPolicy | None
) -> EmbeddingChain:
    reasons: list[str] = []
    for name in AUTO_ORDER:
        if tier is not None and policy is not None and not policy.allows(tier, name):
            reasons.append(f"{name}: not allowed for tier {policy.canonical(tier)}")
            continue
        skip = _skip_reason(name)
        if skip is not None:
            reasons.append(f"{name}: {skip}")
            continue
        try:
            embedder = build_provider(name)
            probe(embedder, probe_policy or RetryPolicy.no_retry())
        except EmbeddingProviderError as exc:
            reasons.append(str(exc) if str(exc).startswith(name) else f"{name}: {exc}")
            continue
        return EmbeddingChain(
            embedder, spec="auto", tier=tier, tier_policy=policy, probe_policy=probe_policy
        )
    why = (
        "no embedding provider answered; using lexical hashing vectors (" + "; ".join(reasons) + ")"
    )
    warnings.warn(why, EmbeddingFallbackWarning, stacklevel=3)
    return EmbeddingChain(
        HashingEmbedder(),
        spec="auto",
        tier=tier,
        tier_policy=policy,
        is_fallback=True,
        last_error=why,
        probe_policy=probe_policy,
    )


def resolve_embedder(
    spec: str | Embedder | None,
    *,
    tier: str | None = None,
    tier_policy: TierPolicy | None = None,
    probe_policy: RetryPolicy | None = None,
) -> EmbeddingChain | None:
    """Turn ``open_store(embedder=...)`` into the embedder a store uses (None = no vectors).

    ``tier`` turns on tier enforcement against ``tier_policy`` (default: the seed's table).
    ``probe_policy`` governs probes: "auto" defaults to one attempt per provider, so an absent
    Ollama costs one refused connection; an explicit provider defaults to its own retry policy.
    """
    if spec is None:
        return None
    policy = tier_policy if tier_policy is not None else TierPolicy.default()
    if tier is not None:
        tier = policy.canonical(tier)  # raises InvalidInputError for an unknown tier
    if isinstance(spec, EmbeddingChain):
        _check_tier(spec.provider, tier, policy)
        return spec
    if not isinstance(spec, str):
        if not _looks_like_embedder(spec):
            raise InvalidInputError(
                f"embedder must be 'auto', a provider name, an Embedder or None; got {spec!r}"
            )
        _check_tier(spec.provider, tier, policy)
        return EmbeddingChain(spec, spec=None, tier=tier, tier_policy=policy)
    name = spec.strip().lower()
    name = _ALIASES.get(name, name)
    if name == "auto":
        return _resolve_auto(tier, policy, probe_policy)
    if name not in PROVIDER_NAMES:
        build_provider(name)  # raises InvalidInputError naming the valid choices
    _check_tier(name, tier, policy)
    embedder = build_provider(name)
    probe(embedder, probe_policy)
    return EmbeddingChain(
        embedder, spec=name, tier=tier, tier_policy=policy, probe_policy=probe_policy
    )


__all__ = [
    "AUTO_ORDER",
    "PROVIDER_NAMES",
    "EmbeddingChain",
    "EmbeddingFallbackWarning",
    "build_provider",
    "probe",
    "resolve_embedder",
]

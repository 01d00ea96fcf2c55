"""Choosing the embedder: "auto", explicit providers, tier checks, and status.

"auto" is planned at open from what is installed and configured (no network, no torch, see
:mod:`waggle_store.embeddings.auto`) and settled on first use: the first read of ``provider``,
``model``, ``dimensions`` or ``model_id``, or the first embedding, picks the provider (probing
with short timeouts) and the choice is remembered. When nothing answers it falls back to
hashing, loudly: a warning, ``is_fallback`` and ``status().last_error``. An explicitly named
provider is probed at once and raises if it does not answer: a caller who asked for OpenAI must
not silently get vectors of another model (an in-process model whose files are installed is
the exception: probing it would mean loading it, so it loads on the first embedding instead).

A failure while embedding later is raised, never papered over with a fake vector (a mock
vector would be stored as if it meant something, and counted as usage).
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Sequence
from datetime import datetime

from waggle_store.embeddings.auto import (
    AUTO_PROBE_TIMEOUT,
    AutoPlan,
    Choice,
    EmbeddingFallbackWarning,
    choose,
    plan_auto,
    probe,
)
from waggle_store.embeddings.base import Embedder, embeds_beside_reads
from waggle_store.embeddings.registry import (
    AUTO_ORDER,
    PROVIDER_NAMES,
    build_provider,
    canonical_name,
    provider_spec,
)
from waggle_store.embeddings.retry import RetryPolicy
from waggle_store.embeddings.sentences import text_form_of
from waggle_store.embeddings.tiers import TierPolicy
from waggle_store.errors import (
    EmbeddingProviderError,
    InvalidInputError,
    TierError,
    scrub_secrets,
)
from waggle_store.records import EmbedderStatus
from waggle_store.timeutil import utcnow


class EmbeddingChain:
    """The store's embedder: delegates to the active provider and reports how it was chosen.

    Built with ``active=None`` and an :class:`AutoPlan` it is "auto" not yet settled: the first
    read of an identity attribute or the first embedding settles it (once, under a lock).
    """

    def __init__(
        self,
        active: Embedder | None,
        *,
        spec: str | None,
        tier: str | None = None,
        tier_policy: TierPolicy | None = None,
        is_fallback: bool = False,
        last_error: str | None = None,
        probe_policy: RetryPolicy | None = None,
        plan: AutoPlan | None = None,
        probe_timeout: float | None = None,
        reason: str | None = None,
    ) -> None:
        if active is None and plan is None:
            raise InvalidInputError("EmbeddingChain needs an active embedder or an auto plan")
        self._active = active
        self._spec = spec
        self._tier = tier
        self._policy = tier_policy
        self._probe_policy = probe_policy
        self._probe_timeout = probe_timeout
        self._plan = plan
        self._is_fallback = is_fallback
        #: Why "auto" settled on the hashing fallback: true for as long as the fallback is in use.
        self._choice_error = last_error if is_fallback else None
        #: The last failed call's error, cleared by the next successful call (see :meth:`status`).
        self._call_error = None if is_fallback else last_error
        self._call_error_at: datetime | None = utcnow() if self._call_error else None
        self._recovered_at: datetime | None = None
        self._lock = threading.Lock()
        #: Why this provider (``status().reason``); "auto" sets it when it chooses.
        self._reason = reason

    # -- settling "auto" --------------------------------------------------------------------

    @property
    def resolved(self) -> bool:
        """Whether the provider is chosen (always, except for "auto" before its first use)."""
        return self._active is not None

    def resolve(self) -> Embedder:
        """The active provider, choosing it now if "auto" has not yet (may probe or load)."""
        active = self._active
        if active is not None:
            return active
        with self._lock:
            if self._active is None:
                assert self._plan is not None
                self._adopt(
                    choose(
                        self._plan,
                        probe_policy=self._probe_policy,
                        probe_timeout=self._probe_timeout,
                    )
                )
            assert self._active is not None
            return self._active

    def _adopt(self, choice: Choice) -> None:
        self._reason = choice.reason
        self._active = choice.embedder
        self._is_fallback = choice.is_fallback
        self._choice_error = choice.error if choice.is_fallback else None
        if choice.is_fallback or choice.error is None:
            self._succeeded()
        else:
            self._failed(choice.error)

    # -- outcome of calls: last_error describes the provider *now* -----------------------------

    def _failed(self, error: str) -> None:
        self._call_error = scrub_secrets(error)
        self._call_error_at = utcnow()

    def _succeeded(self) -> None:
        """A call (or probe) answered: an earlier failure is over. Without this a provider that
        recovered kept being reported broken by ``status()`` and ``health()``; the time of the
        recovery is kept instead."""
        if self._call_error is not None:
            self._call_error = None
            self._call_error_at = None
            self._recovered_at = utcnow()

    @property
    def is_fallback(self) -> bool:
        """Whether "auto" found no provider and uses hashing (settles "auto" to answer)."""
        self.resolve()
        return self._is_fallback

    # -- the Embedder protocol, delegated ---------------------------------------------------

    @property
    def active(self) -> Embedder:
        return self.resolve()

    @property
    def provider(self) -> str:
        return self.resolve().provider

    @property
    def embeds_beside_reads(self) -> bool:
        """The active provider's (:func:`~waggle_store.embeddings.base.embeds_beside_reads`)."""
        return embeds_beside_reads(self.resolve())

    @property
    def text_form(self) -> str:
        """The active provider's (:func:`~waggle_store.embeddings.sentences.text_form_of`)."""
        return text_form_of(self.resolve())

    @property
    def model(self) -> str:
        return self.resolve().model

    @property
    def dimensions(self) -> int:
        return self.resolve().dimensions

    @property
    def model_id(self) -> str:
        return self.resolve().model_id

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        active = self.resolve()
        try:
            result = active.embed_documents(texts)
        except EmbeddingProviderError as exc:
            self._failed(str(exc))
            raise
        self._succeeded()
        return result

    def embed_query(self, text: str) -> list[float]:
        active = self.resolve()
        try:
            result = active.embed_query(text)
        except EmbeddingProviderError as exc:
            self._failed(str(exc))
            raise
        self._succeeded()
        return result

    # -- status -----------------------------------------------------------------------------

    def status(self) -> EmbedderStatus:
        """What is known now. A status report makes no network call and loads no model.

        An unsettled "auto" is settled here only when that is free (a ready in-process model, or
        nothing to try); otherwise the report names no active provider and lists the candidates.
        """
        plan = self._plan
        if self._active is None and plan is not None and not plan.decidable_offline():
            return EmbedderStatus(
                active_provider=None,
                model=None,
                dimensions=None,
                available_providers=[*plan.candidates, "hashing"],
                last_error=None,
                tier=self._tier,
                recovered_at=self._recovered_at,
                reason="auto has not chosen yet (it tries, on first use: "
                       + ", ".join(plan.candidates) + "; passed over: "
                       + ("; ".join(plan.skipped) or "none") + ")",
            )
        active = self.resolve()
        available = [active.provider]
        if active.provider != "hashing":
            available.append("hashing")
        missing = object()
        known = inspect.getattr_static(active, "known_dimensions", missing)
        dims: int | None = (active.dimensions if known is missing
                            else getattr(active, "known_dimensions", None))
        return EmbedderStatus(
            active_provider=active.provider,
            model=active.model,
            dimensions=dims,
            available_providers=available,
            last_error=self._call_error or self._choice_error,
            tier=self._tier,
            last_error_at=self._call_error_at,
            recovered_at=self._recovered_at,
            reason=self._reason,
        )

    def reprobe(self) -> EmbedderStatus:
        """Probe again: "auto" may switch provider (e.g. Ollama came up); others record errors."""
        with self._lock:
            if self._spec == "auto":
                self._plan = plan_auto(self._tier, self._policy)
                self._adopt(
                    choose(
                        self._plan,
                        probe_policy=self._probe_policy,
                        probe_timeout=self._probe_timeout,
                    )
                )
            else:
                assert self._active is not None
                try:
                    probe(self._active, self._probe_policy)
                except EmbeddingProviderError as exc:
                    self._failed(str(exc))
                else:
                    self._succeeded()
        return self.status()

    def __repr__(self) -> str:
        if self._active is None:
            return "EmbeddingChain(auto, not chosen yet)"
        extra = ", fallback" if self._is_fallback else ""
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


def resolve_embedder(
    spec: str | Embedder | None,
    *,
    tier: str | None = None,
    tier_policy: TierPolicy | None = None,
    probe_policy: RetryPolicy | None = None,
    probe_timeout: float | None = None,
) -> EmbeddingChain | None:
    """Turn ``open_store(embedder=...)`` into the embedder a store uses (None = no vectors).

    ``tier`` turns on tier enforcement against ``tier_policy`` (default: the built-in table).
    ``probe_policy`` governs probes: "auto" defaults to one attempt per provider, so an absent
    Ollama costs one refused connection; an explicit provider defaults to its own retry policy.
    "auto" makes no probe here: it returns an unsettled chain that chooses on first use, each
    probe limited to ``probe_timeout`` seconds (None: :data:`AUTO_PROBE_TIMEOUT`).
    """
    if spec is None:
        return None
    named_by = "the caller"
    env_choice = os.environ.get("WAGGLE_EMBEDDER", "").strip()
    if isinstance(spec, str) and canonical_name(spec) == "auto" and env_choice \
            and canonical_name(env_choice) != "auto":
        # The user named a provider for every store of this environment: that is consent.
        spec, named_by = env_choice, "WAGGLE_EMBEDDER"
    policy = tier_policy if tier_policy is not None else TierPolicy.default()
    if tier is not None:
        tier = policy.canonical(tier)  # raises InvalidInputError for an unknown tier
    if isinstance(spec, EmbeddingChain):
        if spec.resolved:  # an unsettled "auto" chain is limited by its own tier's plan
            _check_tier(spec.provider, tier, policy)
        return spec
    if not isinstance(spec, str):
        if not _looks_like_embedder(spec):
            raise InvalidInputError(
                f"embedder must be 'auto', a provider name, an Embedder or None; got {spec!r}"
            )
        _check_tier(spec.provider, tier, policy)
        return EmbeddingChain(spec, spec=None, tier=tier, tier_policy=policy,
                              reason="an embedder object passed by the caller")
    name = canonical_name(spec)
    if name == "auto":
        return EmbeddingChain(
            None,
            spec="auto",
            tier=tier,
            tier_policy=policy,
            probe_policy=probe_policy,
            probe_timeout=probe_timeout,
            plan=plan_auto(tier, policy),
        )
    provider = provider_spec(name)  # raises InvalidInputError naming the valid choices
    _check_tier(provider.name, tier, policy)
    embedder = provider.factory()
    if provider.ready is None or not provider.ready():
        # A ready in-process model (its files installed) needs no probe, which would load it
        # (seconds, torch): it loads on the first embedding, like "auto"'s choice of it.
        probe(embedder, probe_policy)
    return EmbeddingChain(
        embedder, spec=name, tier=tier, tier_policy=policy, probe_policy=probe_policy,
        reason=f"named by {named_by} ({name})",
    )


__all__ = [
    "AUTO_ORDER",
    "AUTO_PROBE_TIMEOUT",
    "PROVIDER_NAMES",
    "EmbeddingChain",
    "EmbeddingFallbackWarning",
    "build_provider",
    "probe",
    "resolve_embedder",
]

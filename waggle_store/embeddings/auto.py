"""What "auto" may try (decided at open, offline) and which provider it takes (decided at first
use).

Planning reads only the registry, the environment and ``find_spec``: no network, no SDK, no
torch, so ``open_store(embedder="auto")`` never waits on a provider. Choosing walks the plan in
the order ``local → ollama`` and stops at the first provider that answers. A provider that
sends text off this machine (a cloud API, or an Ollama whose ``OLLAMA_HOST`` is another
machine) is never chosen by "auto": an API key in the environment is not consent to send every
memory and query to that service. The user names such a provider (``embedder="openai"``, or
``WAGGLE_EMBEDDER=openai``). An in-process provider
whose files are installed (the registry's ``ready``) is taken without a probe: its model loads
on the first embedding, which needs it anyway. A network provider is probed once, with a short
timeout, so a server that accepts connections and never answers costs seconds, not the 30 s of
a normal request. When nothing answers, lexical hashing is used, loudly.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

from waggle_store.embeddings.base import PROBE_TEXT, Embedder
from waggle_store.embeddings.hashing import HashingEmbedder
from waggle_store.embeddings.registry import (
    AUTO_ORDER,
    PROVIDERS,
    missing_requirement,
    sends_off_machine,
)
from waggle_store.embeddings.retry import RetryPolicy
from waggle_store.embeddings.tiers import TierPolicy
from waggle_store.errors import EmbeddingProviderError, WaggleStoreError

#: Seconds one "auto" probe may take. Long enough for a warm Ollama or a cloud API to answer,
#: short enough that a silent host does not stall the first embedding for long.
AUTO_PROBE_TIMEOUT = 3.0


class EmbeddingFallbackWarning(UserWarning):
    """No embedding provider answered; the store uses lexical hashing vectors."""


def probe(
    embedder: Embedder, policy: RetryPolicy | None = None, *, timeout: float | None = None
) -> None:
    """Make one real embedding; raise EmbeddingProviderError if the provider does not answer.

    ``timeout`` shortens the probe of a provider that has a ``probe`` method taking one (the
    remote providers); an embedder without ``probe`` embeds the probe text as it would any text.
    """
    probe_fn: Callable[..., object] | None = getattr(embedder, "probe", None)
    try:
        if probe_fn is None:
            embedder.embed_query(PROBE_TEXT)
        elif timeout is None:
            probe_fn(policy)
        else:
            probe_fn(policy, timeout=timeout)
    except EmbeddingProviderError:
        raise
    except WaggleStoreError as exc:
        raise EmbeddingProviderError(
            f"{embedder.provider}: probe failed: {exc}", provider=embedder.provider
        ) from exc


#: Why "auto" passes over a provider that sends text off this machine, and how to choose it.
REMOTE_SKIP = ("sends text off this machine, so auto does not choose it "
               "(name it: embedder='{name}' or WAGGLE_EMBEDDER={name})")


@dataclass(frozen=True)
class AutoPlan:
    """The providers "auto" will try, in order, and why the others are not even tried."""

    candidates: tuple[str, ...]
    skipped: tuple[str, ...]

    def decidable_offline(self) -> bool:
        """Whether :func:`choose` will pick without a probe (nothing to try, or a ready model).

        A status report may then settle the choice; otherwise it must not, because settling
        would make network calls.
        """
        if not self.candidates:
            return True
        ready = PROVIDERS[self.candidates[0]].ready
        return ready is not None and ready()


def plan_auto(tier: str | None, policy: TierPolicy | None) -> AutoPlan:
    """The candidates the tier allows and the installation/configuration supports (offline)."""
    candidates: list[str] = []
    skipped: list[str] = []
    for name in AUTO_ORDER:
        if tier is not None and policy is not None and not policy.allows(tier, name):
            skipped.append(f"{name}: not allowed for tier {policy.canonical(tier)}")
            continue
        missing = missing_requirement(PROVIDERS[name])
        if missing is not None:
            skipped.append(f"{name}: {missing}")
            continue
        if sends_off_machine(PROVIDERS[name]):
            skipped.append(f"{name}: {REMOTE_SKIP.format(name=name)}")
            continue
        candidates.append(name)
    return AutoPlan(tuple(candidates), tuple(skipped))


@dataclass(frozen=True)
class Choice:
    """The provider "auto" settled on; ``error`` says why it is the hashing fallback, and
    ``reason`` why this provider (for ``health()``)."""

    embedder: Embedder
    is_fallback: bool
    error: str | None
    reason: str = ""


def choose(
    plan: AutoPlan, *, probe_policy: RetryPolicy | None = None, probe_timeout: float | None = None
) -> Choice:
    """The first candidate that is ready or answers its probe; hashing, with a warning, if none.

    ``probe_policy`` defaults to a single attempt per provider: an absent Ollama costs one
    refused connection, a silent one ``probe_timeout`` seconds (default
    :data:`AUTO_PROBE_TIMEOUT`, read when the choice is made).
    """
    timeout = AUTO_PROBE_TIMEOUT if probe_timeout is None else probe_timeout
    reasons = list(plan.skipped)
    for name in plan.candidates:
        spec = PROVIDERS[name]
        try:
            embedder = spec.factory()
            if spec.ready is None or not spec.ready():
                probe(embedder, probe_policy or RetryPolicy.no_retry(), timeout=timeout)
        except EmbeddingProviderError as exc:
            reasons.append(str(exc) if str(exc).startswith(name) else f"{name}: {exc}")
            continue
        how = "installed" if spec.ready is not None and spec.ready() else "answered"
        reason = f"auto chose {name}, the first provider on this machine that {how}"
        remote = [r for r in reasons if "sends text off this machine" in r]
        if remote:
            reason += "; passed over: " + "; ".join(remote)
        return Choice(embedder, is_fallback=False, error=None, reason=reason)
    why = (
        "no embedding provider answered; using lexical hashing vectors (" + "; ".join(reasons) + ")"
    )
    warnings.warn(why, EmbeddingFallbackWarning, stacklevel=4)
    return Choice(HashingEmbedder(), is_fallback=True, error=why,
                  reason="auto found no provider on this machine: " + why)


__all__ = [
    "AUTO_PROBE_TIMEOUT",
    "REMOTE_SKIP",
    "AutoPlan",
    "Choice",
    "EmbeddingFallbackWarning",
    "choose",
    "plan_auto",
    "probe",
]

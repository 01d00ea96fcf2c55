"""The one table of embedding providers: what every name means, in one place.

The provider chain ("auto", ``build_provider``), the default tier table and
``open_store(embedder=name)`` all read :data:`PROVIDERS`, so a new provider is one module (its
embedder class) plus one entry here. Building a provider's module is deferred to its factory:
importing this table imports no SDK, no httpx and no torch, so deciding what "auto" may try
costs a few ``find_spec`` calls and nothing else.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from waggle_store.embeddings import local
from waggle_store.embeddings.base import Embedder
from waggle_store.errors import InvalidInputError

#: A factory builds its provider from defaults and the environment, without a network call.
Factory = Callable[[], Embedder]


@dataclass(frozen=True)
class ProviderSpec:
    """One provider: how to build it, what it reads, who may use it, and whether "auto" tries it.

    ``min_tier`` names the lowest tier of the default tier table that may use the provider (the
    table is built from it, :meth:`TierPolicy.default`). ``auto_rank`` places the provider in
    "auto"'s probe order (None: never probed, e.g. it needs an address nobody has by default).
    ``needs_env`` (any one of them) and ``needs_packages`` (import name, pip name) let "auto"
    skip a provider that cannot work without even building it. ``ready`` answers, without
    loading anything, whether an in-process provider is usable as installed, so "auto" can pick
    it with no probe (its model then loads on the first embedding).
    """

    name: str
    factory: Factory
    default_model: str
    min_tier: str
    env_vars: tuple[str, ...] = ()
    needs_env: tuple[str, ...] = ()
    needs_packages: tuple[tuple[str, str], ...] = ()
    auto_rank: int | None = None
    aliases: tuple[str, ...] = ()
    known_dimensions: Mapping[str, int] = field(default_factory=dict)
    ready: Callable[[], bool] | None = None
    #: Whether the provider sends text off this machine (a cloud API). "auto" never chooses
    #: such a provider: the user names it (``embedder="openai"`` or ``WAGGLE_EMBEDDER``).
    remote: bool = False
    #: The variable holding the provider's server address when it runs on this machine by
    #: default (Ollama's ``OLLAMA_HOST``): an address off this machine makes it remote.
    host_env: str | None = None


# -- factories: one per provider, importing its module only when it is built ------------------
# (but the local provider's: that module imports torch only when its model loads, and this table
# reads its known dimensions; it imports nothing from here)


def _local() -> Embedder:
    return local.LocalEmbedder()


def _local_ready() -> bool:
    return local.bundled_model_path(local.DEFAULT_MODEL) is not None


def _ollama() -> Embedder:
    from waggle_store.embeddings.ollama import OllamaEmbedder

    return OllamaEmbedder()


def _voyage() -> Embedder:
    from waggle_store.embeddings.voyage import VoyageEmbedder

    return VoyageEmbedder()


def _openai() -> Embedder:
    from waggle_store.embeddings.openai_compat import OpenAIEmbedder

    return OpenAIEmbedder()


def _litellm() -> Embedder:
    from waggle_store.embeddings.openai_compat import litellm_from_env

    return litellm_from_env()


def _hashing() -> Embedder:
    from waggle_store.embeddings.hashing import HashingEmbedder

    return HashingEmbedder()


#: Every provider, in the order the API documents them (and errors list them).
PROVIDERS: Mapping[str, ProviderSpec] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            ProviderSpec(
                "local",
                _local,
                default_model="sentence-transformers/all-MiniLM-L6-v2",
                min_tier="FREE",
                env_vars=("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"),
                needs_packages=(("sentence_transformers", "sentence-transformers"),),
                auto_rank=0,
                aliases=("inprocess", "sentence-transformers"),
                known_dimensions=local.KNOWN_DIMENSIONS,
                ready=_local_ready,
            ),
            ProviderSpec(
                "ollama",
                _ollama,
                default_model="nomic-embed-text",
                min_tier="FREE",
                env_vars=("OLLAMA_HOST",),
                auto_rank=1,
                host_env="OLLAMA_HOST",
            ),
            ProviderSpec(
                "voyage",
                _voyage,
                default_model="voyage-3-lite",
                min_tier="PRO",
                env_vars=("VOYAGE_API_KEY",),
                needs_env=("VOYAGE_API_KEY",),
                needs_packages=(("voyageai", "voyageai"),),
                remote=True,
                auto_rank=2,
            ),
            ProviderSpec(
                "openai",
                _openai,
                default_model="text-embedding-3-small",
                min_tier="PRO",
                env_vars=("OPENAI_API_KEY", "OPENAI_BASE_URL"),
                needs_env=("OPENAI_API_KEY",),
                needs_packages=(("openai", "openai"),),
                remote=True,
                auto_rank=3,
            ),
            ProviderSpec(
                "litellm",
                _litellm,
                default_model="text-embedding",
                min_tier="TEAMS",
                env_vars=(
                    "LITELLM_BASE_URL",
                    "LITELLM_PROXY_API_BASE",
                    "LITELLM_API_KEY",
                    "LITELLM_PROXY_API_KEY",
                ),
                needs_env=("LITELLM_BASE_URL", "LITELLM_PROXY_API_BASE"),
                needs_packages=(("openai", "openai"),),
                remote=True,
            ),
            ProviderSpec(
                "hashing",
                _hashing,
                default_model="blake2b-signed-words-v1",
                min_tier="FREE",
            ),
        )
    }
)

PROVIDER_NAMES: tuple[str, ...] = tuple(PROVIDERS)
#: "auto"'s probe order, from each provider's ``auto_rank``.
AUTO_ORDER: tuple[str, ...] = tuple(
    spec.name
    for spec in sorted(PROVIDERS.values(), key=lambda s: s.auto_rank or 0)
    if spec.auto_rank is not None
)
ALIASES: Mapping[str, str] = MappingProxyType(
    {alias: spec.name for spec in PROVIDERS.values() for alias in spec.aliases}
)


def canonical_name(name: str) -> str:
    """``name`` normalised (case, spaces) with aliases resolved; not checked against the table."""
    key = name.strip().lower()
    return ALIASES.get(key, key)


def known_dimensions(provider: str, model: str) -> int | None:
    """The dimension of ``model`` if the table knows it, so asking the model is not needed."""
    spec = PROVIDERS.get(provider)
    return None if spec is None else spec.known_dimensions.get(model)


def package_available(module: str) -> bool:
    """Whether ``module`` is installed, found without importing it (no torch import to ask)."""
    return importlib.util.find_spec(module) is not None


def missing_requirement(spec: ProviderSpec) -> str | None:
    """Why ``spec`` cannot work as configured (no key, no package), or None if it may."""
    if spec.needs_env and not any(os.environ.get(var) for var in spec.needs_env):
        return f"{' or '.join(spec.needs_env)} not set"
    for module, pip_name in spec.needs_packages:
        if not package_available(module):
            return f"{pip_name} not installed"
    return None


_LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "0.0.0.0", ""})


def _is_loopback(address: str) -> bool:
    """Whether a host address (``host``, ``host:port`` or a URL) names this machine."""
    from urllib.parse import urlsplit

    text = address.strip()
    host = (urlsplit(text if "://" in text else f"http://{text}").hostname or "").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def sends_off_machine(spec: ProviderSpec) -> bool:
    """Whether ``spec`` as configured sends text to another machine: a cloud API always, a
    local server (Ollama) when its address variable points elsewhere."""
    if spec.remote:
        return True
    if spec.host_env is not None:
        address = os.environ.get(spec.host_env)
        return bool(address) and not _is_loopback(str(address))
    return False


def provider_spec(name: str) -> ProviderSpec:
    """The registry entry for ``name`` (aliases accepted), or InvalidInputError naming the
    choices."""
    spec = PROVIDERS.get(canonical_name(name))
    if spec is None:
        raise InvalidInputError(
            f"unknown embedding provider {name!r}; expected 'auto', None, an Embedder, "
            f"or one of {', '.join(PROVIDER_NAMES)}"
        )
    return spec


def build_provider(name: str) -> Embedder:
    """Construct a provider by name from its defaults and the environment (no network call)."""
    return provider_spec(name).factory()


__all__ = [
    "ALIASES",
    "AUTO_ORDER",
    "PROVIDERS",
    "PROVIDER_NAMES",
    "Factory",
    "ProviderSpec",
    "build_provider",
    "canonical_name",
    "known_dimensions",
    "missing_requirement",
    "package_available",
    "provider_spec",
    "sends_off_machine",
]

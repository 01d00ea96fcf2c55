"""Embedding providers, the provider chain, retries, tiers and quotas.

Importing this package imports no optional dependency: sentence-transformers, openai and voyageai
are imported when an embedder that needs them is built. Every provider is one entry of
:data:`PROVIDERS` (:mod:`waggle_store.embeddings.registry`), which ``open_store(embedder=name)``,
"auto" and the default tier table read. The quota functions live in
:mod:`waggle_store.embeddings.quota` (they count through a repository the caller hands them).
"""

from __future__ import annotations

from waggle_store.embeddings.base import (
    PROBE_TEXT,
    Embedder,
    l2_normalize,
    make_model_id,
    split_batches,
    validate_vector,
)
from waggle_store.embeddings.chain import (
    AUTO_ORDER,
    AUTO_PROBE_TIMEOUT,
    PROVIDER_NAMES,
    EmbeddingChain,
    EmbeddingFallbackWarning,
    build_provider,
    resolve_embedder,
)
from waggle_store.embeddings.hashing import HashingEmbedder
from waggle_store.embeddings.local import LocalEmbedder
from waggle_store.embeddings.ollama import OllamaEmbedder
from waggle_store.embeddings.openai_compat import LiteLLMEmbedder, OpenAIEmbedder
from waggle_store.embeddings.registry import PROVIDERS, ProviderSpec
from waggle_store.embeddings.remote import RemoteEmbedder
from waggle_store.embeddings.retry import RetryPolicy, call_with_retry
from waggle_store.embeddings.tiers import TierPolicy, TierRule
from waggle_store.embeddings.voyage import VoyageEmbedder

__all__ = [
    "AUTO_ORDER",
    "AUTO_PROBE_TIMEOUT",
    "PROBE_TEXT",
    "PROVIDERS",
    "PROVIDER_NAMES",
    "Embedder",
    "EmbeddingChain",
    "EmbeddingFallbackWarning",
    "HashingEmbedder",
    "LiteLLMEmbedder",
    "LocalEmbedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "ProviderSpec",
    "RemoteEmbedder",
    "RetryPolicy",
    "TierPolicy",
    "TierRule",
    "VoyageEmbedder",
    "build_provider",
    "call_with_retry",
    "l2_normalize",
    "make_model_id",
    "resolve_embedder",
    "split_batches",
    "validate_vector",
]

"""TierPolicy: Waggle's table, the lowest allowing tier (not always TRIAL), quotas."""

from __future__ import annotations

import dataclasses

import pytest

from waggle_store.embeddings import HashingEmbedder, TierPolicy, resolve_embedder
from waggle_store.errors import InvalidInputError, TierError


@pytest.fixture
def policy() -> TierPolicy:
    return TierPolicy.default()


def test_default_table_matches_the_seed(policy: TierPolicy) -> None:
    assert policy.tier_names == ["FREE", "PRO", "TEAMS", "ENTERPRISE", "TRIAL"]
    for provider in ("local", "hashing", "ollama"):
        assert all(policy.allows(t, provider) for t in policy.tier_names)
    for provider in ("voyage", "openai"):
        assert not policy.allows("FREE", provider)
        assert policy.allows("PRO", provider)
    assert not policy.allows("PRO", "litellm")
    for tier in ("TEAMS", "ENTERPRISE", "TRIAL"):
        assert policy.allows(tier, "litellm")
    assert all(policy.quota_for(t) == -1 for t in policy.tier_names)


@pytest.mark.parametrize(
    ("provider", "tier"),
    [
        ("local", "FREE"),
        ("hashing", "FREE"),
        ("ollama", "FREE"),
        ("voyage", "PRO"),
        ("openai", "PRO"),
        ("litellm", "TEAMS"),
    ],
)
def test_minimum_tier_is_the_lowest_ranked(policy: TierPolicy, provider: str, tier: str) -> None:
    # Waggle answered TRIAL for everything because TRIAL came first and allows all.
    assert policy.minimum_tier_for(provider) == tier


def test_minimum_tier_for_unknown_provider(policy: TierPolicy) -> None:
    assert policy.minimum_tier_for("nonexistent") is None


def test_tier_names_are_case_insensitive_with_legacy_aliases(policy: TierPolicy) -> None:
    assert policy.canonical("pro") == "PRO"
    assert policy.canonical("solo") == "FREE"
    assert policy.canonical("basic") == "PRO"
    assert policy.canonical("Business") == "TEAMS"
    assert policy.canonical("enterprise") == "ENTERPRISE"
    with pytest.raises(InvalidInputError, match="known tiers"):
        policy.canonical("PLATINUM")


def test_with_quota_returns_a_new_policy(policy: TierPolicy) -> None:
    limited = policy.with_quota("free", 500)
    assert limited.quota_for("FREE") == 500
    assert policy.quota_for("FREE") == -1  # the original is untouched
    assert limited.with_quota("FREE", None).quota_for("FREE") == -1
    assert limited.with_quota("FREE", -1).quota_for("FREE") == -1
    with pytest.raises(dataclasses.FrozenInstanceError):
        limited.rules = ()  # type: ignore[misc]
    with pytest.raises(InvalidInputError):
        policy.with_quota("FREE", "500")  # type: ignore[arg-type]


def test_with_providers(policy: TierPolicy) -> None:
    custom = policy.with_providers("FREE", {"hashing", "openai"})
    assert custom.allows("FREE", "openai")
    assert not custom.allows("FREE", "local")
    assert custom.minimum_tier_for("openai") == "FREE"
    with pytest.raises(InvalidInputError):
        policy.with_providers("FREE", {"mock"})


def test_tier_error_names_the_lowest_allowing_tier(policy: TierPolicy) -> None:
    with pytest.raises(TierError) as info:
        resolve_embedder("voyage", tier="free", tier_policy=policy)
    assert info.value.required == "PRO"
    assert info.value.actual == "FREE"
    assert info.value.provider == "voyage"
    assert "requires PRO, actual is FREE" in str(info.value)

    with pytest.raises(TierError) as info:
        resolve_embedder("litellm", tier="PRO")
    assert info.value.required == "TEAMS"


def test_tier_is_checked_before_any_network_or_key_check(
    policy: TierPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(TierError):
        resolve_embedder("openai", tier="FREE", tier_policy=policy)


def test_tier_applies_to_instances_too() -> None:
    class Fake(HashingEmbedder):
        provider = "openai"

    with pytest.raises(TierError):
        resolve_embedder(Fake(), tier="FREE")
    assert resolve_embedder(Fake(), tier="PRO") is not None


def test_allowed_provider_resolves(policy: TierPolicy) -> None:
    chain = resolve_embedder("hashing", tier="FREE", tier_policy=policy)
    assert chain is not None
    assert chain.status().tier == "FREE"

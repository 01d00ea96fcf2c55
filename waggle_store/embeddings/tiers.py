"""Which embedding providers a tier may use, and how many embeddings a month it may make.

The default table is Waggle's, with its provider names mapped to ours
(``inprocess`` → ``local``, ``mock`` → ``hashing``). The "lowest tier that
allows a provider" is found by the tiers' rank (FREE < PRO < TEAMS < ENTERPRISE, with the
time-limited TRIAL ranked with ENTERPRISE), not by list order: the list starts with TRIAL,
which allows everything, so list order would always say "requires TRIAL".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from waggle_store.embeddings.registry import PROVIDERS
from waggle_store.errors import InvalidInputError

UNLIMITED = -1

#: Every provider name of the registry (a tier may allow only these).
ALL_PROVIDERS = frozenset(PROVIDERS)

#: The default table's tiers and ranks; each provider's ``min_tier`` places it in this ladder.
_DEFAULT_RANKS = (("FREE", 0), ("PRO", 1), ("TEAMS", 2), ("ENTERPRISE", 3), ("TRIAL", 3))

#: Old tier names still found in configs (case-insensitive), as Waggle accepts them.
LEGACY_TIER_NAMES = {
    "solo": "FREE",
    "basic": "PRO",
    "business": "TEAMS",
}


@dataclass(frozen=True)
class TierRule:
    """One tier: its rank (for "lowest tier that allows"), providers and monthly quota."""

    name: str
    rank: int
    providers: frozenset[str]
    monthly_quota: int = UNLIMITED

    @property
    def unlimited(self) -> bool:
        return self.monthly_quota < 0


@dataclass(frozen=True)
class TierPolicy:
    """An immutable tier table; derive variants with :meth:`with_quota` / :meth:`with_providers`."""

    rules: tuple[TierRule, ...]

    def __post_init__(self) -> None:
        names = [r.name for r in self.rules]
        if len(set(names)) != len(names):
            raise InvalidInputError(f"TierPolicy has duplicate tier names: {names}")
        if not names:
            raise InvalidInputError("TierPolicy needs at least one tier")

    @classmethod
    def default(cls) -> TierPolicy:
        """Waggle's tier table; every quota unlimited (-1), as in Waggle's production.

        Built from the provider registry: a tier allows every provider whose ``min_tier`` ranks
        at or below it (FREE: local, ollama, hashing; PRO adds voyage and openai; TEAMS and up,
        and TRIAL, allow all), so a new provider joins the table through its registry entry.
        """
        rank = dict(_DEFAULT_RANKS)
        return cls(
            rules=tuple(
                TierRule(
                    name,
                    r,
                    frozenset(p.name for p in PROVIDERS.values() if rank[p.min_tier] <= r),
                )
                for name, r in _DEFAULT_RANKS
            )
        )

    @property
    def tier_names(self) -> list[str]:
        return [r.name for r in self.rules]

    def canonical(self, tier: str) -> str:
        """The table's spelling of ``tier`` (case-insensitive, legacy names accepted)."""
        return self.rule(tier).name

    def rule(self, tier: str) -> TierRule:
        wanted = LEGACY_TIER_NAMES.get(tier.strip().lower(), tier.strip()).upper()
        for r in self.rules:
            if r.name.upper() == wanted:
                return r
        raise InvalidInputError(f"unknown tier {tier!r}; known tiers: {', '.join(self.tier_names)}")

    def allows(self, tier: str, provider: str) -> bool:
        return provider in self.rule(tier).providers

    def minimum_tier_for(self, provider: str) -> str | None:
        """The lowest-ranked tier whose providers include ``provider`` (None if no tier does).

        Ties keep table order, so TRIAL (a temporary tier listed last) is named only when no
        permanent tier of its rank allows the provider.
        """
        allowing = [r for r in self.rules if provider in r.providers]
        if not allowing:
            return None
        return min(allowing, key=lambda r: r.rank).name

    def quota_for(self, tier: str) -> int:
        """Monthly embedding quota of ``tier``; -1 means unlimited."""
        return self.rule(tier).monthly_quota

    def with_quota(self, tier: str, monthly_quota: int | None) -> TierPolicy:
        """A copy with ``tier``'s monthly quota replaced (None or a negative value = unlimited)."""
        if monthly_quota is not None and (
            not isinstance(monthly_quota, int) or isinstance(monthly_quota, bool)
        ):
            raise InvalidInputError(f"monthly_quota must be an int or None, got {monthly_quota!r}")
        quota = UNLIMITED if monthly_quota is None or monthly_quota < 0 else monthly_quota
        name = self.canonical(tier)
        return TierPolicy(
            rules=tuple(
                replace(r, monthly_quota=quota) if r.name == name else r for r in self.rules
            )
        )

    def with_providers(self, tier: str, providers: Iterable[str]) -> TierPolicy:
        """A copy with ``tier``'s allowed providers replaced."""
        allowed = frozenset(providers)
        unknown = allowed - ALL_PROVIDERS
        if unknown:
            raise InvalidInputError(
                f"unknown providers {sorted(unknown)}; known: {sorted(ALL_PROVIDERS)}"
            )
        name = self.canonical(tier)
        return TierPolicy(
            rules=tuple(replace(r, providers=allowed) if r.name == name else r for r in self.rules)
        )


__all__ = ["ALL_PROVIDERS", "UNLIMITED", "TierPolicy", "TierRule"]

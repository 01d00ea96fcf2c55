"""``store.usage``: the LLM (and embedding) usage log, its totals and per-mind monthly budgets.

OpenFang's UsageStore, per mind instead of per agent. ``record`` never refuses a
row: the call it describes has already been made and paid for. A budget is checked before a call
(:meth:`UsageAPI.check_budget` raises :class:`~waggle_store.errors.BudgetExceededError`, or
:meth:`UsageAPI.budget_status` says so without raising), which is what OpenFang's metering did
with its ``>=`` comparisons. Months and days are UTC.

A store bound to one mind (``open_store(..., bound_mind=NAME)``) reads and writes that mind's
usage only: a call naming another mind raises ``NotFoundError``, one naming none (totals,
``ranking``, ``cleanup``) covers its mind alone.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from waggle_store.context import StoreContext
from waggle_store.errors import BudgetExceededError, InvalidInputError, NotFoundError
from waggle_store.records import UsageBudget, UsageDay, UsageMonth, UsageTotals
from waggle_store.repositories.common import check_int, check_name
from waggle_store.repositories.usage import Sums, UsageRepository, check_usage_numbers
from waggle_store.timeutil import ensure_utc, optional_bound, optional_utc, utcnow

__all__ = ["MindRef", "UsageAPI", "month_start"]


class _Named(Protocol):
    """A Mind (or anything naming one): ``store.usage`` takes it or a mind name."""

    @property
    def name(self) -> str: ...


MindRef = str | _Named


def month_start(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _next_month(start: datetime) -> datetime:
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(
        month=start.month + 1)


def _name(mind: MindRef) -> str:
    name = mind if isinstance(mind, str) else getattr(mind, "name", None)
    if not isinstance(name, str):
        raise InvalidInputError(f"mind must be a mind name or a Mind, got {type(mind).__name__}")
    return check_name(name, name="mind", max_length=200)


def _totals(mind: str | None, model: str | None, s: Sums) -> UsageTotals:
    return UsageTotals(mind, model, s.calls, s.prompt_tokens, s.completion_tokens,
                       s.total_tokens, s.cost_usd)


class _Bucket:
    __slots__ = ("calls", "completion", "cost", "prompt", "total")

    def __init__(self) -> None:
        self.calls = self.prompt = self.completion = self.total = 0
        self.cost = 0.0

    def add(self, prompt: int, completion: int, total: int, cost: float) -> None:
        self.calls += 1
        self.prompt += prompt
        self.completion += completion
        self.total += total
        self.cost += cost


class UsageAPI:
    """``bound``: the name of the one mind a bound store sees (None: every mind)."""

    def __init__(self, store: StoreContext, bound: str | None = None) -> None:
        self.store = store
        self.bound = bound

    def _own(self, mind: MindRef | None) -> str | None:
        """The mind a call is about (checked): ``mind``'s name, or for none, a bound store's
        own mind (None: every mind). NotFoundError for a mind a bound store does not see."""
        name = None if mind is None else _name(mind)
        if self.bound is None or name == self.bound:
            return name
        if name is None:
            return self.bound
        raise NotFoundError(f"no mind named {name!r} (this store is bound to one mind)")

    def _named(self, mind: MindRef) -> str:
        """``mind``'s name, checked as :meth:`_own` checks it."""
        name = _name(mind)
        self._own(name)
        return name

    def _mind_id(self, repo: UsageRepository, mind: MindRef | None) -> int | None:
        name = self._own(mind)
        return None if name is None else repo.mind_id(name)

    # -- writes -------------------------------------------------------------------------------

    def record(self, mind: MindRef, model: str, *, prompt_tokens: int = 0,
               completion_tokens: int = 0, cost_usd: float = 0.0,
               at: datetime | str | None = None) -> None:
        """Log one model call of ``mind`` (an existing mind's name, or a Mind)."""
        check_name(model, name="model")
        prompt, completion, cost = check_usage_numbers(prompt_tokens, completion_tokens, cost_usd)
        when = optional_utc(at, name="at")
        with self.store.write() as s:
            repo = UsageRepository(s)
            repo.record(repo.mind_id(self._named(mind)), model, prompt, completion, cost, when)

    def cleanup(self, older_than_days: int) -> int:
        """Delete rows older than ``older_than_days`` days (compared as times); returns how many."""
        check_int(older_than_days, name="older_than_days", minimum=0, maximum=36_500)
        with self.store.write() as s:
            repo = UsageRepository(s)
            return repo.cleanup(utcnow() - timedelta(days=older_than_days),
                                self._mind_id(repo, None))

    # -- totals -------------------------------------------------------------------------------

    def totals(self, mind: MindRef | None = None, *, since: datetime | str | None = None,
               until: datetime | str | None = None) -> UsageTotals:
        """Everything summed (``since`` inclusive, ``until`` exclusive)."""
        start, end = optional_bound(since, name="since"), optional_bound(until, name="until")
        with self.store.read() as s:
            repo = UsageRepository(s)
            sums = repo.totals(self._mind_id(repo, mind), start, end)
        return _totals(self._own(mind), None, sums)

    def total_cost(self, mind: MindRef | None = None, *, since: datetime | str | None = None,
                   until: datetime | str | None = None) -> float:
        return self.totals(mind, since=since, until=until).cost_usd

    def total_tokens(self, mind: MindRef | None = None, *, since: datetime | str | None = None,
                     until: datetime | str | None = None) -> int:
        return self.totals(mind, since=since, until=until).total_tokens

    def by_model(self, mind: MindRef | None = None, *,
                 since: datetime | str | None = None) -> dict[str, UsageTotals]:
        """Per model, most expensive first (dicts keep that order)."""
        start = optional_bound(since, name="since")
        with self.store.read() as s:
            repo = UsageRepository(s)
            found = repo.by_model(self._mind_id(repo, mind), start)
        owner = self._own(mind)
        return {model: _totals(owner, model, sums) for model, sums in found}

    def ranking(self, *, since: datetime | str | None = None) -> list[UsageTotals]:
        """Minds by cost, highest first (ties by name); minds without usage are left out."""
        start = optional_bound(since, name="since")
        with self.store.read() as s:
            found = UsageRepository(s).by_mind(start)
        return [_totals(name, None, sums) for name, sums in found
                if self.bound is None or name == self.bound]

    def daily(self, mind: MindRef | None = None, *, days: int = 30,
              now: datetime | str | None = None) -> list[UsageDay]:
        """One entry per UTC day with usage, oldest first, over the last ``days`` days (today
        included)."""
        check_int(days, name="days", minimum=1, maximum=36_500)
        moment = ensure_utc(now, name="now") if now is not None else utcnow()
        first = moment.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=days - 1)
        buckets: dict[date, _Bucket] = defaultdict(_Bucket)
        with self.store.read() as s:
            repo = UsageRepository(s)
            for at, prompt, completion, total, cost in repo.rows(self._mind_id(repo, mind), first):
                buckets[at.astimezone(UTC).date()].add(prompt, completion, total, cost)
        return [UsageDay(day, b.calls, b.prompt, b.completion, b.total, b.cost)
                for day, b in sorted(buckets.items())]

    def monthly(self, mind: MindRef | None = None, *, months: int = 12,
                now: datetime | str | None = None) -> list[UsageMonth]:
        """One entry per UTC month with usage, oldest first, over the last ``months`` months."""
        check_int(months, name="months", minimum=1, maximum=1200)
        start = month_start(ensure_utc(now, name="now") if now is not None else utcnow())
        for _ in range(months - 1):
            start = month_start(start - timedelta(days=1))
        buckets: dict[str, _Bucket] = defaultdict(_Bucket)
        with self.store.read() as s:
            repo = UsageRepository(s)
            for at, prompt, completion, total, cost in repo.rows(self._mind_id(repo, mind), start):
                buckets[at.astimezone(UTC).strftime("%Y-%m")].add(prompt, completion, total, cost)
        return [UsageMonth(month, b.calls, b.prompt, b.completion, b.total, b.cost)
                for month, b in sorted(buckets.items())]

    # -- budgets ------------------------------------------------------------------------------

    def set_budget(self, mind: MindRef, monthly_usd: float | None) -> None:
        """Set (or with None remove) the mind's monthly budget in USD."""
        if monthly_usd is not None and (
                isinstance(monthly_usd, bool) or not isinstance(monthly_usd, (int, float))
                or not math.isfinite(monthly_usd) or monthly_usd < 0):
            raise InvalidInputError(
                f"monthly_usd must be a finite number >= 0, got {monthly_usd!r}")
        with self.store.write() as s:
            repo = UsageRepository(s)
            repo.set_budget(repo.mind_id(self._named(mind)), monthly_usd)

    def budget_status(self, mind: MindRef, *, now: datetime | str | None = None) -> UsageBudget:
        """This month's spend against the budget; ``exceeded`` when spend >= budget."""
        name = self._named(mind)
        start = month_start(ensure_utc(now, name="now") if now is not None else utcnow())
        with self.store.read() as s:
            repo = UsageRepository(s)
            mind_id = repo.mind_id(name)
            budget = repo.budget(mind_id)
            spent = repo.totals(mind_id, start, _next_month(start)).cost_usd
        remaining = None if budget is None else max(0.0, budget - spent)
        return UsageBudget(name, start.strftime("%Y-%m"), budget, spent, remaining,
                           budget is not None and spent >= budget)

    def check_budget(self, mind: MindRef, *, now: datetime | str | None = None) -> UsageBudget:
        """The budget status; raises BudgetExceededError when this month's budget is spent."""
        status = self.budget_status(mind, now=now)
        if status.exceeded and status.budget_usd is not None:
            raise BudgetExceededError(status.mind, status.budget_usd, status.spent_usd,
                                      status.month)
        return status

"""The LLM usage log (OpenFang's UsageStore): one row per model call, per mind.

Every sum is computed by the database over ``created_at`` compared as a time, never as a string
(RFC 3339 strings against ``datetime('now', ...)`` put a window off by up to a day). Grouping
by day or month is done here, in Python,
over the rows of the window, streamed: a ``date()`` of a timestamp is dialect-specific SQL, and
the windows asked for (days, months) hold few enough rows for a single pass.

Monthly budgets live in the mind's ``settings`` (``monthly_budget_usd``), not in the mind's KV,
which belongs to the user.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVarTuple

from sqlalchemy import Select, delete, func, insert, select
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models import MindRow, UsageLogRow
from waggle_store.repositories.common import check_name
from waggle_store.timeutil import utcnow

__all__ = ["BUDGET_SETTING", "Sums", "UsageRepository", "check_usage_numbers"]

#: The key of a mind's monthly budget (USD) in ``minds.settings``.
BUDGET_SETTING: Final = "monthly_budget_usd"
_MAX_TOKENS: Final = 2**31 - 1  # the columns are 32-bit INTEGER on Postgres
_Ts = TypeVarTuple("_Ts")


@dataclass(frozen=True)
class Sums:
    calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_usd: float


def _tokens(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_TOKENS:
        raise InvalidInputError(
            f"{name} must be an integer between 0 and {_MAX_TOKENS}, got {value!r}")
    return value


def check_usage_numbers(prompt_tokens: object, completion_tokens: object,
                        cost_usd: object) -> tuple[int, int, float]:
    """Validated (prompt, completion, cost): non-negative, finite, integers for tokens."""
    prompt = _tokens(prompt_tokens, "prompt_tokens")
    completion = _tokens(completion_tokens, "completion_tokens")
    if isinstance(cost_usd, bool) or not isinstance(cost_usd, (int, float)):
        raise InvalidInputError(f"cost_usd must be a number, got {type(cost_usd).__name__}")
    cost = float(cost_usd)
    if not math.isfinite(cost) or cost < 0:
        raise InvalidInputError(f"cost_usd must be a finite number >= 0, got {cost_usd!r}")
    if prompt + completion > _MAX_TOKENS:
        raise InvalidInputError("prompt_tokens + completion_tokens is too large to store")
    return prompt, completion, cost


def _sum_columns() -> tuple[Any, ...]:
    return (
        func.count(UsageLogRow.id),
        func.coalesce(func.sum(UsageLogRow.prompt_tokens), 0),
        func.coalesce(func.sum(UsageLogRow.completion_tokens), 0),
        func.coalesce(func.sum(UsageLogRow.total_tokens), 0),
        func.coalesce(func.sum(UsageLogRow.cost_usd), 0.0),
    )


def _sums(row: Any, offset: int = 0) -> Sums:
    return Sums(int(row[offset]), int(row[offset + 1]), int(row[offset + 2]),
                int(row[offset + 3]), float(row[offset + 4]))


class UsageRepository:
    """Usage rows of every mind of a store (rankings span minds, so it is not per mind)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    # -- minds --------------------------------------------------------------------------------

    def mind_id(self, name: str) -> int:
        check_name(name, name="mind", max_length=200)
        found = self.session.scalar(select(MindRow.id).where(MindRow.name == name))
        if found is None:
            raise NotFoundError(f"no mind named {name!r}")
        return int(found)

    def budget(self, mind_id: int) -> float | None:
        settings = self.session.scalar(select(MindRow.settings).where(MindRow.id == mind_id))
        value = (settings or {}).get(BUDGET_SETTING)
        return None if value is None else float(value)

    def set_budget(self, mind_id: int, budget_usd: float | None) -> None:
        row = self.session.get(MindRow, mind_id, with_for_update=True)
        if row is None:
            raise NotFoundError(f"no mind with id {mind_id}")
        settings = dict(row.settings or {})  # a new dict: JSON columns do not track mutation
        if budget_usd is None:
            settings.pop(BUDGET_SETTING, None)
        else:
            settings[BUDGET_SETTING] = float(budget_usd)
        row.settings = settings
        self.session.flush()

    # -- writes -------------------------------------------------------------------------------

    def record(self, mind_id: int, model: str, prompt_tokens: int, completion_tokens: int,
               cost_usd: float, at: datetime | None = None) -> None:
        """One row; a Core INSERT (no identity-map bookkeeping: the log is write-mostly)."""
        self.session.execute(insert(UsageLogRow).values(
            mind_id=mind_id, model=model, prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens, total_tokens=prompt_tokens + completion_tokens,
            cost_usd=cost_usd, created_at=at or utcnow()))

    def record_embedding(self, mind_id: int, embedder: object, texts: int,
                         at: datetime | None = None) -> bool:
        """Log one embedding request of ``texts`` texts made for ``mind_id``; returns whether a row
        was written.

        The hook for the embedding pipelines (cognify's ``_embed``, ``embed_frames``, the query
        embedding of search): call it in the write transaction that follows the request. The
        model is logged as ``embedding:<provider>/<model>`` so ``by_model`` keeps it apart from
        LLM calls; the tokens are the embedder's ``last_usage_tokens`` (the count the provider
        reported for its last request) when it has one, else 0 — the call is still counted. The
        offline hashing embedder is no service and is not logged (as in the quota)."""
        provider = getattr(embedder, "provider", None)
        if provider in (None, "hashing") or texts <= 0:
            return False
        tokens = getattr(embedder, "last_usage_tokens", None)
        reported = tokens if isinstance(tokens, int) and 0 <= tokens <= _MAX_TOKENS else 0
        self.record(mind_id, f"embedding:{provider}/{getattr(embedder, 'model', '?')}"[:255],
                    reported, 0, 0.0, at)
        return True

    def cleanup(self, before: datetime, mind_id: int | None = None) -> int:
        """Delete rows older than ``before`` (of one mind, or of every mind); returns how many."""
        query = delete(UsageLogRow).where(UsageLogRow.created_at < before)
        if mind_id is not None:
            query = query.where(UsageLogRow.mind_id == mind_id)
        result = self.session.execute(query)
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    # -- reads --------------------------------------------------------------------------------

    @staticmethod
    def _window(query: Select[*_Ts], mind_id: int | None, since: datetime | None,
                until: datetime | None) -> Select[*_Ts]:
        if mind_id is not None:
            query = query.where(UsageLogRow.mind_id == mind_id)
        if since is not None:
            query = query.where(UsageLogRow.created_at >= since)
        if until is not None:
            query = query.where(UsageLogRow.created_at < until)
        return query

    def totals(self, mind_id: int | None = None, since: datetime | None = None,
               until: datetime | None = None) -> Sums:
        query = self._window(select(*_sum_columns()), mind_id, since, until)
        row = self.session.execute(query).one()
        return _sums(row)

    def by_model(self, mind_id: int | None = None,
                 since: datetime | None = None) -> list[tuple[str, Sums]]:
        """Per model, most expensive first (then by name)."""
        query = self._window(select(UsageLogRow.model, *_sum_columns()), mind_id, since, None)
        rows = self.session.execute(query.group_by(UsageLogRow.model))
        found = [(str(r[0]), _sums(r, 1)) for r in rows]
        return sorted(found, key=lambda item: (-item[1].cost_usd, item[0]))

    def by_mind(self, since: datetime | None = None) -> list[tuple[str, Sums]]:
        """Per mind (by name), most expensive first, then by name."""
        query = self._window(select(MindRow.name, *_sum_columns()).join(
            MindRow, MindRow.id == UsageLogRow.mind_id), None, since, None)
        rows = self.session.execute(query.group_by(MindRow.name))
        found = [(str(r[0]), _sums(r, 1)) for r in rows]
        return sorted(found, key=lambda item: (-item[1].cost_usd, item[0]))

    def rows(self, mind_id: int | None, since: datetime | None,
             until: datetime | None = None) -> Iterator[tuple[datetime, int, int, int, float]]:
        """(created_at, prompt, completion, total, cost) of the window, streamed in batches."""
        query = self._window(select(UsageLogRow.created_at, UsageLogRow.prompt_tokens,
                                    UsageLogRow.completion_tokens, UsageLogRow.total_tokens,
                                    UsageLogRow.cost_usd), mind_id, since, until)
        for row in self.session.execute(query.execution_options(yield_per=1000)):
            yield row[0], int(row[1]), int(row[2]), int(row[3]), float(row[4])

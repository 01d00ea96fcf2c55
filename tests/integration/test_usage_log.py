"""store.usage: the usage log's totals per mind / model / day / month, ranking, cleanup, budgets.

Every expected number is computed from the rows the test recorded, never written down by hand.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

import pytest

import waggle_store as ws

NOW = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)


Row = tuple[str, str, int, int, float, datetime]


def _rows(writer: int) -> list[Row]:
    """A writer's rows: two minds, two models, spread over four days and two months."""
    rows = []
    for i in range(20):
        mind = "alpha" if (writer + i) % 3 else "beta"
        model = "sonnet" if i % 2 else "haiku"
        at = NOW - timedelta(days=(writer + i) % 4 * 9, hours=i)
        cost = round(0.001 * (writer + i + 1), 6)
        rows.append((mind, model, 100 + writer * 7 + i, 10 + i, cost, at))
    return rows


def test_totals_equal_the_rows_under_eight_concurrent_writers(store_factory) -> None:
    first = store_factory(embedder=None)
    first.mind("alpha")
    first.mind("beta")
    stores = [store_factory(embedder=None) for _ in range(8)]
    barrier = threading.Barrier(8)
    errors: list[Exception] = []

    def write(index: int) -> None:
        try:
            barrier.wait()
            for mind, model, p, c, cost, at in _rows(index):
                stores[index].usage.record(mind, model, prompt_tokens=p, completion_tokens=c,
                                           cost_usd=cost, at=at)
        except Exception as exc:  # noqa: BLE001 - asserted empty below, so a failure shows
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

    rows = [r for w in range(8) for r in _rows(w)]
    usage = first.usage
    assert usage.totals().calls == len(rows) == 160
    assert usage.total_tokens() == sum(p + c for _, _, p, c, _, _ in rows)
    assert usage.total_cost() == pytest.approx(sum(r[4] for r in rows))

    for mind in ("alpha", "beta"):
        mine = [r for r in rows if r[0] == mind]
        assert usage.totals(mind).calls == len(mine)
        assert usage.total_tokens(mind) == sum(p + c for _, _, p, c, _, _ in mine)
        assert usage.total_cost(first.mind(mind)) == pytest.approx(sum(r[4] for r in mine))
        per_model = usage.by_model(mind)
        for model in ("sonnet", "haiku"):
            sel = [r for r in mine if r[1] == model]
            got = per_model[model]
            assert (got.mind, got.model, got.calls) == (mind, model, len(sel))
            assert got.prompt_tokens == sum(r[2] for r in sel)
            assert got.completion_tokens == sum(r[3] for r in sel)
            assert got.cost_usd == pytest.approx(sum(r[4] for r in sel))
        expected_days: dict[date, list[Row]] = defaultdict(list)
        for r in mine:
            expected_days[r[5].date()].append(r)
        got_days = usage.daily(mind, days=60, now=NOW)
        assert [d.day for d in got_days] == sorted(expected_days)
        for d in got_days:
            sel = expected_days[d.day]
            assert (d.calls, d.total_tokens) == (len(sel), sum(r[2] + r[3] for r in sel))
            assert d.cost_usd == pytest.approx(sum(r[4] for r in sel))
        months: dict[str, float] = defaultdict(float)
        for r in mine:
            months[r[5].strftime("%Y-%m")] += r[4]
        got_months = usage.monthly(mind, months=3, now=NOW)
        assert [m.month for m in got_months] == sorted(months)
        expected = [months[k] for k in sorted(months)]
        assert [m.cost_usd for m in got_months] == pytest.approx(expected)

    ranking = usage.ranking()
    cost = {m: sum(r[4] for r in rows if r[0] == m) for m in ("alpha", "beta")}
    assert [t.mind for t in ranking] == sorted(cost, key=lambda m: -cost[m])
    assert all(t.model is None for t in ranking)
    assert [t.cost_usd for t in ranking] == pytest.approx(sorted(cost.values(), reverse=True))


def test_windows_cleanup_and_unknown_minds(store: ws.Store) -> None:
    store.mind("a")
    now = datetime.now(UTC)
    store.usage.record("a", "m", prompt_tokens=5, cost_usd=1.0, at=now - timedelta(days=40))
    store.usage.record("a", "m", prompt_tokens=7, completion_tokens=3, cost_usd=2.0,
                       at=now - timedelta(hours=2))
    assert store.usage.total_cost("a", since=now - timedelta(days=1)) == pytest.approx(2.0)
    assert store.usage.total_cost("a", until=now - timedelta(days=1)) == pytest.approx(1.0)
    assert store.usage.by_model(since=now - timedelta(days=1))["m"].total_tokens == 10
    assert store.usage.by_model()["m"].mind is None
    assert store.usage.cleanup(30) == 1
    assert store.usage.totals("a").calls == 1
    assert store.usage.cleanup(30) == 0
    with pytest.raises(ws.NotFoundError):
        store.usage.record("nobody", "m", prompt_tokens=1)
    for bad in ({"prompt_tokens": -1}, {"cost_usd": float("nan")}, {"completion_tokens": 1.5}):
        with pytest.raises(ws.InvalidInputError):
            store.usage.record("a", "m", **bad)  # type: ignore[arg-type]
    assert store.usage.totals("a").calls == 1


def test_monthly_budget(store: ws.Store) -> None:
    mind = store.mind("spender")
    status = store.usage.check_budget(mind, now=NOW)
    assert status.budget_usd is None
    assert not status.exceeded

    store.usage.set_budget("spender", 1.5)
    store.usage.record(mind, "m", cost_usd=1.0, at=NOW - timedelta(days=1))
    store.usage.record(mind, "m", cost_usd=9.0, at=NOW - timedelta(days=40))  # last month
    status = store.usage.check_budget("spender", now=NOW)
    assert (status.month, status.exceeded) == ("2026-05", False)
    assert status.spent_usd == pytest.approx(1.0)
    assert status.remaining_usd == pytest.approx(0.5)

    store.usage.record(mind, "m", cost_usd=0.5, at=NOW)
    status = store.usage.budget_status(mind, now=NOW)
    assert status.exceeded
    assert status.remaining_usd == 0.0
    with pytest.raises(ws.BudgetExceededError, match="spender") as info:
        store.usage.check_budget(mind, now=NOW)
    assert info.value.budget_usd == 1.5

    store.usage.set_budget(mind, None)
    assert not store.usage.check_budget(mind, now=NOW).exceeded


class _ReportingEmbedder:
    """What a provider adapter would expose after a request: its name and the tokens billed."""

    provider = "openai"
    model = "text-embedding-3-small"
    last_usage_tokens = 42


class _Hashing:
    provider = "hashing"
    model = "blake2b"


def test_embedding_requests_are_logged_apart_from_llm_calls(store: ws.Store) -> None:
    from waggle_store.repositories.usage import UsageRepository

    mind = store.mind("embeds")
    with store.write() as s:
        repo = UsageRepository(s)
        assert repo.record_embedding(mind.id, _ReportingEmbedder(), texts=3)
        assert not repo.record_embedding(mind.id, _Hashing(), texts=3)
    store.usage.record(mind, "sonnet", prompt_tokens=10)
    models = store.usage.by_model(mind)
    assert set(models) == {"embedding:openai/text-embedding-3-small", "sonnet"}
    assert models["embedding:openai/text-embedding-3-small"].prompt_tokens == 42


class _BilledHashing:
    """A deterministic stand-in for a paid provider: the hashing vectors under another name."""

    provider = "paidapi"
    model = "embed-v1"
    dimensions = 64
    model_id = "paidapi/embed-v1/64"

    def __init__(self) -> None:
        from waggle_store.embeddings.hashing import HashingEmbedder

        self._inner = HashingEmbedder(64)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._inner.embed_query(text)


def test_cognify_logs_its_embedding_requests(store_factory) -> None:
    store = store_factory(embedder=_BilledHashing())
    mind = store.mind("billed")
    mind.cognify("Ada wrote the first program")
    mind.cognify_batch([f"fact {i} about engines" for i in range(3)])
    logged = store.usage.by_model(mind)
    assert set(logged) == {"embedding:paidapi/embed-v1"}
    # One embedding request per cognify, and per chunk of a batch.
    assert logged["embedding:paidapi/embed-v1"].calls == 2
    assert store.usage.by_model(store.mind("other")) == {}

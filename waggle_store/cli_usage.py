"""``waggle-store usage``: the store's log of model calls (tokens, cost) and per-mind budgets.

``record`` lets a script or a shell-driven agent log a call it made; the other commands read the
log: a mind's totals by model and its budget, the minds ranked by cost, day by day. Months and
days are UTC. Separate from ``cli.py`` to keep each module small; :func:`register` adds the group.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

import waggle_store as ws
from waggle_store.cli_output import Failure, JsonOpt, emit_json, existing_mind, opts, table

usage_app = typer.Typer(help="Model usage (tokens, cost) per mind, and monthly budgets.",
                        no_args_is_help=True)

SinceOpt = Annotated[
    str | None, typer.Option(help="Only usage at or after this time (ISO-8601, e.g. 2026-11-01).")
]
_TOTAL_COLUMNS = ["calls", "prompt tokens", "completion tokens", "total tokens", "cost (USD)"]


def _numbers(t: ws.UsageTotals | ws.UsageDay) -> list[Any]:
    return [t.calls, t.prompt_tokens, t.completion_tokens, t.total_tokens, f"{t.cost_usd:.4f}"]


def _budget_line(status: ws.UsageBudget) -> str:
    if status.budget_usd is None:
        return f"no budget; spent {status.spent_usd:.4f} USD in {status.month}"
    return (f"spent {status.spent_usd:.4f} of {status.budget_usd:.4f} USD in {status.month}; "
            f"{status.remaining_usd or 0.0:.4f} left" + (" — EXCEEDED" if status.exceeded else ""))


@usage_app.command("record")
def usage_record(
    ctx: typer.Context,
    model: Annotated[str, typer.Argument(help="The model called, e.g. gpt-4o-mini.")],
    prompt_tokens: Annotated[int, typer.Option(min=0)] = 0,
    completion_tokens: Annotated[int, typer.Option(min=0)] = 0,
    cost: Annotated[float, typer.Option(min=0.0, help="What the call cost, in USD.")] = 0.0,
    at: Annotated[
        str | None, typer.Option(help="When the call was made (ISO-8601; default: now).")
    ] = None,
) -> None:
    """Log one model call of the mind."""
    with opts(ctx).store(embed=False) as store:
        mind = store.mind(opts(ctx).mind_name)
        store.usage.record(mind, model, prompt_tokens=prompt_tokens,
                           completion_tokens=completion_tokens, cost_usd=cost, at=at)
    typer.echo(f"recorded {model} for '{mind.name}': "
               f"{prompt_tokens + completion_tokens} tokens, {cost:.4f} USD")


@usage_app.command("show")
def usage_show(
    ctx: typer.Context,
    all_minds: Annotated[
        bool, typer.Option("--all-minds", help="Every mind's usage, not only --mind's.")
    ] = False,
    since: SinceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Totals and totals by model, of the mind (or every mind), with the mind's budget."""
    options = opts(ctx)
    with options.store(embed=False, read=True) as store:
        mind = None if all_minds else existing_mind(store, options.mind_name).name
        totals = store.usage.totals(mind, since=since)
        models = store.usage.by_model(mind, since=since)
        budget = None if mind is None else store.usage.budget_status(mind)
    if as_json:
        emit_json({"totals": totals, "by_model": list(models.values()), "budget": budget})
        return
    rows = [["all models", *_numbers(totals)]]
    rows += [[name, *_numbers(t)] for name, t in models.items()]
    table(f"usage of {'every mind' if mind is None else repr(mind)}", ["model", *_TOTAL_COLUMNS],
          rows)
    if budget is not None:
        typer.echo(f"budget: {_budget_line(budget)}")


@usage_app.command("ranking")
def usage_ranking(ctx: typer.Context, since: SinceOpt = None, as_json: JsonOpt = False) -> None:
    """The minds by cost, highest first (minds without usage left out)."""
    with opts(ctx).store(embed=False, read=True) as store:
        ranking = store.usage.ranking(since=since)
    if as_json:
        emit_json(ranking)
    else:
        table("minds by cost", ["mind", *_TOTAL_COLUMNS], [[t.mind, *_numbers(t)] for t in ranking])


@usage_app.command("daily")
def usage_daily(
    ctx: typer.Context,
    days: Annotated[int, typer.Option(min=1, max=36_500, help="Over the last N days.")] = 30,
    all_minds: Annotated[bool, typer.Option("--all-minds", help="Every mind's usage.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Usage per UTC day with usage, oldest first."""
    options = opts(ctx)
    with options.store(embed=False, read=True) as store:
        mind = None if all_minds else existing_mind(store, options.mind_name).name
        found = store.usage.daily(mind, days=days)
    if as_json:
        emit_json(found)
    else:
        table("usage per day", ["day", *_TOTAL_COLUMNS],
              [[d.day.isoformat(), *_numbers(d)] for d in found])


@usage_app.command("budget")
def usage_budget(
    ctx: typer.Context,
    set_usd: Annotated[
        float | None, typer.Option("--set", min=0.0, metavar="USD", help="Set the monthly budget.")
    ] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Remove the budget.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The mind's monthly budget and this month's spend; --set or --remove change it. Exits 1
    when the budget is spent, so a script can stop before the next call."""
    if set_usd is not None and remove:
        raise typer.BadParameter("give --set or --remove, not both", param_hint="--remove")
    options = opts(ctx)
    changes = set_usd is not None or remove
    with options.store(embed=False, read=not changes) as store:
        mind = (store.mind(options.mind_name) if changes
                else existing_mind(store, options.mind_name))
        if set_usd is not None or remove:
            store.usage.set_budget(mind, set_usd)
        status = store.usage.budget_status(mind)
    if as_json:
        emit_json(status)
    else:
        typer.echo(f"'{status.mind}': {_budget_line(status)}")
    if status.exceeded:
        raise Failure(f"the monthly budget of mind '{status.mind}' is spent")


def register(app: typer.Typer) -> None:
    """Add the ``usage`` group to the main app (``cli.py``)."""
    app.add_typer(usage_app, name="usage")

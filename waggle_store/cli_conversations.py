"""``waggle-store conversations`` and ``waggle-store agents``: read an agent's message history
and the agents registry from the shell.

``conversations list`` shows the mind's conversations (newest first), ``conversations show ID``
one conversation's messages (oldest first), ``conversations canonical`` the compacted canonical
conversation; ``agents list`` and ``agents show NAME`` the registry. Separate from ``cli.py``
to keep each module small; :func:`register` adds both groups.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

import waggle_store as ws
from waggle_store.cli_output import Failure, JsonOpt, emit_json, opts, table

conversations_app = typer.Typer(help="The mind's conversations (message history per channel).",
                                no_args_is_help=True)
agents_app = typer.Typer(help="The agents registry (each agent's manifest and state).",
                         no_args_is_help=True)

LimitOpt = Annotated[int | None, typer.Option("--limit", "-n", min=0,
                                              help="Only the newest N messages.")]


def _message_rows(messages: list[ws.Message]) -> list[list[Any]]:
    return [[m.seq, m.created_at.strftime("%Y-%m-%d %H:%M") if m.created_at else "", m.role,
             m.content] for m in messages]


@conversations_app.command("list")
def conversations_list(
    ctx: typer.Context,
    channel: Annotated[str | None, typer.Option(help="Only this channel's conversations.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The mind's conversations, newest first."""
    with opts(ctx).open_mind(embed=False) as mind:
        infos = mind.conversations.list(channel=channel)
    if as_json:
        emit_json(infos)
        return
    table("conversations", ["id", "channel", "label", "messages", "open", "updated"],
          [[i.id, i.channel, i.label or "", i.message_count, "yes" if i.is_open else "no",
            i.updated_at.strftime("%Y-%m-%d %H:%M")] for i in infos])


@conversations_app.command("show")
def conversations_show(
    ctx: typer.Context,
    conversation_id: Annotated[int, typer.Argument(metavar="ID", min=1)],
    limit: LimitOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One conversation's messages, oldest first."""
    with opts(ctx).open_mind(embed=False) as mind:
        found = mind.conversations.get(conversation_id)
        if found is None:
            raise Failure(f"no conversation {conversation_id} in mind '{mind.name}'")
        messages = mind.conversations.messages(conversation_id, limit=limit)
    if as_json:
        emit_json(replace(found, messages=messages))
        return
    title = f"conversation {found.id} ({found.channel}{', ' + found.label if found.label else ''})"
    table(title, ["seq", "created", "role", "content"], _message_rows(messages))


@conversations_app.command("canonical")
def conversations_canonical(
    ctx: typer.Context,
    window: Annotated[int, typer.Option(min=0, help="The newest N messages.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """The canonical conversation: its compacted summary and newest messages."""
    with opts(ctx).open_mind(embed=False) as mind:
        context = mind.conversations.canonical(window=window)
    if as_json:
        emit_json(context)
        return
    typer.echo(f"summary: {context.summary}" if context.summary else "summary: (none)")
    table("canonical conversation", ["seq", "created", "role", "content"],
          _message_rows(context.messages))


@agents_app.command("list")
def agents_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Every agent, by name."""
    with opts(ctx).store(embed=False) as store:
        agents = store.agents.list()
    if as_json:
        emit_json(agents)
        return
    table("agents", ["name", "mind", "updated", "manifest keys"],
          [[a.name, a.mind, a.updated_at.strftime("%Y-%m-%d %H:%M"), ", ".join(sorted(a.manifest))]
           for a in agents])


@agents_app.command("show")
def agents_show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME")],
    as_json: JsonOpt = False,
) -> None:
    """One agent: its manifest and state (names match case-insensitively)."""
    with opts(ctx).store(embed=False) as store:
        agent = store.agents.get(name)
    if agent is None:
        raise Failure(f"no agent named {name!r}")
    if as_json:
        emit_json(agent)
        return
    table(f"agent {agent.name}", ["field", "value"], [
        ["mind", agent.mind], ["created", agent.created_at.isoformat()],
        ["updated", agent.updated_at.isoformat()],
        *[[f"manifest.{k}", v] for k, v in sorted(agent.manifest.items())],
        *[[f"state.{k}", v] for k, v in sorted(agent.state.items())]])


def register(app: typer.Typer) -> None:
    """Add the ``conversations`` and ``agents`` groups to the main app (``cli.py``)."""
    app.add_typer(conversations_app, name="conversations")
    app.add_typer(agents_app, name="agents")

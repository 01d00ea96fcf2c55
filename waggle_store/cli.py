"""The ``waggle-store`` command: an agent's memory from the shell, and its MCP server.

Built on Typer + Rich like the tools its users already know (basic-memory, mem0): tables and
progress bars on a terminal, plain lines when piped (so scripts can read them), ``--json`` on
every command that reads. Exit codes: 0 ok, 1 failure (the store's message on stderr), 2 usage.
The memory commands of one mind are here; those moving memory in and out of a mind and keeping
it in shape (export, import, harvest, consolidate) are in ``cli_lifecycle.py``, the usage log in
``cli_usage.py``, and those acting on the whole store (health, minds, migrate, mcp, demo) in
``cli_ops.py``, to keep each module small.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import asdict
from typing import Annotated, Any

import typer

import waggle_store as ws
from waggle_store import cli_conversations, cli_lifecycle, cli_ops, cli_usage
from waggle_store.cli_output import (
    Failure,
    Importance,
    JsonOpt,
    Options,
    Profile,
    emit_json,
    err,
    opts,
    progress,
    table,
)
from waggle_store.dialects.sqlite_engine import WAL_RESET_WARNING

DEFAULT_URL = "sqlite:///./waggle.db"
HELP = ("Durable memory for AI agents, on SQLite or PostgreSQL: save, search and manage an agent's "
        "memories, run the MCP server, migrate the schema. Exit codes: 0 ok, 1 failure, 2 usage.")

app = typer.Typer(name="waggle-store", help=HELP, no_args_is_help=True,
                  rich_markup_mode=None, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"waggle-store {version('waggle-store')}")
        except PackageNotFoundError:
            typer.echo("waggle-store (not installed)")
        raise typer.Exit


@app.callback()
def _root(
    ctx: typer.Context,
    url: Annotated[
        str,
        typer.Option(
            envvar="WAGGLE_DATABASE_URL",
            help="Store URL: sqlite:///path or postgresql+psycopg://...",
        ),
    ] = DEFAULT_URL,
    schema: Annotated[
        str | None,
        typer.Option(
            envvar="WAGGLE_PG_SCHEMA", help="PostgreSQL schema of the store (default: waggle)."
        ),
    ] = None,
    mind: Annotated[
        str | None,
        typer.Option(envvar="WAGGLE_MIND", help="Mind (workspace) to use (default: 'default')."),
    ] = None,
    embedder: Annotated[
        str,
        typer.Option(
            envvar="WAGGLE_EMBEDDER",
            help="auto, a provider name (local, ollama, openai, voyage, hashing) or none.",
        ),
    ] = "auto",
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    ctx.obj = Options(url=url, schema=schema, mind=mind, embedder=embedder)


def _frame_row(frame: ws.Frame) -> list[Any]:
    return [frame.id, frame.created_at.strftime("%Y-%m-%d %H:%M"), frame.importance, frame.content]


# -- memories ------------------------------------------------------------------------------------


@app.command()
def save(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The memory to store.")],
    importance: Annotated[
        Importance, typer.Option(help="critical, important, normal, temporary or deprecated.")
    ] = Importance.normal,
    as_json: JsonOpt = False,
) -> None:
    """Save a memory (cognify: stored, indexed, its entities linked)."""
    with opts(ctx).open_mind() as mind:
        result = mind.cognify(text, importance=importance.value)
    if as_json:
        emit_json(result)
    else:
        typer.echo(
            f"saved #{result.frame_id} ({result.entities_extracted} entities, "
            f"{result.relations_created} relations, vector {result.vector_status})"
        )


@app.command()
def search(
    ctx: typer.Context,
    query: str,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N results.")] = 10,
    profile: Annotated[
        Profile, typer.Option(help="balanced, recent, important or connected.")
    ] = Profile.balanced,
    as_json: JsonOpt = False,
) -> None:
    """Search memories (keyword + vector), best first."""
    with opts(ctx).open_mind(read=True) as mind:
        hits = mind.search(query, limit=limit, profile=profile.value)
    if as_json:
        emit_json(
            [
                {
                    "frame_id": h.frame.id,
                    "content": h.frame.content,
                    "score": h.final_score,
                    "importance": h.frame.importance,
                    "created_at": h.frame.created_at,
                }
                for h in hits
            ]
        )
        return
    table(
        f"'{query}'",
        ["id", "score", "importance", "content"],
        [[h.frame.id, f"{h.final_score:.3f}", h.frame.importance, h.frame.content] for h in hits],
    )


@app.command()
def recent(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 20,
    as_json: JsonOpt = False,
) -> None:
    """The latest memories, newest first."""
    with opts(ctx).open_mind(embed=False, read=True) as mind:
        frames = mind.frames.recent(limit)
    if as_json:
        emit_json(frames)
    else:
        table(
            "recent memories",
            ["id", "created", "importance", "content"],
            [_frame_row(f) for f in frames],
        )


@app.command()
def show(
    ctx: typer.Context,
    frame_id: Annotated[int, typer.Argument(metavar="ID")],
    as_json: JsonOpt = False,
) -> None:
    """One memory, with its metadata."""
    with opts(ctx).open_mind(embed=False, read=True) as mind:
        frame = mind.frames.get(frame_id)
    if frame is None:
        raise Failure(f"no memory #{frame_id} in mind '{opts(ctx).mind_name}'")
    if as_json:
        emit_json(frame)
    else:
        table(f"memory #{frame.id}", ["field", "value"], list(asdict(frame).items()))


@app.command()
def forget(ctx: typer.Context, frame_id: Annotated[int, typer.Argument(metavar="ID")]) -> None:
    """Delete one memory (its index rows and mentions go with it)."""
    with opts(ctx).open_mind(embed=False, read=True) as mind:
        if mind.frames.get(frame_id) is None:
            raise Failure(f"no memory #{frame_id} in mind '{mind.name}'")
        mind.frames.delete(frame_id)
    typer.echo(f"forgot #{frame_id}")


# -- identity, awareness, knowledge, stats -------------------------------------------------------


@app.command()
def identity(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Option(help="The agent's name.")] = None,
    role: Annotated[str | None, typer.Option()] = None,
    department: Annotated[str | None, typer.Option()] = None,
    personality: Annotated[str | None, typer.Option()] = None,
    capabilities: Annotated[str | None, typer.Option()] = None,
    system_prompt: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the mind's identity; the options change only the fields given."""
    given = {
        k: v
        for k, v in {
            "name": name,
            "role": role,
            "department": department,
            "personality": personality,
            "capabilities": capabilities,
            "system_prompt": system_prompt,
        }.items()
        if v is not None
    }
    with opts(ctx).open_mind(embed=False, read=not given) as mind:
        current = mind.identity.get()
        if given and current is not None:
            current = mind.identity.update(**given)
        elif given:
            if "name" not in given:
                raise Failure("this mind has no identity yet: give it a --name first")
            current = mind.identity.set(**given)
    if as_json:
        emit_json(current)
    elif current is None:
        typer.echo("no identity set")
    else:
        table("identity", ["field", "value"], list(asdict(current).items()))


@app.command()
def awareness(
    ctx: typer.Context,
    add: Annotated[str | None, typer.Option(help="Add this item to awareness.")] = None,
    category: Annotated[str, typer.Option(help="task, action, pending or flag.")] = "task",
    priority: Annotated[int, typer.Option(help="Priority of the added item.")] = 0,
    clear: Annotated[bool, typer.Option("--clear", help="Remove every item.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the mind's active awareness items; --add or --clear change them."""
    with opts(ctx).open_mind(embed=False, read=not (clear or add is not None)) as mind:
        if clear:
            err.print(f"removed {mind.awareness.clear()} item(s)")
        if add is not None:
            mind.awareness.add(category, add, priority=priority)
        items = mind.awareness.active()
    if as_json:
        emit_json(items)
    else:
        table(
            "awareness",
            ["id", "category", "priority", "content"],
            [[i.id, i.category, i.priority, i.content] for i in items],
        )


@app.command()
def entities(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Part of a name; empty for all.")] = "",
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Active entities of the knowledge graph whose name contains QUERY."""
    with opts(ctx).open_mind(embed=False, read=True) as mind:
        found = mind.knowledge.search_entities(query, limit=limit)
    if as_json:
        emit_json(found)
    else:
        table("entities", ["id", "type", "name"], [[e.id, e.entity_type, e.name] for e in found])


@app.command()
def stats(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Counts for the mind: memories by type and importance, entities by type."""
    with opts(ctx).open_mind(embed=False, read=True) as mind:
        frames = mind.frames.stats()
        counts = mind.knowledge.entity_type_counts()
    data = {"mind": mind.name, "frames": frames, "entities": counts}
    if as_json:
        emit_json(data)
        return
    rows: list[list[Any]] = [["memories", "total", frames.total]]
    rows += [["memories", f"type {k}", v] for k, v in sorted(frames.by_type.items())]
    rows += [["memories", k, v] for k, v in sorted(frames.by_importance.items())]
    rows += [["entities", k, v] for k, v in sorted(counts.items())]
    table(f"mind '{mind.name}'", ["what", "of", "count"], rows)


@app.command()
def reconcile(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Repair derived indexes (keyword, vector): the whole store, or --mind only."""
    options = opts(ctx)
    with options.store() as store, progress("reconcile") as update:
        report = store.reconcile(mind=options.mind, progress=update)
    if as_json:
        emit_json(report)
    else:
        typer.echo(
            f"fts fixed {report.fts_fixed}, vectors fixed {report.vectors_fixed}, "
            f"orphans removed {report.orphans_removed}"
        )


cli_lifecycle.register(app)
cli_usage.register(app)
cli_conversations.register(app)
cli_ops.register(app)


# -- entry point ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 failure, 2 usage)."""
    command = typer.main.get_command(app)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        # One CLI command is one short process: the WAL-reset bug needs several processes
        # writing one store at once, which `mcp` (a long-running server) is, and it says so.
        warnings.filterwarnings("ignore", message=WAL_RESET_WARNING)
        warnings.showwarning = _show_warning
        try:
            result = command.main(args=argv, prog_name="waggle-store", standalone_mode=False)
        except typer.Exit as exc:
            return exc.exit_code
        except typer.Abort:
            err.print("aborted")
            return 1
        except typer.TyperException as exc:  # usage errors (exit code 2) and the like
            show = getattr(exc, "show", None)
            if callable(show):
                show()
            else:
                err.print(f"Error: {exc.format_message()}", markup=False)
            return exc.exit_code
        except (Failure, ws.WaggleStoreError) as exc:
            err.print(f"waggle-store: {exc}", markup=False)
            return 1
        except OSError as exc:  # a file the command reads or writes: one line, not a traceback
            where = f": {exc.filename}" if exc.filename else ""
            err.print(f"waggle-store: {exc.strerror or exc}{where}", markup=False)
            return 1
    return result if isinstance(result, int) else 0


_warned: set[str] = set()


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Warnings (an old SQLite, a skipped index) as one line each, once, not a source excerpt."""
    text = str(message)
    if text not in _warned:
        _warned.add(text)
        err.print(f"warning: {text}", markup=False)


if __name__ == "__main__":
    sys.exit(main())

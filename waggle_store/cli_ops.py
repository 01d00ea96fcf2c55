"""The operational ``waggle-store`` commands: health, minds, migrate, mcp, demo.

Separate from the memory commands of ``cli.py`` because they act on the store as a whole (its
minds, its schema, its server), and to keep each module small. :func:`register` adds them to the
main app.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

import waggle_store as ws
from waggle_store.cli_output import (
    Failure,
    JsonOpt,
    YesOpt,
    embedder_line,
    embedder_spec,
    emit_json,
    err,
    opts,
    progress,
    require_existing,
    table,
)
from waggle_store.dialects.sqlite_engine import WAL_RESET_WARNING

ops_app = typer.Typer()
minds_app = typer.Typer(help="List, create and drop minds (workspaces).", no_args_is_help=True)
migrate_app = typer.Typer(help="Run and inspect the schema migrations.", no_args_is_help=True)


# -- operations ----------------------------------------------------------------------------------

@ops_app.command()
def health(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The store's health. Never creates a store: a missing one is a failure."""
    options = opts(ctx)
    require_existing(options.url)
    try:
        with options.store(upgrade=False) as store:
            report = store.health()
    except ws.MigrationError as exc:
        raise Failure(f"no usable store at {_safe(options.url)}: {exc}") from exc
    if as_json:
        emit_json(report)
        return
    rows: list[list[Any]] = [["dialect", f"{report.dialect} ({report.driver})"],
                             ["keyword search", report.keyword_search],
                             ["vector search", report.vector_search]]
    rows += [[k, v] for k, v in sorted(report.versions.items())]
    rows.append(["embedder", embedder_line(report.embedder)])
    if report.embedder is not None and report.embedder.reason:
        rows.append(["embedder chosen", report.embedder.reason])
    rows += [["note", reason] for reason in report.reasons]
    table("health", ["check", "value"], rows)


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


# -- minds ---------------------------------------------------------------------------------------


@minds_app.command("list")
def minds_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Every mind of the store."""
    with opts(ctx).store(embed=False, read=True) as store:
        infos = store.list_minds()
    if as_json:
        emit_json(infos)
    else:
        table(
            "minds",
            ["name", "kind", "created"],
            [[i.name, i.kind, i.created_at.strftime("%Y-%m-%d %H:%M")] for i in infos],
        )


@minds_app.command("create")
def minds_create(
    ctx: typer.Context,
    name: str,
    kind: Annotated[str, typer.Option(help="workspace or personal.")] = "workspace",
) -> None:
    """Create a mind (creating an existing one is a no-op)."""
    with opts(ctx).store(embed=False) as store:
        mind = store.mind(name, kind=kind)
    typer.echo(f"mind '{mind.name}' ({mind.kind}) is ready")


@minds_app.command("drop")
def minds_drop(ctx: typer.Context, name: str, yes: YesOpt = False) -> None:
    """Delete a mind and every row of it. Asks first, unless --yes."""
    if not yes and not typer.confirm(f"Delete mind '{name}' and all its memories?", default=False):
        err.print("nothing dropped")
        raise typer.Exit(1)
    with opts(ctx).store(embed=False) as store:
        store.drop_mind(name)
    typer.echo(f"dropped mind '{name}'")


# -- migrate -------------------------------------------------------------------------------------


@migrate_app.command("upgrade")
def migrate_upgrade(
    ctx: typer.Context,
    rev: Annotated[str | None, typer.Argument(metavar="REV",
                                              help="Target revision (default: head).")] = None,
    revision: Annotated[str | None, typer.Option(hidden=True)] = None,
) -> None:
    """Upgrade the schema to REV (head by default)."""
    from waggle_store import migrate

    if rev is not None and revision is not None and rev != revision:
        raise typer.BadParameter("give the revision once", param_hint="REV")
    options = opts(ctx)
    migrate.upgrade(options.url, rev or revision or "head", schema=options.schema)
    typer.echo(_revision_line(migrate.current(options.url, schema=options.schema)))


@migrate_app.command("vector-table")
def migrate_vector_table(ctx: typer.Context) -> None:
    """Create the vector table of the --embedder's model (run as the schema's owner): a store
    opened with upgrade=False runs no DDL, so a runtime role needs it made beforehand."""
    from waggle_store import migrate

    options = opts(ctx)
    if embedder_spec(options.embedder) is None:
        raise Failure("migrate vector-table needs an embedder: --embedder NAME")
    model_id = migrate.ensure_vector_table(options.url, options.embedder, schema=options.schema)
    typer.echo("no vector support in this database: nothing to create" if model_id is None
               else f"vector table of model {model_id} ready")


@migrate_app.command("grant-runtime")
def migrate_grant_runtime(ctx: typer.Context, role: str) -> None:
    """Grant ROLE what a store needs at run time (DML, sequences, schema usage), nothing else."""
    from waggle_store import migrate

    options = opts(ctx)
    migrate.grant_runtime(options.url, role, schema=options.schema)
    typer.echo(f"granted {role} the run-time privileges")


@migrate_app.command("current")
def migrate_current(ctx: typer.Context) -> None:
    """Print the revision the database is at (None: never migrated)."""
    from waggle_store import migrate

    options = opts(ctx)
    require_existing(options.url)
    typer.echo(str(migrate.current(options.url, schema=options.schema)))


@migrate_app.command("check")
def migrate_check(ctx: typer.Context) -> None:
    """Compare the models with the migrated schema; exit 1 if they differ."""
    from waggle_store import migrate

    options = opts(ctx)
    require_existing(options.url)
    if migrate.current(options.url, schema=options.schema) is None:
        raise Failure("the database has no waggle_store schema yet: "
                      "run `waggle-store migrate upgrade`")
    diffs = migrate.check(options.url, schema=options.schema)
    for diff in diffs:
        typer.echo(_diff_line(diff))
    if diffs:
        raise Failure(f"{len(diffs)} difference(s) between the models and the schema")
    typer.echo("schema matches the models")


def _diff_line(diff: Any) -> str:
    """One difference as words (``add_table waggle_minds``), not the objects' reprs."""
    if isinstance(diff, list):
        return "; ".join(_diff_line(d) for d in diff)
    if isinstance(diff, tuple):
        return " ".join(_object_name(part) for part in diff if part is not None)
    return _object_name(diff)


def _object_name(part: Any) -> str:
    name = getattr(part, "name", None)
    if isinstance(name, str):
        table = getattr(getattr(part, "table", None), "name", None)
        return f"{table}.{name}" if isinstance(table, str) else name
    return str(part)


def _revision_line(revision: str | None) -> str:
    return f"at revision {revision}" if revision else "at base: no waggle_store tables are left"


@migrate_app.command("downgrade")
def migrate_downgrade(ctx: typer.Context,
                      revision: Annotated[str, typer.Argument(help="Target revision (e.g. base).")],
                      yes: YesOpt = False) -> None:
    """Downgrade the schema to REVISION; this can delete data, so --yes is required."""
    from waggle_store import migrate

    if not yes:
        raise typer.BadParameter("downgrading can delete data: add --yes", param_hint="--yes")
    options = opts(ctx)
    migrate.downgrade(options.url, revision, schema=options.schema)
    typer.echo(_revision_line(migrate.current(options.url, schema=options.schema)))


@ops_app.command()
def mcp(
    ctx: typer.Context,
    http: Annotated[
        str | None,
        typer.Option(metavar="HOST:PORT", help="Serve streamable HTTP here instead of stdio; "
                                                "a non-loopback HOST needs a bearer token."),
    ] = None,
    url: Annotated[
        str | None, typer.Option(metavar="URL", help="Store URL (as the global --url).")
    ] = None,
    schema: Annotated[
        str | None,
        typer.Option(metavar="SCHEMA", help="PostgreSQL schema (as the global --schema)."),
    ] = None,
    mind: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The mind the server is bound to (default: the "
                                          "global --mind, else 'default')."),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="Embedder (as the global --embedder)."),
    ] = None,
    allow_mind: Annotated[
        list[str] | None,
        typer.Option("--allow-mind", metavar="NAME",
                     help="Another mind a client may use (repeatable)."),
    ] = None,
    all_minds: Annotated[
        bool, typer.Option("--all-minds", help="Clients may use every mind of the store.")
    ] = False,
    token_env: Annotated[
        str | None,
        typer.Option(metavar="VAR", help="Environment variable holding the HTTP bearer token "
                                          "(default WAGGLE_MCP_TOKEN)."),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", metavar="HOST[:PORT]",
                     help="Another Host header HTTP clients may send (repeatable)."),
    ] = None,
    allowed_origin: Annotated[
        list[str] | None,
        typer.Option("--allowed-origin", metavar="ORIGIN",
                     help="Another Origin header HTTP clients may send (repeatable)."),
    ] = None,
    harvest_root: Annotated[
        list[Path] | None,
        typer.Option("--harvest-root", metavar="DIR",
                     help="A folder harvest_import may read (repeatable; without one it is "
                          "refused)."),
    ] = None,
) -> None:
    """Run the MCP server (stdio, or streamable HTTP with --http), bound to one mind."""
    from waggle_store.mcp.settings import configure

    options = opts(ctx)
    try:
        settings = configure(
            mind=mind or options.mind, allow_minds=allow_mind or (), all_minds=all_minds,
            http=http, token_env=token_env, allowed_hosts=allowed_host or (),
            allowed_origins=allowed_origin or (), harvest_roots=harvest_root or ())
    except ws.InvalidInputError as exc:  # a setting that cannot be served safely: usage error
        raise typer.BadParameter(str(exc)) from exc
    if settings.http is not None:
        _check_free(settings.http.host, settings.http.port)  # before any store is opened
    if importlib.util.find_spec("mcp") is None:
        raise Failure("the MCP server needs the mcp extra: pip install 'waggle-store[mcp]'")
    from waggle_store.mcp import serve

    # Several servers (and CLI commands) may write one store at once: the WAL-reset warning
    # the other commands leave out matters here.
    warnings.filterwarnings("default", message=WAL_RESET_WARNING)
    try:
        serve(
            url or options.url,
            schema=schema or options.schema,
            embedder=embedder_spec(embedder or options.embedder),
            settings=settings,
        )
    except SystemExit as exc:  # the HTTP server's own exit (uvicorn: 3 when it cannot start)
        if exc.code not in (None, 0):
            raise Failure(f"the MCP server on {http} stopped (exit status {exc.code})") from exc


def _check_free(host: str, port: int) -> None:
    """:class:`Failure` (exit 1) when HOST:PORT cannot be bound, before a store is opened: the
    port taken by another server, or an address not of this machine."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise Failure(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise Failure(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from exc


@ops_app.command()
def demo(
    db: Annotated[str, typer.Option(help="SQLite file to (re)create.")] = "waggle-demo.db",
    embedder: Annotated[
        str, typer.Option(help="auto (best available) or a provider name.")
    ] = "auto",
    keep: Annotated[bool, typer.Option("--keep", help="Keep an existing demo database.")] = False,
) -> None:
    """Cognify a sample conversation into a demo store and recall from it."""
    from waggle_store.demo_data import SAMPLE_CONVERSATION, SAMPLE_QUERIES

    path = Path(db)
    if path.exists() and not keep:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    with ws.open_store(f"sqlite:///{path}", embedder=embedder_spec(embedder)) as store:
        report = store.health()
        typer.echo(
            f"store: {path} ({report.dialect} via {report.driver}); keyword search "
            f"{'on' if report.keyword_search else 'off'}, vector search "
            f"{'on' if report.vector_search else 'off'}"
        )
        for reason in report.reasons:
            if not re.match(WAL_RESET_WARNING, reason):  # one process: see main() in cli.py
                typer.echo(f"  note: {reason}")
        mind = store.mind("demo")
        with progress("cognify") as update:
            result = mind.cognify_batch(list(SAMPLE_CONVERSATION), progress=update)
        stored = sum(1 for f in result.frame_ids if f is not None)
        # "auto" chooses its provider at the first embedding: the line comes once it has.
        typer.echo("embedder: " + embedder_line(
            store.embedding_status() if store.embedder is not None else None))
        typer.echo(
            f"\ncognified {stored}/{len(SAMPLE_CONVERSATION)} turns"
            + (f", {len(result.failures)} failed: {result.failures}" if result.failures else "")
        )
        counts = mind.knowledge.entity_type_counts()
        typer.echo(
            "knowledge graph: "
            + (", ".join(f"{n} {t}" for t, n in sorted(counts.items())) or "empty")
        )
        for query in SAMPLE_QUERIES:
            typer.echo(f"\n? {query}")
            for hit in mind.recall(query, limit=3):
                typer.echo(f"  {hit.final_score:.3f}  {hit.frame.content}")


def register(app: typer.Typer) -> None:
    """Add these commands to the main app (``cli.py``)."""
    for command in ops_app.registered_commands:
        app.registered_commands.append(command)
    app.add_typer(minds_app, name="minds")  # after the commands, minds before migrate: as ever
    app.add_typer(migrate_app, name="migrate")

"""The lifecycle ``waggle-store`` commands: export, import, harvest, consolidate, purge.

They move memory in and out of a mind (a ``waggle-mind`` JSONL file, a Waggle ``.mind`` file, an
OpenFang JSON export, folders and chat exports to harvest) and keep it in shape (consolidate).
Separate from ``cli.py`` to keep each module small; :func:`register` adds them to the main app.
Files are read and written by the process running the command, paths as given on its machine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Final

import typer

import waggle_store as ws
from waggle_store.cli_output import Failure, JsonOpt, emit_json, err, opts, progress, table
from waggle_store.pipeline.safe_files import MAX_LINE_BYTES

lifecycle_app = typer.Typer()
harvest_app = typer.Typer(
    help="Harvest chat exports, Markdown folders and JSONL files into the mind: register a "
         "source once, sync it whenever (unchanged sources are skipped, nothing is stored twice).",
    no_args_is_help=True,
)

_SQLITE_MAGIC: Final = b"SQLite format 3\x00"


class ExportFormat(StrEnum):
    waggle_jsonl = "waggle-jsonl"
    openfang = "openfang"


class ImportFormat(StrEnum):
    auto = "auto"
    waggle_jsonl = "waggle-jsonl"
    mind = "mind"
    openfang = "openfang"


class HarvestKind(StrEnum):
    chatgpt = "chatgpt"
    claude = "claude"
    markdown = "markdown"
    jsonl = "jsonl"


# -- export / import -----------------------------------------------------------------------------


@lifecycle_app.command("export")
def export_(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The mind to export.")],
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The file to write (replaced).")],
    fmt: Annotated[
        ExportFormat,
        typer.Option("--format", help="waggle-jsonl (complete, re-importable) or openfang."),
    ] = ExportFormat.waggle_jsonl,
    vectors: Annotated[
        bool,
        typer.Option("--vectors", help="Include each frame's vector (waggle-jsonl only; large)."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write a mind to FILE: every memory, entity, relation, session, identity and setting."""
    if vectors and fmt is not ExportFormat.waggle_jsonl:
        raise typer.BadParameter("vectors are exported in waggle-jsonl only",
                                 param_hint="--vectors")
    with opts(ctx).store(embed=False, read=True) as store, progress("export") as update:
        if fmt is ExportFormat.openfang:
            report = store.export_openfang(name, file, progress=update)
        else:
            report = store.export_mind(name, file, include_vectors=vectors, progress=update)
    if as_json:
        emit_json(report)
        return
    typer.echo(
        f"exported mind '{name}' to {report.path or file}: {report.records} records "
        f"({report.frames} frames, {report.entities} entities, {report.relations} relations, "
        f"{report.sessions} sessions, {report.vectors} vectors)"
    )


def _first_line(handle: BinaryIO) -> bytes:
    """The first line of an open file, read no further than the longest line an import takes
    (a file with no newline is not read whole into memory)."""
    return handle.readline(MAX_LINE_BYTES + 1)


def _header(path: Path) -> dict[str, Any]:
    """The first line of a file, as a JSON object ({} when it is not one)."""
    try:
        with path.open("rb") as handle:
            value = json.loads(_first_line(handle))
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def detect_format(path: Path) -> ImportFormat:
    """What FILE holds, from its first bytes: a SQLite file is a Waggle ``.mind``; JSON whose
    first line is a ``waggle-mind`` header is our export; any other JSON object is taken for an
    OpenFang export (whose reader then checks it)."""
    try:
        with path.open("rb") as handle:
            if handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC:
                return ImportFormat.mind
            handle.seek(0)
            first = _first_line(handle)
    except OSError as exc:
        raise Failure(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        header = None
    if isinstance(header, dict) and header.get("format") == "waggle-mind":
        return ImportFormat.waggle_jsonl
    if first.lstrip().startswith(b"{"):
        return ImportFormat.openfang
    raise Failure(f"cannot tell the format of {path}: give --format waggle-jsonl, mind or openfang")


@lifecycle_app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The file to import.")],
    into: Annotated[
        str | None,
        typer.Option(help="The mind to import into (created if missing). "
                          "Default: --mind if given, else the exported mind's name (waggle-jsonl) "
                          "or 'default'."),
    ] = None,
    merge: Annotated[
        bool,
        typer.Option("--merge", help="Import into a mind that already holds data (refused "
                                     "without it)."),
    ] = False,
    fmt: Annotated[
        ImportFormat,
        typer.Option("--format", help="auto (from the file's content), waggle-jsonl, mind "
                                      "(a Waggle .mind file) or openfang."),
    ] = ImportFormat.auto,
    as_json: JsonOpt = False,
) -> None:
    """Import FILE into a mind. The whole file is checked first: a bad line fails the command
    (naming the line) and nothing is imported."""
    options = opts(ctx)
    if not file.is_file():
        raise Failure(f"no file {file}")
    kind = detect_format(file) if fmt is ImportFormat.auto else fmt
    target = into or options.mind
    # The embedder matters only to take vectors in (imported memories are embedded later, by
    # reconcile): without vectors the command skips its start (seconds, for a local model).
    embed = kind is not ImportFormat.waggle_jsonl or _header(file).get("include_vectors") is True
    with options.store(embed=embed) as store, progress("import") as update:
        if kind is ImportFormat.waggle_jsonl:
            report = store.import_mind(file, into=target, merge=merge, progress=update)
        elif kind is ImportFormat.mind:
            report = store.import_waggle_mind(file, into=target or "default", merge=merge,
                                              progress=update)
        else:
            report = store.import_openfang(file, into=target or "default", merge=merge,
                                           progress=update)
    if as_json:
        emit_json({**asdict(report), "format": kind.value})
        return
    for problem in report.problems:
        err.print(f"note: {problem}", markup=False)
    typer.echo(
        f"imported {kind.value} into '{report.mind}': {report.frames_imported} frames, "
        f"{report.entities_imported} entities, {report.relations_imported} relations, "
        f"{report.sessions_imported} sessions; {report.duplicates_skipped} duplicates skipped"
    )
    if report.vectors_pending:
        err.print(f"{report.vectors_pending} imported frame(s) have no vector yet: "
                  f"waggle-store --mind '{report.mind}' reconcile embeds them", markup=False)


# -- harvest -------------------------------------------------------------------------------------


def _source_row(source: ws.HarvestSource) -> list[Any]:
    synced = source.last_synced_at.strftime("%Y-%m-%d %H:%M") if source.last_synced_at else "never"
    auto = f"every {source.sync_interval_hours}h" if source.auto_sync else "no"
    return [source.name, source.kind, source.path, synced, source.items_imported,
            source.frames_created, auto]


_SOURCE_COLUMNS: Final = ["name", "kind", "path", "last synced", "items", "frames", "auto-sync"]


@harvest_app.command("add")
def harvest_add(
    ctx: typer.Context,
    kind: Annotated[HarvestKind, typer.Argument(help="chatgpt, claude, markdown or jsonl.")],
    path: Annotated[
        Path,
        typer.Argument(help="A chat export (conversations.json, its folder or the .zip), a "
                            "folder of notes, or a JSONL file."),
    ],
    name: Annotated[
        str | None, typer.Option(help="The source's name (default: the kind).")
    ] = None,
    auto_sync: Annotated[
        bool, typer.Option("--auto-sync", help="List it in 'harvest stale' when due.")
    ] = False,
    interval: Annotated[
        int, typer.Option(min=1, help="Hours between auto-syncs.")
    ] = 24,
    as_json: JsonOpt = False,
) -> None:
    """Register a source (adding a name again updates it); 'harvest sync' reads it."""
    if not path.exists():  # a mistyped path is refused now, not at every sync
        raise Failure(f"no file or folder {path}")
    with opts(ctx).open_mind(embed=False) as mind:
        source = mind.harvest.add_source(kind.value, path, name=name, auto_sync=auto_sync,
                                         sync_interval_hours=interval)
    if as_json:
        emit_json(source)
    else:
        typer.echo(f"source '{source.name}' ({source.kind}): {source.path}")


@harvest_app.command("sync")
def harvest_sync(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="One source; omit for every source.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Read the sources into the mind; what is already stored is not stored again. Exits 1 when
    an item failed (the others are stored; the next sync retries it)."""
    with opts(ctx).open_mind() as mind, progress("harvest") as update:
        report = mind.harvest.sync(name, progress=update)
    if as_json:
        emit_json(report)
    else:
        typer.echo(
            f"synced {report.sources_synced} source(s), {report.sources_skipped} unchanged; "
            f"{report.items_imported}/{report.items_seen} items imported, "
            f"{report.frames_created} frames created"
        )
    if report.failures:
        for reference, error in report.failures:
            err.print(f"failed: {reference}: {error}", markup=False)
        raise typer.Exit(1)


def _show_sources(title: str, sources: Sequence[ws.HarvestSource], as_json: bool) -> None:
    if as_json:
        emit_json(sources)
    else:
        table(title, _SOURCE_COLUMNS, [_source_row(s) for s in sources])


@harvest_app.command("list")
def harvest_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The mind's sources, most recently synced first."""
    with opts(ctx).open_mind(embed=False, read=True) as mind:
        _show_sources("harvest sources", mind.harvest.sources(), as_json)


@harvest_app.command("stale")
def harvest_stale(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Auto-synced sources due for a sync (never synced, or not within their interval)."""
    with opts(ctx).open_mind(embed=False, read=True) as mind:
        _show_sources("stale sources", mind.harvest.stale(), as_json)


@harvest_app.command("remove")
def harvest_remove(ctx: typer.Context, name: str) -> None:
    """Forget a source; the memories it brought in stay."""
    with opts(ctx).open_mind(embed=False, read=True) as mind:
        if not mind.harvest.remove_source(name):
            raise Failure(f"no harvest source '{name}' in mind '{mind.name}'")
    typer.echo(f"removed source '{name}'")


# -- consolidate ---------------------------------------------------------------------------------


@lifecycle_app.command()
def consolidate(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what a run would do; write nothing.")
    ] = False,
    decay_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Salience kept per day without access.")
    ] = 0.95,
    prune_below: Annotated[
        float, typer.Option(min=0.0, max=1.0,
                            help="Delete memories whose salience fell below this (never "
                                 "critical or important ones).")
    ] = 0.1,
    merge_similarity: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Merge near-duplicates this similar.")
    ] = 0.9,
    as_json: JsonOpt = False,
) -> None:
    """Decay salience, merge near-duplicate memories, prune faded ones. Running it twice the
    same day changes nothing the second time."""
    with opts(ctx).open_mind(embed=False, read=dry_run) as mind, \
            progress("consolidate") as update:
        report = mind.consolidate(decay_rate=decay_rate, prune_below=prune_below,
                                  merge_similarity=merge_similarity, dry_run=dry_run,
                                  progress=update)
        # A dry run lists what a run would do to which memory; their text is still there.
        rows: list[list[Any]] = []
        if dry_run and not as_json:
            rows += [["merge", m, into, _content(mind, m)] for m, into in report.merges]
            rows += [["prune", p, "", _content(mind, p)] for p in report.pruned]
    if as_json:
        emit_json({**asdict(report), "dry_run": dry_run})
        return
    if dry_run and rows:
        table("what consolidate would do", ["action", "id", "into", "content"], rows)
    typer.echo(
        f"{'would process' if dry_run else 'processed'} {report.fragments_processed} memories: "
        f"{report.fragments_decayed} decayed, {report.fragments_merged} merged, "
        f"{report.fragments_deleted} deleted" + (" (dry run: nothing written)" if dry_run else "")
    )


@lifecycle_app.command()
def purge(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Make deleted memories unrecoverable from the database files (SQLite: VACUUM with secure
    delete and a WAL checkpoint; PostgreSQL: VACUUM FULL of the store's tables, each locked
    while it is rewritten). Run it after deleting what must not stay on disk."""
    with opts(ctx).store(embed=False) as store:
        report = store.purge()
    if as_json:
        emit_json(asdict(report))
        return
    typer.echo(f"purged: {report.bytes_before} bytes before, {report.bytes_after} after")


def _content(mind: ws.Mind, frame_id: int, width: int = 80) -> str:
    frame = mind.frames.get(frame_id)
    if frame is None:  # deleted meanwhile by another writer
        return ""
    text = " ".join(frame.content.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def register(app: typer.Typer) -> None:
    """Add these commands to the main app (``cli.py``)."""
    for command in lifecycle_app.registered_commands:
        app.registered_commands.append(command)
    app.add_typer(harvest_app, name="harvest")

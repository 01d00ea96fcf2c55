"""What the ``waggle-store`` commands share: their options, and output that suits its reader.

Tables and progress bars go to a terminal; a pipe gets plain tab-separated lines and final counts,
which scripts can read; ``--json`` prints records as JSON. Kept apart from ``cli.py`` so that each
command module stays small.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, is_dataclass
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import waggle_store as ws

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


class Importance(StrEnum):
    """``--importance``: a value out of this list is a usage error (exit code 2)."""

    critical = "critical"
    important = "important"
    normal = "normal"
    temporary = "temporary"
    deprecated = "deprecated"


class Profile(StrEnum):
    """``--profile``: the search's scoring profiles."""

    balanced = "balanced"
    recent = "recent"
    important = "important"
    connected = "connected"


class Failure(Exception):
    """A failure to report in one line and exit 1 (a missing memory, an absent store)."""


def embedder_spec(name: str) -> str | None:
    return None if name.lower() == "none" else name


def embedder_line(status: ws.EmbedderStatus | None) -> str:
    """The embedder as a person reads it: its provider, model and size once chosen; "auto"
    picks its provider at the first embedding, and until then there is nothing to show."""
    if status is None:
        return "none (vector search off)"
    if status.active_provider is None:
        return "auto: chosen at the first embedding" + (
            f" ({status.last_error})" if status.last_error else "")
    line = f"{status.active_provider} / {status.model} ({status.dimensions} dims)"
    return line + (f" — {status.last_error}" if status.last_error else "")


@dataclass
class Options:
    """The global options (``--url``, ``--schema``, ``--mind``, ``--embedder``)."""

    url: str
    schema: str | None
    mind: str | None
    embedder: str

    @property
    def mind_name(self) -> str:
        return self.mind or "default"

    @contextmanager
    def store(self, *, upgrade: bool = True, embed: bool = True,
              read: bool = False) -> Iterator[ws.Store]:
        """The store; ``embed=False`` for commands that never embed, which then skip the
        embedder's probe (with "auto", loading a local model takes seconds). ``read=True`` for
        commands that only read: a SQLite file that does not exist is a failure, not a new
        empty store (a mistyped ``--url`` creates nothing)."""
        if read:
            require_existing(self.url)
        spec = embedder_spec(self.embedder) if embed else None
        with ws.open_store(self.url, schema=self.schema, embedder=spec, upgrade=upgrade) as store:
            yield store

    @contextmanager
    def open_mind(self, *, embed: bool = True, read: bool = False) -> Iterator[ws.Mind]:
        """The ``--mind``: created if missing, except by a read (``read=True``), where a
        missing mind is a failure naming the minds there are (a mistyped name creates
        nothing)."""
        with self.store(embed=embed, read=read) as store:
            yield existing_mind(store, self.mind_name) if read else store.mind(self.mind_name)


def existing_mind(store: ws.Store, name: str) -> ws.Mind:
    """The mind ``name`` if the store has it; :class:`Failure` naming the minds it has if not."""
    names = [info.name for info in store.list_minds()]
    if name not in names:
        known = ", ".join(repr(n) for n in names) or "none yet"
        raise Failure(f"no mind {name!r} in this store (its minds: {known})")
    return store.mind(name)


def require_existing(url: str) -> None:
    """:class:`Failure` when ``url`` names a SQLite file that does not exist."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - open_store reports a bad URL with its own message
        return
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or not Path(database).exists():
            raise Failure(f"no store at {url}")


def opts(ctx: typer.Context) -> Options:
    obj = ctx.find_root().obj
    if not isinstance(obj, Options):
        raise Failure("the global options were not parsed")
    return obj


def plain(value: Any) -> Any:
    """Records as JSON-ready values: dataclasses as objects, times as ISO-8601."""
    if is_dataclass(value) and not isinstance(value, type):
        return plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def emit_json(value: Any) -> None:
    typer.echo(json.dumps(plain(value), indent=2, ensure_ascii=False))


_TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def tsv_cell(value: Any) -> str:
    """One cell of a piped row: a backslash, tab, newline and carriage return are written as
    ``\\``, ``\t``, ``\n`` and ``\r``, so that each row is one line of tab-separated cells
    (multi-line content, harvested Markdown for one, stays one row)."""
    return "" if value is None else str(value).translate(_TSV_ESCAPES)


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A Rich table on a terminal; tab-separated lines, header first, when piped."""
    if not out.is_terminal:
        typer.echo("\t".join(columns))
        for row in rows:
            typer.echo("\t".join(tsv_cell(c) for c in row))
        return
    rich_table = Table(title=title)
    for column in columns:
        rich_table.add_column(column)
    for row in rows:
        rich_table.add_row(*("" if c is None else str(c) for c in row))
    out.print(rich_table)


@contextmanager
def progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar (on stderr) on a terminal; on a pipe only the final count."""
    state = {"done": 0, "total": 0}
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=not err.is_terminal) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            state.update(done=done, total=total)
            bar.update(task, completed=done, total=total)

        yield update
    if not err.is_terminal and state["total"]:
        err.print(f"{label}: {state['done']}/{state['total']}")

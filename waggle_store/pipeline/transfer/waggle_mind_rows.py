"""Reading a Waggle ``.mind`` file's rows and repairing the values the old app wrote badly.

Split from :mod:`.waggle_mind`, which turns the tables into records: this half opens the file
without trusting it (:func:`open_mind_file`), knows how the old app stored things (times in
several formats or none, JSON text that may not parse, tables that may be missing) and hands
back clean values, counting each repair in the report. It is shared: :mod:`.openfang` reads its
own times with :func:`foreign_time` as well.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.transfer.format import iso
from waggle_store.pipeline.transfer.problems import Problems
from waggle_store.timeutil import utcnow

__all__ = [
    "MAX_VALUE_BYTES",
    "MindRows",
    "foreign_time",
    "mind_uri",
    "open_mind_file",
    "refuse_computed",
    "table_names",
]


def foreign_time(value: Any, problems: Problems, what: str) -> datetime | None:
    """A time as Waggle or OpenFang writes one (SQLite ``datetime('now')`` text, JS ISO, epoch
    ms) as aware UTC, or None when it cannot be read (the caller decides the stand-in)."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        problems.add(
            "time without a zone", f"{what} {text!r}", "read as UTC (SQLite's datetime('now'))"
        )
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


#: Largest value read from a ``.mind`` file (SQLite's own length limit on the connection): a
#: memory is at most MAX_CONTENT_BYTES, and no value of the old schema is larger.
MAX_VALUE_BYTES: Final = 8 << 20


def mind_uri(path: str | os.PathLike[str]) -> str:
    """The ``file:`` URI that opens exactly ``path`` read-only and immutable: the path is
    percent-encoded by :meth:`pathlib.Path.as_uri` (``a%41.mind`` opens that file, not
    ``aA.mind``; ``?`` and ``#`` in a name are not parameters)."""
    return Path(os.path.abspath(path)).as_uri() + "?mode=ro&immutable=1"


def open_mind_file(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """A connection that reads a ``.mind`` file without trusting it: read-only and immutable (no
    journal, no lock, nothing written: its triggers cannot fire), ``trusted_schema=OFF`` (its
    views and triggers cannot call functions that have side effects), values longer than
    :data:`MAX_VALUE_BYTES` an error, and SQLite's defensive mode where this Python exposes it
    (``Connection.setconfig``, Python 3.12+)."""
    conn = sqlite3.connect(mind_uri(path), uri=True)
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        setconfig = getattr(conn, "setconfig", None)
        defensive = getattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE", None)
        if setconfig is not None and defensive is not None:
            setconfig(defensive, True)
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.row_factory = sqlite3.Row
    except BaseException:
        conn.close()
        raise
    return conn


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the file's tables."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def refuse_computed(conn: sqlite3.Connection, tables: set[str], where: str) -> None:
    """Refuse a file whose tables compute values (generated columns): the old app's schema has
    none, and a computed column can make a few-KB file read as gigabytes."""
    for table in sorted(tables):
        for column in conn.execute("SELECT name, hidden FROM pragma_table_xinfo(?)", (table,)):
            if int(column[1] or 0) in (2, 3):
                raise InvalidInputError(
                    f"{where} is not a Waggle .mind file: column {table}.{column[0]} is a "
                    "generated column")


class MindRows:
    at: str
    """The rows of one ``.mind`` file (opened read-only), with each value read leniently."""

    def __init__(self, conn: sqlite3.Connection, problems: Problems) -> None:
        self.db, self.problems = conn, problems
        self.tables = table_names(conn)
        self.now = iso(utcnow())

    def rows(self, table: str, order: str = "rowid") -> Iterator[sqlite3.Row]:
        """The rows of ``table`` (none when the file lacks it); :attr:`at` names the row being
        read, for an error a malformed value raises."""
        if table not in self.tables:
            return
        for number, row in enumerate(
                self.db.execute(f'SELECT * FROM "{table}" ORDER BY {order}'), start=1):
            self.at = f"table {table}, row {number}"
            yield row

    def ids(self, table: str) -> set[int]:
        """The ``id`` of every row of ``table`` (none when the file lacks it)."""
        if table not in self.tables:
            return set()
        return {int(r[0]) for r in self.db.execute(f'SELECT id FROM "{table}"')}

    def count(self, table: str) -> int | None:
        """How many rows ``table`` holds; None when the file lacks it."""
        if table not in self.tables:
            return None
        return int(self.db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])

    def time(
        self, row: sqlite3.Row, column: str, what: str, *, default: str | None = None
    ) -> str | None:
        value = row[column] if column in row.keys() else None  # noqa: SIM118 (sqlite3.Row: `in` tests values)
        parsed = foreign_time(value, self.problems, f"{what} {column}")
        if parsed is None and value not in (None, ""):
            self.problems.add(
                "unreadable time",
                f"{what} {column}={value!r}",
                "replaced by the import time" if default else "left empty",
            )
            return default
        return iso(parsed) if parsed is not None else default

    def json_object(self, text: Any, what: str) -> dict[str, Any]:
        try:
            value = json.loads(text) if isinstance(text, str) and text else {}
        except ValueError:
            value = None
        if not isinstance(value, dict):
            self.problems.add("unreadable JSON object", what, "replaced by {}")
            return {}
        return value

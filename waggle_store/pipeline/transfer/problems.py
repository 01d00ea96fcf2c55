"""Problems found in imported data: repaired or skipped, counted by kind, never fatal.

A 100k-frame file with one bug repeated everywhere must not make a 100k-entry list, so each kind
of problem is one entry: how many records had it, the first one as an example, and what the
importer did about it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from waggle_store.errors import InvalidInputError, WaggleStoreError
from waggle_store.pipeline.transfer.format import Line, LineError, make_line

__all__ = ["UNREADABLE", "NumberedLines", "Problems"]

#: What a reader or converter raises on a value of a type the file should not hold or a corrupt
#: table: the import turns it into its input error naming the record, never a raw exception.
UNREADABLE = (TypeError, ValueError, IndexError, KeyError, AttributeError, OverflowError,
              RecursionError, sqlite3.Error)


@dataclass
class _Entry:
    count: int
    example: str
    action: str


class Problems:
    """Problems by kind, in the order they were first seen."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def add(self, kind: str, example: str, action: str, count: int = 1) -> None:
        """Count ``count`` records with problem ``kind`` (``example`` names the first of them)."""
        if count <= 0:
            return
        entry = self._entries.get(kind)
        if entry is None:
            self._entries[kind] = _Entry(count, example, action)
        else:
            entry.count += count

    def count(self, kind: str) -> int:
        entry = self._entries.get(kind)
        return 0 if entry is None else entry.count

    def lines(self) -> list[str]:
        """One sentence per kind: ``"3 x <kind> (first: <example>): <action>"``."""
        return [f"{e.count} x {kind} (first: {e.example}): {e.action}"
                for kind, e in self._entries.items()]

    def __len__(self) -> int:
        return len(self._entries)


class NumberedLines:
    """For the converters of foreign files (Waggle ``.mind``, OpenFang JSON): the records they
    make, numbered like the lines of an export (the importer reports a record by its number); a
    record that does not make a valid line is skipped and counted as a problem, never fatal."""

    problems: Problems
    n: int = 0
    #: The record being read, for an error a malformed value raises (see :meth:`named`).
    at: str = "the first record"

    def line(self, record: Mapping[str, Any], what: str) -> Iterator[tuple[int, Line]]:
        try:
            checked = make_line(record)
        except LineError as exc:
            self.problems.add(f"unusable {record['type']}", f"{what}: {exc}", "skipped")
            return
        self.n += 1
        yield self.n, checked

    def named(self, records: Iterator[tuple[int, Line]]) -> Iterator[tuple[int, Line]]:
        """``records``, with an error no converter expected (a value of a type the file should
        not hold, a corrupt table) turned into the import's input error naming the record."""
        try:
            yield from records
        except WaggleStoreError:
            raise
        except UNREADABLE as exc:
            raise InvalidInputError(
                f"{self.at} cannot be read: {type(exc).__name__}: {exc}") from exc

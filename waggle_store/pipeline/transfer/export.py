"""Export one mind as ``waggle-mind`` JSONL (see :mod:`.format` and ``docs/export-format.md``).

Constant memory at any size: every table is read in keyset pages of :data:`PAGE` rows (``WHERE
id > last ORDER BY id LIMIT n``) and each row is written as soon as it is read, so neither the
rows nor the file are ever held whole. All pages are read in one read transaction so the file is
one consistent snapshot (on Postgres at REPEATABLE READ: READ COMMITTED would let a mention
written between two pages point at a frame the file does not hold, and the import would refuse
the file).

This module holds the destination, the header, the record count for progress and the vectors;
the record layouts per table are in :mod:`.export_rows`, the reads in
:class:`~waggle_store.repositories.mind_export.MindExportRows`.

Records reference each other by the ids of this store; the order of the file (sessions before
frames, frames and entities before mentions ...) lets the importer check every reference as it
reads.
"""

from __future__ import annotations

import io
import os
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import sqlalchemy as sa

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.transfer.conversations import count_records, emit_conversations
from waggle_store.pipeline.transfer.export_rows import (
    PAGE,
    Emit,
    emit_graph,
    emit_memory,
    emit_small,
    setting_records,
)
from waggle_store.pipeline.transfer.format import FORMAT_NAME, FORMAT_VERSION, dump_line, iso
from waggle_store.records import ExportReport
from waggle_store.repositories.mind_export import MindExportRows
from waggle_store.timeutil import utcnow

__all__ = ["PAGE", "Destination", "export_mind", "open_destination"]

Destination = str | os.PathLike[str] | IO[str] | IO[bytes]
Progress = Callable[[int, int], None]


def check_destination(path: Path) -> None:
    """:class:`InvalidInputError` before anything is read when ``path`` cannot be written as a
    file: a directory, or in a directory that does not exist (nor one named as a file)."""
    if path.is_dir():
        raise InvalidInputError(f"cannot export to {str(path)!r}: it is a directory; "
                                "give a file name")
    if not path.parent.is_dir():
        raise InvalidInputError(f"cannot export to {str(path)!r}: the directory "
                                f"{str(path.parent)!r} does not exist")


@contextmanager
def open_destination(dest: Destination) -> Iterator[tuple[Callable[[str], object], str | None]]:
    """A ``write(text)`` for ``dest`` and its path; a file object is written as it is (text, or
    UTF-8 bytes).

    A path is written to a temporary file that :func:`tempfile.mkstemp` creates in the same
    directory (a random name opened with ``O_CREAT | O_EXCL``, mode 0600: nothing planted at a
    predictable name, such as a symbolic link at ``<path>.part``, is followed or overwritten)
    and renamed onto the path when the export succeeded, so a failed export never leaves a
    truncated file under the real name. The export keeps mode 0600: a mind's memory is
    private; ``chmod`` widens it."""
    if isinstance(dest, (str, os.PathLike)):
        path = Path(dest)
        check_destination(path)
        fd, part = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        try:
            with open(fd, "w", encoding="utf-8", newline="\n") as handle:
                yield handle.write, str(path)
            os.replace(part, path)
        finally:
            if os.path.lexists(part):
                os.unlink(part)
        return
    name = getattr(dest, "name", None)
    if isinstance(dest, io.TextIOBase) or "b" not in str(getattr(dest, "mode", "b")):
        text_out: Any = dest
        yield text_out.write, name if isinstance(name, str) else None
        return
    binary_out: Any = dest
    yield (
        (lambda text: binary_out.write(text.encode("utf-8"))),
        name if isinstance(name, str) else None,
    )


class _Counter:
    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.done, self.progress = total, 0, progress
        self.by_type: dict[str, int] = {}

    def wrote(self, kind: str) -> None:
        self.done += 1
        self.by_type[kind] = self.by_type.get(kind, 0) + 1
        if self.progress is not None and (self.done % PAGE == 0 or self.done == self.total):
            self.progress(self.done, self.total)


def export_mind(
    mind: MindContext,
    dest: Destination,
    *,
    include_vectors: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Write every record of ``mind`` to ``dest``; ``progress(done, total)`` every page."""
    # One snapshot for every page (module docstring).
    with (open_destination(dest) as (write, path),
          mind.store.read_connection(snapshot=True) as conn):
        counter = _Counter(0, progress)
        _export(conn, mind, write, counter, include_vectors)
        if progress is not None and counter.total and counter.done != counter.total:
            progress(counter.done, counter.done)
    n = counter.by_type.get
    return ExportReport(
        path,
        counter.done + 1,
        n("frame", 0),
        n("entity", 0),
        n("relation", 0),
        sessions=n("session", 0),
        mentions=n("mention", 0),
        vectors=n("vector", 0),
        conversations=n("conversation", 0),
        messages=n("message", 0),
        agents=n("agent", 0),
        aliases=n("alias", 0),
        versions=n("entity_version", 0) + n("relation_version", 0),
    )


def _export(
    conn: sa.Connection,
    mind: MindContext,
    write: Callable[[str], object],
    counter: _Counter,
    include_vectors: bool,
) -> None:
    mid = mind.id
    rows = MindExportRows(conn, mid)
    model_ids = rows.model_ids()
    counter.total = rows.record_count() + len(model_ids)
    if include_vectors:
        counter.total += rows.vector_count()
    settings = rows.settings()
    counter.total += setting_records(settings)
    counter.total += count_records(conn, mid)

    def emit(kind: str, record: dict[str, Any]) -> None:
        write(dump_line({"type": kind, **record}))
        counter.wrote(kind)

    write(
        dump_line(
            {
                "type": "header",
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "mind": mind.name,
                "kind": mind.kind,
                "exported_at": iso(utcnow()),
                "generator": "waggle_store",
                "include_vectors": include_vectors,
            }
        )
    )
    emit_memory(conn, mid, emit)
    emit_graph(conn, mid, emit)
    emit_small(conn, mid, settings, model_ids, emit)
    emit_conversations(conn, mid, emit)
    if include_vectors:
        _export_vectors(conn, mind, model_ids, emit)


def _export_vectors(
    conn: sa.Connection,
    mind: MindContext,
    model_ids: Sequence[int],
    emit: Emit,
) -> None:
    adapter = mind.adapter
    if not model_ids or adapter.vector_off(conn) is not None:
        return
    rows = MindExportRows(conn, mind.id)
    for model_id in model_ids:
        batch: list[tuple[int, str, str]] = []
        for row in rows.vectors(model_id):
            batch.append((int(row[0]), str(row[1]), str(row[2])))
            if len(batch) == PAGE:
                _emit_vectors(conn, adapter, model_id, batch, emit)
                batch = []
        _emit_vectors(conn, adapter, model_id, batch, emit)


def _emit_vectors(
    conn: sa.Connection,
    adapter: Any,
    model_id: int,
    batch: list[tuple[int, str, str]],
    emit: Emit,
) -> None:
    vectors = adapter.read_vectors(conn, model_id, [fid for fid, _, _ in batch])
    for fid, digest, form in batch:
        if fid in vectors:
            emit(
                "vector",
                {
                    "frame_id": fid,
                    "model_id": model_id,
                    "content_hash": digest,
                    "vector": [_f32(x) for x in vectors[fid]],
                    "text_form": form,
                },
            )


def _f32(value: float) -> float:
    """The shortest decimal that is the same float32 as ``value``: vectors are stored as float32
    on both backends, and this spelling makes the same vector the same text whichever one (and
    whichever driver conversion) it came from."""
    packed = struct.pack("<f", value)
    for digits in range(6, 10):
        candidate = float(f"{value:.{digits}g}")
        if struct.pack("<f", candidate) == packed:
            return candidate
    return value

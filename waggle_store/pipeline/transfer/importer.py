"""Import records into a mind: check everything, then write everything in one transaction.

Every importer (``waggle-mind`` JSONL, a Waggle ``.mind`` file, an OpenFang JSON export) is a
*record source*: a function that yields ``(line number, Line)`` in the JSONL format's terms, and
can be called again to yield the same records. :func:`run_import` calls it twice:

1. :func:`~.validate.check_records` reads every record with no transaction open; a bad record
   raises ``InvalidInputError`` naming its line, and nothing has been written;
2. one write transaction creates the mind if needed and writes the records through
   :class:`~.writer.MindWriter`; any failure rolls the whole import back.

Reading twice keeps memory flat (no record is held between the passes) at the cost of parsing
the source twice. A source that cannot be re-read (a pipe) is spooled to a temporary file first.
A file is opened once and read twice through the same descriptor, so a file put in its path's
place between the passes is not read; a file changed in place (its size or modification time)
fails the pass that read it, and the import with it: the passes write what they checked.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from sqlalchemy.orm import Session

from waggle_store.context import StoreContext
from waggle_store.errors import ConflictError, InvalidInputError, WaggleStoreError
from waggle_store.models import MIND_KINDS
from waggle_store.pipeline.safe_files import open_regular, read_lines
from waggle_store.pipeline.transfer.format import Line, LineError, parse_header, parse_line
from waggle_store.pipeline.transfer.problems import UNREADABLE, Problems
from waggle_store.pipeline.transfer.validate import check_records
from waggle_store.pipeline.transfer.writer import MindWriter
from waggle_store.records import ImportReport
from waggle_store.repositories.minds import MindRepository, mind_holds_rows
from waggle_store.repositories.vectors import ModelKey, model_key

__all__ = ["RecordSource", "Source", "jsonl_records", "run_import"]

log = logging.getLogger(__name__)

#: Yields the records of a source; converters add what they repaired to the Problems they get.
RecordSource = Callable[[Problems], Iterator[tuple[int, Line]]]
Source = str | os.PathLike[str] | IO[str] | IO[bytes]
Progress = Callable[[int, int], None]


@contextmanager
def _rereadable(src: Source) -> Iterator[Callable[[], Any]]:
    """Something that opens ``src`` from its start each time it is called. A path must name a
    regular file (a FIFO or a device is refused, never read: it would block or never end)."""
    if isinstance(src, (str, os.PathLike)):
        with open_regular(src, limit=None, follow_symlinks=True) as handle:
            yield _rewinder(handle, os.fspath(src))
        return
    if src.seekable():
        yield _rewinder(src, "the file")
        return
    with tempfile.TemporaryFile() as spool:
        for chunk in iter(
            lambda: src.read(1 << 16), b"" if "b" in getattr(src, "mode", "b") else ""
        ):
            spool.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
        spool.flush()

        def reopen() -> _Borrowed:
            spool.seek(0)
            return _Borrowed(spool)

        yield reopen


def _rewinder(handle: IO[Any], what: str) -> Callable[[], _Borrowed]:
    """Opens ``handle`` at its current position again on each call; a pass that reads to the end
    of a file whose size or modification time changed since the first call raises."""
    start = handle.tell()
    seen = _version(handle)

    def unchanged() -> None:
        if _version(handle) != seen:
            raise InvalidInputError(f"{what} changed while it was being imported; import it "
                                    "again once nothing writes to it")

    def rewind() -> _Borrowed:
        handle.seek(start)
        return _Borrowed(handle, unchanged)
    return rewind


def _version(handle: IO[Any]) -> tuple[int, int] | None:
    """The size and modification time of the file behind ``handle`` (None: no file behind it)."""
    try:
        info = os.fstat(handle.fileno())
    except (OSError, ValueError):  # io.StringIO and the like have no descriptor
        return None
    return info.st_size, info.st_mtime_ns


class _Borrowed:
    """A file used in a ``with`` block without being closed by it; ``done`` runs when the block
    ends without an error (the pass read what it needed)."""

    def __init__(self, handle: IO[Any], done: Callable[[], None] | None = None) -> None:
        self.handle = handle
        self.done = done

    def __enter__(self) -> IO[Any]:
        return self.handle

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None and self.done is not None:
            self.done()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.handle)


def _text(raw: str | bytes, line_no: int) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"line {line_no}: not UTF-8 text ({exc})") from exc


@contextmanager
def jsonl_records(src: Source) -> Iterator[tuple[dict[str, Any], RecordSource]]:
    """The header and the record source of a ``waggle-mind`` JSONL file or file object."""
    with _rereadable(src) as open_src:
        with open_src() as handle:
            first = next(read_lines(handle, "the file"), "")
        try:
            header = parse_header(_text(first, 1)) if first else None
        except LineError as exc:
            raise InvalidInputError(f"line 1: {exc}") from exc
        if header is None:
            raise InvalidInputError(
                "line 1: the file is empty (a waggle-mind export starts with a header)"
            )

        def records(_: Problems) -> Iterator[tuple[int, Line]]:
            with open_src() as handle:
                for line_no, raw in enumerate(read_lines(handle, "the file"), start=1):
                    if line_no == 1:
                        continue
                    text = _text(raw, line_no)
                    if not text.strip():
                        continue
                    try:
                        yield line_no, parse_line(text)
                    except LineError as exc:
                        raise InvalidInputError(f"line {line_no}: {exc}") from exc

        yield header, records


def _refuse_unless_empty(session: Session, name: str, merge: bool) -> int | None:
    """The id of the mind ``name`` (None when missing). An existing mind that holds anything is
    refused unless ``merge``: an import must not write into another mind's memory (or
    overwrite its kv values) because the file names it."""
    found = MindRepository(session).get(name)
    if found is not None and not merge and mind_holds_rows(session, int(found.id)):
        raise ConflictError(
            f"mind {name!r} already holds data; pass merge=True to import into it "
            "(waggle-store import --merge), or into=... (--into) for another mind")
    return None if found is None else int(found.id)


def _mind_id(session: Session, name: str, kind: str, *, merge: bool) -> int:
    """The id of the mind ``name``, created (race-free) in this transaction if missing; see
    :func:`_refuse_unless_empty` for ``merge``."""
    found = _refuse_unless_empty(session, name, merge)
    if found is not None:
        return found
    row, _ = MindRepository(session).get_or_create(
        name, kind if kind in MIND_KINDS else "workspace")
    return int(row.id)


def _guarded(records: Iterator[tuple[int, Line]],
             problems: Problems) -> Iterator[tuple[int, Line]]:
    """The records with what no import may bring in turned off: an imported harvest source
    arrives with ``auto_sync`` off (its path came from the file: a sync of it is the user's
    decision, not the schedule's); and a malformed value a converter did not expect is the
    import's input error naming the last good record, never a raw TypeError."""
    line_no = 0
    try:
        for line_no, line in records:
            if line.type == "harvest_source" and line.fields["auto_sync"]:
                problems.add("harvest source imported with auto_sync on",
                             repr(line.fields["source"]), "auto_sync turned off")
                line = Line(line.type, {**line.fields, "auto_sync": False})
            yield line_no, line
    except WaggleStoreError:
        raise
    except UNREADABLE as exc:
        raise InvalidInputError(
            f"record {line_no + 1} cannot be read: {type(exc).__name__}: {exc}") from exc


def run_import(
    store: StoreContext,
    name: str,
    kind: str,
    records: RecordSource,
    *,
    progress: Progress | None = None,
    problems: Problems | None = None,
    merge: bool = True,
) -> ImportReport:
    """Check every record, then write them all into the mind ``name`` (created as ``kind`` if
    missing) in one transaction; see the module docstring. With ``merge=False`` a mind that
    already holds anything is refused (ConflictError) before anything is written."""
    problems = problems if problems is not None else Problems()
    if not merge:  # refused before the file is read; checked again in the write transaction
        with store.read() as session:
            _refuse_unless_empty(session, name, merge)
    plan = check_records(_guarded(records(problems), problems), problems)
    vector_model: ModelKey | None = None
    if plan.vectors and store.embedder is not None:
        try:  # may probe a remote provider: outside any transaction
            vector_model = model_key(store.embedder)
        except Exception as exc:  # noqa: BLE001 (the provider is down: vectors stay pending, reconcile repairs)
            log.warning("import cannot tell the embedder's model: %s", exc)
            problems.add(
                "vectors not imported", f"embedder error {exc}", "frames left pending", plan.vectors
            )
    if plan.vectors and store.embedder is None:
        problems.add(
            "vectors not imported",
            "this store has no embedder",
            "frames left pending",
            plan.vectors,
        )
    with store.write() as session:
        mind_id = _mind_id(session, name, kind, merge=merge)
        writer = MindWriter(
            session,
            mind_id,
            plan,
            adapter=store.adapter,
            vector_model=vector_model,
            progress=progress,
        )
        for _, line in _guarded(records(Problems()), Problems()):  # pass 2: counted in pass 1
            writer.add(line)
        writer.finish()
    c = writer.counts.get
    return ImportReport(
        mind=name,
        frames_imported=c("frames", 0),
        entities_imported=c("entity", 0),
        relations_imported=c("relation", 0),
        sessions_imported=c("sessions", 0),
        duplicates_skipped=c("duplicates", 0),
        problems=problems.lines(),
        awareness_imported=c("awareness", 0),
        mentions_imported=c("mentions", 0),
        kv_imported=c("kv", 0),
        vectors_imported=c("vectors", 0),
        vectors_pending=c("vectors_pending", 0),
        harvest_sources_imported=c("harvest_sources", 0),
        conversations_imported=c("conversations", 0),
        messages_imported=c("messages", 0),
        agents_imported=c("agents", 0),
        aliases_imported=c("aliases", 0),
        versions_imported=c("entity_versions", 0) + c("relation_versions", 0),
    )

"""Bounded reading of outside files: harvest sources and import files.

Every file a harvest or an import reads comes from outside the library (a user's folder, an
export someone sent, a path an agent named), so every read here is bounded before anything is
parsed:

* a file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` on the open
  descriptor: symbolic links, FIFOs, devices and sockets are refused without ever blocking (a
  FIFO opened non-blocking for reading returns at once; it is then refused, never read);
* a file is read up to its cap plus one byte, whatever its size claims (``/dev/zero`` and a
  file that grows while read are refused at the cap);
* a zip archive's member count is read from its end-of-central-directory record before
  ``zipfile`` parses the directory, and a member is decompressed in chunks up to its cap: the
  sizes in the zip's headers are never trusted;
* JSON is scanned before it is parsed: nesting deeper than :data:`MAX_JSON_DEPTH` or more than
  :data:`MAX_JSON_CONTAINERS` arrays and objects is refused, so neither ``RecursionError`` nor a
  small file that parses into gigabytes of objects can happen.

Every refusal is an :class:`~waggle_store.errors.InvalidInputError` naming the file.
"""

from __future__ import annotations

import json
import os
import re
import stat
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Final

from waggle_store.errors import InvalidInputError

__all__ = [
    "MAX_ARCHIVE_MEMBERS",
    "MAX_FILE_BYTES",
    "MAX_FOLDER_BYTES",
    "MAX_FOLDER_FILES",
    "MAX_JSON_CONTAINERS",
    "MAX_JSON_DEPTH",
    "MAX_LINE_BYTES",
    "MAX_MEMBER_BYTES",
    "bounded_json",
    "check_json_shape",
    "is_zip",
    "open_regular",
    "read_bounded",
    "read_capped",
    "read_lines",
    "read_zip_member",
    "walk_regular",
]

#: Largest single file read whole (a ChatGPT/Claude ``conversations.json``, a JSONL or OpenFang
#: export, a note): large exports of heavy users stay well under it.
MAX_FILE_BYTES: Final = 256 << 20
#: Largest zip member decompressed (counted as it is decompressed, not from the headers).
MAX_MEMBER_BYTES: Final = 256 << 20
#: Largest ratio of a member's decompressed bytes to its compressed ones, checked once past
#: :data:`RATIO_FREE_BYTES`: JSON exports compress about tenfold, zip bombs a thousandfold.
MAX_MEMBER_RATIO: Final = 100
RATIO_FREE_BYTES: Final = 16 << 20
#: Most members a zip archive may list.
MAX_ARCHIVE_MEMBERS: Final = 100_000
#: A notes folder: most files, and most bytes over all of them.
MAX_FOLDER_FILES: Final = 20_000
MAX_FOLDER_BYTES: Final = 1 << 30
#: Longest line of a JSONL file: a 1 MiB memory escaped as JSON (up to six bytes per character
#: for ``\\uXXXX``) plus its other fields.
MAX_LINE_BYTES: Final = 8 << 20
#: Deepest JSON nesting accepted: every format read here is a few levels deep.
MAX_JSON_DEPTH: Final = 64
#: Most JSON arrays and objects in one document: each costs ~100 bytes of Python objects from a
#: few bytes of text (``[[],[],...]``), so the text's size alone does not bound the memory.
MAX_JSON_CONTAINERS: Final = 4_000_000

_CHUNK: Final = 1 << 16
_STRINGS: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS: Final = re.compile(rb"[\[\]{}]")
_EOCD: Final = b"PK\x05\x06"
_ZIP64_LOCATOR: Final = b"PK\x06\x07"
_ZIP64_EOCD: Final = b"PK\x06\x06"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def open_regular(path: str | os.PathLike[str], *, limit: int | None = MAX_FILE_BYTES,
                 follow_symlinks: bool = False) -> IO[bytes]:
    """The regular file at ``path``, opened for reading without blocking and (unless
    ``follow_symlinks``: a path the caller named itself) without following a symbolic link at
    its last component; refused (InvalidInputError) otherwise, or when its size is over
    ``limit`` (None: any size, for a file read line by line under :func:`read_lines`)."""
    where = os.fspath(path)
    nofollow = 0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0)
    flags = os.O_RDONLY | os.O_NONBLOCK | nofollow | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(where, flags)
    except FileNotFoundError as exc:
        raise InvalidInputError(f"{where} does not exist") from exc
    except OSError as exc:
        if os.path.islink(where):
            raise InvalidInputError(f"{where} is a symbolic link; give the file itself") from exc
        raise InvalidInputError(f"{where} cannot be opened: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInputError(
                f"{where} is {_kind(info.st_mode)}; only regular files are read")
        if limit is not None and info.st_size > limit:
            raise InvalidInputError(f"{where} is {info.st_size} bytes; the limit is {limit}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(handle: IO[bytes], limit: int, what: str, *,
                ratio_of: int | None = None) -> bytes:
    """The rest of ``handle``, at most ``limit`` bytes; refused when there is more. With
    ``ratio_of`` (a zip member's compressed size) also refused when, past
    :data:`RATIO_FREE_BYTES`, more than :data:`MAX_MEMBER_RATIO` times that came out."""
    parts: list[Any] = []
    size = 0
    ratio_cap = None if ratio_of is None else max(RATIO_FREE_BYTES, ratio_of * MAX_MEMBER_RATIO)
    while True:
        chunk = handle.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            joined: bytes = chunk[:0].join(parts)  # (str from a text file object)
            return joined
        size += len(chunk)
        if size > limit:
            raise InvalidInputError(f"{what} is larger than {limit} bytes")
        if ratio_cap is not None and size > ratio_cap:
            raise InvalidInputError(
                f"{what} decompresses to more than {MAX_MEMBER_RATIO} times its compressed size "
                "(a zip bomb?)")
        parts.append(chunk)


def read_bounded(path: str | os.PathLike[str], *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (see :func:`open_regular`), at most ``limit``."""
    with open_regular(path, limit=limit) as handle:
        return read_capped(handle, limit, os.fspath(path))


def read_lines(handle: IO[Any], what: str, *, limit: int = MAX_LINE_BYTES) -> Iterator[Any]:
    """The lines of an open file (text or bytes), each at most ``limit`` long: a longer line is
    refused naming its number, without reading the rest of it into memory."""
    number = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit:
            raise InvalidInputError(f"{what} line {number} is longer than {limit} bytes")
        yield line


def _member_count(handle: IO[bytes], where: str) -> int:
    """The entry count of a zip's end-of-central-directory record (zip64's when it says so),
    read before ``zipfile`` builds one object per entry."""
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    tail_size = min(size, 22 + 0xFFFF)
    handle.seek(size - tail_size)
    tail = handle.read(tail_size)
    at = tail.rfind(_EOCD)
    if at < 0 or at + 22 > len(tail):
        raise InvalidInputError(f"{where} is not a readable zip archive")
    count = int(struct.unpack("<H", tail[at + 10:at + 12])[0])
    if count == 0xFFFF and at >= 20 and tail[at - 20:at - 16] == _ZIP64_LOCATOR:
        (offset,) = struct.unpack("<Q", tail[at - 12:at - 4])
        handle.seek(offset)
        record = handle.read(56)
        if len(record) < 56 or record[:4] != _ZIP64_EOCD:
            raise InvalidInputError(f"{where} is not a readable zip archive")
        count = int(struct.unpack("<Q", record[32:40])[0])
    handle.seek(0)
    return count


def read_zip_member(handle: IO[bytes], where: str, pick: str, *,
                    limit: int | None = None) -> bytes | None:
    """The member named ``pick`` (at any depth; the shortest path wins) of the zip archive in
    ``handle``, decompressed up to ``limit`` bytes (default :data:`MAX_MEMBER_BYTES`); None when
    the archive has no such member."""
    limit = MAX_MEMBER_BYTES if limit is None else limit
    count = _member_count(handle, where)
    if count > MAX_ARCHIVE_MEMBERS:
        raise InvalidInputError(
            f"{where} lists {count} members; the limit is {MAX_ARCHIVE_MEMBERS}")
    try:
        with zipfile.ZipFile(handle) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_ARCHIVE_MEMBERS:
                raise InvalidInputError(
                    f"{where} lists {len(infos)} members; the limit is {MAX_ARCHIVE_MEMBERS}")
            found = [i for i in infos if not i.is_dir() and i.filename.rsplit("/", 1)[-1] == pick]
            if not found:
                return None
            member = min(found, key=lambda i: len(i.filename))
            with archive.open(member) as stream:
                return read_capped(stream, limit, f"{where}: {member.filename}",
                                   ratio_of=member.compress_size)
    except InvalidInputError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError,
            RuntimeError, ValueError) as exc:
        raise InvalidInputError(f"{where} is not a readable zip archive: {exc}") from exc


def is_zip(handle: IO[bytes]) -> bool:
    start = handle.read(4)
    handle.seek(0)
    return start in (b"PK\x03\x04", b"PK\x05\x06")


def walk_regular(root: Path, suffixes: tuple[str, ...]) -> tuple[list[tuple[str, Path]],
                                                                 list[tuple[str, str]]]:
    """The regular files under ``root`` with one of ``suffixes`` (relative POSIX path, path),
    sorted, hidden files and folders skipped; symbolic links, FIFOs, devices and sockets are
    not followed or read but listed as problems. More than :data:`MAX_FOLDER_FILES` files or
    :data:`MAX_FOLDER_BYTES` bytes is refused."""
    found: list[tuple[str, Path]] = []
    problems: list[tuple[str, str]] = []
    total = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            problems.append((folder.relative_to(root).as_posix(), f"cannot list: {exc.strerror}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            rel = path.relative_to(root).as_posix()
            if entry.name.startswith("."):
                continue
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                stack.append(path)
                continue
            if path.suffix.lower() not in suffixes:
                continue
            if stat.S_ISLNK(info.st_mode):
                problems.append((rel, "a symbolic link; not followed"))
                continue
            if not stat.S_ISREG(info.st_mode):
                problems.append((rel, f"{_kind(info.st_mode)}; only regular files are read"))
                continue
            found.append((rel, path))
            total += info.st_size
            if len(found) > MAX_FOLDER_FILES:
                raise InvalidInputError(f"{root} holds more than {MAX_FOLDER_FILES} notes")
            if total > MAX_FOLDER_BYTES:
                raise InvalidInputError(f"{root} holds more than {MAX_FOLDER_BYTES} bytes of notes")
    return sorted(found), sorted(problems)


def check_json_shape(data: bytes | str, what: str) -> None:
    """Refuse JSON text nested deeper than :data:`MAX_JSON_DEPTH` or holding more than
    :data:`MAX_JSON_CONTAINERS` arrays and objects (strings are skipped: brackets inside them
    do not count). Malformed text passes; the parser then says what is wrong with it."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if b"[" not in raw and b"{" not in raw:
        return
    bare = _STRINGS.sub(b'""', raw)
    containers = bare.count(b"[") + bare.count(b"{")
    if containers > MAX_JSON_CONTAINERS:
        raise InvalidInputError(
            f"{what} holds {containers} JSON arrays and objects; the limit is "
            f"{MAX_JSON_CONTAINERS}")
    depth = 0
    for match in _BRACKETS.finditer(bare):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise InvalidInputError(
                    f"{what} is nested deeper than {MAX_JSON_DEPTH} levels")
        else:
            depth -= 1


def bounded_json(data: bytes | str, what: str, **options: Any) -> Any:
    """``json.loads`` after :func:`check_json_shape`; bad JSON is an InvalidInputError."""
    check_json_shape(data, what)
    try:
        return json.loads(data, **options)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{what} is not JSON: {exc}") from exc

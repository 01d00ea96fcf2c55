"""Adapters for a folder of Markdown/text notes and for generic JSONL.

Markdown: every ``.md``/``.markdown``/``.txt`` file under the folder (recursively, hidden files
and folders skipped, a single file accepted too) is an item. Only regular files are read:
symbolic links, FIFOs, devices and sockets in the folder are problems of that entry
(:func:`~waggle_store.pipeline.safe_files.walk_regular`). A short file is one frame; a long
one is split at blank lines into frames of at most :data:`CHUNK_CHARS` characters, each
``[relative/path.md] <text>`` and each keeping the file's modification time. The source's
fingerprint covers the files' paths and bytes, not their times: touching a file is no change.

JSONL: one JSON object per line with ``content`` (or ``text``) and optional ``created_at``
(ISO-8601 with a zone), ``importance`` and ``source`` (a frame source; any other value is
stored as ``import``). A line that is not such an object (or is longer than MAX_LINE_BYTES, or
nested deeper than MAX_JSON_DEPTH) is a problem of that line only.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from waggle_store.errors import InvalidInputError
from waggle_store.models import FRAME_SOURCES
from waggle_store.pipeline.harvest.items import HarvestFrame, HarvestItem, Parsed, sha256
from waggle_store.pipeline.safe_files import (
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    bounded_json,
    open_regular,
    read_capped,
    walk_regular,
)
from waggle_store.timeutil import parse_iso

__all__ = ["CHUNK_CHARS", "NOTE_SUFFIXES", "chunk_text", "parse_jsonl", "parse_markdown"]

NOTE_SUFFIXES: Final = (".md", ".markdown", ".txt")
#: Largest frame cut from a note: a paragraph-sized memory recalls better than a whole file.
CHUNK_CHARS: Final = 4000


def chunk_text(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Split at blank lines into pieces of at most ``limit`` characters (a longer paragraph is
    cut hard); empty pieces are dropped."""
    pieces: list[str] = []
    current = ""
    for paragraph in (p.strip() for p in text.replace("\r\n", "\n").split("\n\n")):
        if not paragraph:
            continue
        while len(paragraph) > limit:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(paragraph[:limit])
            paragraph = paragraph[limit:].lstrip()
        if current and len(current) + 2 + len(paragraph) > limit:
            pieces.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        pieces.append(current)
    return pieces


def _notes(root: Path) -> tuple[list[tuple[str, Path]], list[tuple[str, str]]]:
    if root.is_dir() and not root.is_symlink():
        return walk_regular(root, NOTE_SUFFIXES)
    return [(root.name, root)], []


def parse_markdown(root: Path) -> Parsed:
    if not root.exists() and not root.is_symlink():
        raise InvalidInputError(f"{root} does not exist")
    digest = hashlib.sha256()
    items: list[HarvestItem] = []
    notes, problems = _notes(root)
    for rel, path in notes:
        try:  # one unreadable note (replaced by a FIFO, too large) fails that note only
            with open_regular(path) as handle:
                data = read_capped(handle, MAX_FILE_BYTES, rel)
                modified = os.fstat(handle.fileno()).st_mtime
        except InvalidInputError as exc:
            if path is root:
                raise
            problems.append((rel, str(exc)))
            continue
        digest.update(rel.encode("utf-8") + b"\x00" + sha256(data).encode("ascii") + b"\n")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            problems.append((rel, f"not UTF-8 text: {exc}"))
            continue
        when = datetime.fromtimestamp(modified, UTC)
        frames = [HarvestFrame(f"[{rel}] {piece}", when, None, "import")
                  for piece in chunk_text(text)]
        items.append(HarvestItem(rel, frames))
    return Parsed(digest.hexdigest(), items, problems)


def _jsonl_frame(value: object) -> HarvestFrame:
    if not isinstance(value, dict):
        raise InvalidInputError("a line must be a JSON object")
    content = value.get("content", value.get("text"))
    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError("a line needs a non-empty string 'content' (or 'text')")
    when = value.get("created_at")
    if when is not None and not isinstance(when, str):
        raise InvalidInputError("'created_at' must be an ISO-8601 string")
    importance = value.get("importance")
    if importance is not None and not isinstance(importance, str):
        raise InvalidInputError("'importance' must be a string")
    source = value.get("source")
    return HarvestFrame(content, parse_iso(when, name="created_at") if when else None, importance,
                        source if source in FRAME_SOURCES else "import")


def parse_jsonl(path: Path) -> Parsed:
    with open_regular(path) as handle:
        data = read_capped(handle, MAX_FILE_BYTES, str(path))
    parsed = Parsed(sha256(data))
    for number, line in enumerate(data.removeprefix(b"\xef\xbb\xbf").split(b"\n"), 1):
        if not line.strip():
            continue
        ref = f"line {number}"
        if len(line) > MAX_LINE_BYTES:  # refused before it is decoded or parsed
            parsed.problems.append((ref, f"longer than {MAX_LINE_BYTES} bytes"))
            continue
        try:
            frame = _jsonl_frame(bounded_json(line.decode("utf-8"), ref))
        except (UnicodeDecodeError, InvalidInputError) as exc:
            parsed.problems.append((ref, f"{type(exc).__name__}: {exc}"))
            continue
        parsed.items.append(HarvestItem(ref, [frame]))
    return parsed

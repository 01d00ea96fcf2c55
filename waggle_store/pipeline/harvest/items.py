"""What a harvest adapter produces: items (a conversation, a file, a JSONL line), each made of
one or more frames, plus the problems met while reading, by item reference."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.safe_files import (
    MAX_FILE_BYTES,
    is_zip,
    open_regular,
    read_bounded,
    read_capped,
    read_zip_member,
)
from waggle_store.repositories.common import check_content

__all__ = ["HarvestFrame", "HarvestItem", "Parsed", "checked_items", "export_bytes", "sha256"]

#: Largest export archive opened (it holds the images too; only its central directory and its
#: conversations member are read).
MAX_ARCHIVE_BYTES: Final = 64 << 30
#: The file a ChatGPT or Claude data export keeps its conversations in.
CONVERSATIONS_FILE: Final = "conversations.json"


@dataclass(frozen=True)
class HarvestFrame:
    """One memory to store: its text, original time, and optional importance/source."""

    content: str
    created_at: datetime | None
    importance: str | None = None
    source: str | None = None


@dataclass
class HarvestItem:
    ref: str  # how a failure names it: a conversation title, a file path, "line 7"
    frames: list[HarvestFrame] = field(default_factory=list)


@dataclass
class Parsed:
    """An adapter's result: the source's fingerprint, its items, and per-item problems."""

    content_hash: str
    items: list[HarvestItem] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def epoch_utc(value: object) -> datetime | None:
    """Epoch seconds (ChatGPT's ``create_time``) as a UTC datetime; None if absent or absurd."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def export_bytes(path: Path) -> bytes:
    """The ``conversations.json`` of a data export given as that file, the unzipped export folder
    or the export's ``.zip``; every read bounded (:mod:`waggle_store.pipeline.safe_files`). An
    export's ``.zip`` may be large (it holds the images too): only its conversations member is
    decompressed, and only up to its cap."""
    if path.is_dir():
        member = path / CONVERSATIONS_FILE
        if not member.exists() and not member.is_symlink():
            raise InvalidInputError(f"{path} has no {CONVERSATIONS_FILE}")
        return read_bounded(member)
    with open_regular(path, limit=MAX_ARCHIVE_BYTES) as handle:
        if not is_zip(handle):
            return read_capped(handle, MAX_FILE_BYTES, str(path))
        data = read_zip_member(handle, str(path), CONVERSATIONS_FILE)
    if data is None:
        raise InvalidInputError(f"{path} holds no {CONVERSATIONS_FILE}")
    return data


def checked_items(parsed: Parsed) -> Parsed:
    """Drop the items with a frame the API would refuse (empty, NUL, over MAX_CONTENT_BYTES):
    each becomes a problem of that item only; the others go on."""
    kept: list[HarvestItem] = []
    for item in parsed.items:
        try:
            for frame in item.frames:
                check_content(frame.content)
        except InvalidInputError as exc:
            parsed.problems.append((item.ref, str(exc)))
            continue
        kept.append(item)
    parsed.items = kept
    return parsed

"""What a harvest adapter produces: items (a conversation, a file, a JSONL line), each made of
one or more frames, plus the problems met while reading, by item reference."""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from waggle_store.errors import InvalidInputError

__all__ = ["HarvestFrame", "HarvestItem", "Parsed", "export_bytes", "sha256"]

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
    or the export's ``.zip``."""
    if path.is_dir():
        path = path / CONVERSATIONS_FILE
        if not path.is_file():
            raise InvalidInputError(f"{path.parent} has no {CONVERSATIONS_FILE}")
        return path.read_bytes()
    data = path.read_bytes()
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == CONVERSATIONS_FILE]
            if not names:
                raise InvalidInputError(f"{path} holds no {CONVERSATIONS_FILE}")
            return archive.read(min(names, key=len))
    return data

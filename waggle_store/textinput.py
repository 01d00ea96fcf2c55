"""The rules for caller input that reaches SQL as a value: one place for every read API.

Unchecked, a lone surrogate escapes as a raw ``UnicodeEncodeError``, a 50 KB query makes
SQLite's LIKE give up ("pattern too complex"), a NUL makes Postgres refuse the parameter. Every
API applies the same rules, from here:

* **Free-text queries** (``search``, ``search_entities``) never fail on their content: control,
  format and surrogate characters (Unicode category ``C*``) become spaces (:func:`scrub`), LIKE
  metacharacters are escaped (:func:`escape_like`), and length is bounded by the caller's own
  rule (a query longer than any stored name cannot match one; search's terms are bounded in
  :mod:`waggle_store.search.query`). Only a non-string is refused.
* **Identifiers** (session ids, keys, types, categories) are compared for equality, so they are
  refused, not altered, when they hold what no stored value can (a NUL, a lone surrogate) or are
  longer than the column (:func:`check_identifier`).
* **Ids and limits** are integers (``bool`` excluded) that fit the 64-bit columns
  (:func:`check_id`, :func:`check_limit`); beyond that SQLite's driver raises ``OverflowError``.

Everything here raises :class:`~waggle_store.errors.InvalidInputError` or nothing.
:mod:`waggle_store.unitofwork` backs these rules up for paths that bypass them: an encoding or
range error raised while binding a value is translated into the same error.
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Final

from waggle_store.errors import InvalidInputError

__all__ = [
    "LIKE_ESCAPE",
    "MAX_ID",
    "MAX_LIMIT",
    "check_id",
    "check_identifier",
    "check_limit",
    "check_query",
    "escape_like",
    "is_other_char",
    "like_contains",
    "scrub",
    "unstorable",
]

#: Largest id a BIGINT / SQLite INTEGER column holds.
MAX_ID: Final = 2**63 - 1
#: Largest ``limit`` a read API accepts: a page, not a dump.
MAX_LIMIT: Final = 100_000
#: The escape character of :func:`escape_like`; bind it as ``ESCAPE '\\'``.
LIKE_ESCAPE: Final = "\\"


def is_other_char(ch: str) -> bool:
    """Control, format, surrogate, private-use or unassigned (``C*``): never part of a query."""
    return unicodedata.category(ch)[0] == "C"


def scrub(text: str) -> str:
    """``text`` with every ``C*`` character turned into a space, stripped. A NUL makes FTS5
    raise "unterminated string" and psycopg refuse the parameter; a lone surrogate cannot be
    encoded at all. Linear; the common all-printable text is returned by one scan."""
    if text.isprintable():
        return text.strip()
    return "".join(" " if is_other_char(ch) else ch for ch in text).strip()


def check_query(value: object, *, name: str = "query") -> str:
    """A free-text query, scrubbed (see the module docstring); only a non-string is refused."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    return scrub(value)


def escape_like(text: str) -> str:
    """``\\``, ``%`` and ``_`` escaped with :data:`LIKE_ESCAPE`: the caller's text is literal."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def like_contains(text: str) -> str:
    """The ``LIKE`` pattern "contains ``text``" (bind with ``ESCAPE '\\'``)."""
    return f"%{escape_like(text)}%"


def unstorable(text: str) -> str | None:
    """Why no column can hold ``text`` (a NUL, a lone surrogate), or None."""
    if "\x00" in text:
        return "a NUL character (\\x00)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate (not valid Unicode text)"
    return None


def check_identifier(value: object, *, name: str, max_length: int) -> str:
    """An identifier compared for equality: a string no longer than its column that a column
    could hold; refused otherwise (a lookup for it could only find nothing, and the drivers
    raise on the characters instead of answering that)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    why = unstorable(value)
    if why is not None:
        raise InvalidInputError(f"{name} contains {why}")
    if len(value) > max_length:
        raise InvalidInputError(
            f"{name} is {len(value)} characters long; the limit is {max_length}")
    return value


def check_id(value: object, *, name: str = "id") -> int:
    """An integer id (not a bool) that fits a 64-bit column; unknown ids are the caller's to
    report (None / NotFoundError)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be an integer id, got {value!r}")
    if not -MAX_ID - 1 <= value <= MAX_ID:
        raise InvalidInputError(f"{name} {value} is outside the 64-bit id range")
    return value


def check_limit(value: object, *, name: str = "limit", maximum: int = MAX_LIMIT) -> int:
    """A positive integer page size, at most ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInputError(f"{name} must be an integer from 1 to {maximum}, got {value!r}")
    return value


#: The largest memory metadata accepted: its compact JSON text, in UTF-8 bytes.
MAX_METADATA_BYTES: Final = 64 * 1024
#: How deeply metadata may nest objects and arrays (the object itself is level 1).
MAX_METADATA_DEPTH: Final = 8
#: The longest metadata key, in characters.
MAX_METADATA_KEY: Final = 256


def check_metadata(value: object, *, name: str = "metadata") -> dict[str, object] | None:
    """A memory's metadata: None or a dict of JSON values (string keys; strings, finite
    numbers, booleans, None, lists and dicts of them), at most :data:`MAX_METADATA_DEPTH`
    levels deep and :data:`MAX_METADATA_BYTES` as compact JSON. Returns it as stored (a copy),
    None for none or an empty dict."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInputError(f"{name} must be a dict of JSON values or None, "
                                f"got {type(value).__name__}")
    _check_json(value, name, 1)
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:  # a guard: _check_json refuses these first
        raise InvalidInputError(f"{name} is not JSON: {exc}") from exc
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise InvalidInputError(f"{name} is larger than {MAX_METADATA_BYTES} bytes as JSON")
    decoded = json.loads(encoded)
    return decoded or None


def _check_json(value: object, name: str, depth: int) -> None:
    if value is None or isinstance(value, bool | int | str):
        if isinstance(value, str) and unstorable(value) is not None:
            raise InvalidInputError(f"{name} holds a string the database cannot store: "
                                    f"{unstorable(value)}")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{name} holds a number JSON cannot carry: {value!r}")
        return
    if depth > MAX_METADATA_DEPTH and isinstance(value, dict | list | tuple):
        raise InvalidInputError(f"{name} nests deeper than {MAX_METADATA_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or not key or len(key) > MAX_METADATA_KEY:
                raise InvalidInputError(f"{name} keys must be strings of 1 to "
                                        f"{MAX_METADATA_KEY} characters, got {key!r}")
            _check_json(key, name, depth)
            _check_json(item, name, depth + 1)
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_json(item, name, depth + 1)
        return
    raise InvalidInputError(f"{name} holds a {type(value).__name__}, which is not a JSON value")

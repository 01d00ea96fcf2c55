"""Helpers shared by the repositories: input validation, content hashing, limits, and the two
database idioms every table family needs (race-free get-or-create, affected-row counts).

Validation lives here, below the facade, so that every write path (the public API, cognify,
harvest) refuses the same bad input with the same error before anything reaches the database.

The idioms themselves (:func:`get_or_create`, :func:`insert_or_none`, :func:`rowcount`) are
defined in :mod:`waggle_store.models.idioms`, beside the ORM models, because writers below the
repositories need them too (the dialect adapters); they are re-exported here so a repository
finds all its helpers in one place.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from waggle_store.errors import InvalidInputError
from waggle_store.models.idioms import get_or_create as get_or_create
from waggle_store.models.idioms import insert_or_none as insert_or_none
from waggle_store.models.idioms import rowcount as rowcount
from waggle_store.textinput import check_id as textinput_check_id
from waggle_store.textinput import unstorable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

MAX_CONTENT_BYTES = 1_048_576
"""Largest frame content (and awareness/identity text) accepted, in bytes of UTF-8 (1 MiB).

A memory is text an agent recalls into a prompt; a megabyte is far past any useful memory and
well below what either database handles comfortably, so larger input is a caller bug.
"""

MAX_PROPERTIES_BYTES = 65_536
"""Largest properties object of an entity, in bytes of its JSON (64 KiB): properties are facts
about a thing (a role, a city, an email), read on every graph traversal; a larger object is
a document and belongs in a memory (frame), which has its own, larger cap."""

MAX_KEY_LENGTH = 500  # kv_store.key is VARCHAR(500)
MAX_NAME_LENGTH = 255  # gop_id / project_id columns are VARCHAR(255)
MAX_LIMIT = 100_000

# JS String.prototype.trim() strips WhiteSpace and LineTerminator code points.
# Python's str.strip() differs: it also strips U+001C..U+001F and keeps U+FEFF, so the set is
# spelled out to keep content hashes identical to Waggle's.
_JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_HM_PREFIX = re.compile(r"\A\[hm [^\]]*\][" + re.escape(_JS_WHITESPACE) + r"]*")


def locks_rows(session: Session) -> bool:
    """Whether the session's database takes row locks (Postgres). SQLite has none: its writers
    are serialised by ``BEGIN IMMEDIATE`` and ``FOR UPDATE`` is not rendered, so a locking SELECT
    there only reads a row, and the write paths skip it."""
    return session.get_bind().dialect.name != "sqlite"


def js_trim(text: str) -> str:
    return text.strip(_JS_WHITESPACE)


def strip_hm_prefix(text: str) -> str:
    """Drop a leading ``[hm …]`` provenance prefix, so that the same turn
    captured by two IDE hooks hashes the same. Only a prefix at the very start counts."""
    return _HM_PREFIX.sub("", text, count=1)


def content_hash(content: str) -> str:
    """SHA-256 hex of the prefix-stripped, trimmed content: the dedup key of a memory."""
    return hashlib.sha256(js_trim(strip_hm_prefix(content)).encode("utf-8")).hexdigest()


def check_text(value: object, *, name: str, allow_empty: bool = False,
               max_bytes: int = MAX_CONTENT_BYTES) -> str:
    """Validate free text bound for a TEXT column; return it unchanged."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise InvalidInputError(
            f"{name} contains a NUL character (\\x00), which neither backend stores")
    if not allow_empty and not js_trim(value):
        raise InvalidInputError(f"{name} must not be empty or whitespace only")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} is not valid Unicode text (lone surrogate): {exc}") from exc
    if size > max_bytes:
        raise InvalidInputError(
            f"{name} is {size} bytes of UTF-8; the maximum is {max_bytes} (MAX_CONTENT_BYTES)"
        )
    return value


def check_content(value: object, *, name: str = "content") -> str:
    """Frame content: non-empty text whose body (after any ``[hm …]`` prefix) is non-empty too,
    since an empty body would make every prefixed-but-empty memory a duplicate of the others."""
    text = check_text(value, name=name)
    if not js_trim(strip_hm_prefix(text)):
        raise InvalidInputError(f"{name} has a [hm …] prefix but no body")
    return text


def check_name(value: object, *, name: str, max_length: int = MAX_NAME_LENGTH) -> str:
    """Identifiers (gop_id, project_id, kv key): non-empty, no NUL, bounded by the column."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip() or unstorable(value) is not None or len(value) > max_length:
        raise InvalidInputError(
            f"{name} must be a non-empty string of at most {max_length} characters without NUL "
            f"or lone surrogates, got {value[:80]!r}"
        )
    return value


def check_choice(value: object, choices: Iterable[str], *, name: str) -> str:
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise InvalidInputError(f"{name} must be one of {', '.join(options)}; got {value!r}")
    return value


def check_id(value: object, *, name: str = "id") -> int:
    # bool is an int subclass; True as a frame id is always a caller bug. The 64-bit range
    # check is waggle_store.textinput's (beyond it SQLite's driver raises OverflowError).
    return textinput_check_id(value, name=name)


def check_int(value: object, *, name: str, minimum: int | None = None,
              maximum: int | None = None) -> int:
    number = check_id(value, name=name)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise InvalidInputError(f"{name} must be between {minimum} and {maximum}, got {number}")
    return number


def check_json(value: Any, *, name: str) -> Any:
    """A value that round-trips through strict JSON (no NaN/Infinity, string keys, no NUL).

    Postgres JSONB rejects NaN and ``\\u0000``; checking here gives one error on both backends.
    """
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be JSON-serialisable: {exc}") from exc
    if "\\u0000" in encoded:
        raise InvalidInputError(f"{name} contains a NUL character, which JSONB cannot store")
    if "\\ud" in encoded:  # a surrogate escape: a pair spells one character, half of one nothing
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInputError(f"{name} is not valid Unicode text: {exc.reason} "
                                    "(half of a surrogate pair)") from exc
    if len(encoded.encode("utf-8")) > MAX_CONTENT_BYTES:
        raise InvalidInputError(f"{name} is larger than {MAX_CONTENT_BYTES} bytes as JSON")
    return json.loads(encoded) if _has_non_str_keys(value) else value


def _has_non_str_keys(value: Any) -> bool:
    if isinstance(value, dict):
        return any(not isinstance(k, str) or _has_non_str_keys(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_non_str_keys(v) for v in value)
    return False

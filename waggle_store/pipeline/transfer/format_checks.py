"""The field checkers of the ``waggle-mind`` format (:mod:`.format`): each takes a record's raw
JSON value and returns the Python value, or raises :class:`LineError` saying what is wrong.

Every text and JSON value gets the API's own limits (``MAX_CONTENT_BYTES``, the name lengths),
so an import stores nothing the API would refuse.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any, Final, TypeVar

from waggle_store.errors import InvalidInputError
from waggle_store.repositories.common import MAX_CONTENT_BYTES, check_content, check_json
from waggle_store.timeutil import parse_iso

__all__ = ["INT32", "INT64", "Checker", "LineError"]


class LineError(Exception):
    """A line that is not a valid record; the importer adds the line number."""


Checker = Callable[[Any], Any]
T = TypeVar("T")


def _str(max_length: int | None = None, *, empty: bool = True) -> Checker:
    """Text as the API takes it: no NUL, valid Unicode, at most ``max_length`` characters and
    never more than MAX_CONTENT_BYTES of UTF-8 (the API's cap on any text)."""
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise LineError(f"must be a string, got {type(value).__name__}")
        if "\x00" in value:
            raise LineError("contains a NUL character")
        if not empty and not value.strip():
            raise LineError("must not be empty")
        if max_length is not None and len(value) > max_length:
            raise LineError(f"is longer than {max_length} characters")
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise LineError(f"is not valid Unicode text: {exc}") from exc
        if size > MAX_CONTENT_BYTES:
            raise LineError(
                f"is {size} bytes of UTF-8; the maximum is {MAX_CONTENT_BYTES} (MAX_CONTENT_BYTES)")
        return value

    return check


def _api(check: Callable[[Any], T]) -> Callable[[Any], T]:
    """The API's own check of a value, its :class:`InvalidInputError` turned into a
    :class:`LineError` (the importer adds the line number)."""
    def checked(value: Any) -> T:
        try:
            return check(value)
        except InvalidInputError as exc:
            raise LineError(str(exc)) from exc

    return checked


#: A memory's text, checked as ``frames.create_i`` checks it.
_content = _api(check_content)
#: A JSON value the API would store (no NaN, no NUL, at most MAX_CONTENT_BYTES as JSON).
_json = _api(partial(check_json, name="the value"))
#: A time with a zone, in ISO 8601.
_time = _api(parse_iso)


#: The range of a 32-bit INTEGER column (PostgreSQL's ``integer``: ``t``, counts, priorities,
#: versions) and of a 64-bit one (``bigint``: a message's ``seq``). A value out of its column's
#: range is the check's line error, not the database's refusal in the middle of the write.
INT32: Final = (-(2**31), 2**31 - 1)
INT64: Final = (-(2**63), 2**63 - 1)


def _int(minimum: int | None = None, *, bits: tuple[int, int] | None = INT32) -> Checker:
    """An integer of at least ``minimum``, in the range ``bits`` (None: any, for the file's own
    ids, which are remapped and never stored)."""
    lowest, highest = bits if bits is not None else (None, None)
    if minimum is not None:
        lowest = minimum

    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise LineError(f"must be an integer, got {type(value).__name__}")
        if lowest is not None and value < lowest:
            raise LineError(f"must be at least {lowest}, got {value}")
        if highest is not None and value > highest:
            raise LineError(f"must be at most {highest}, got {value}")
        return value

    return check


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LineError(f"must be a finite number, got {value!r}")
    return float(value)


def _confidence(value: Any) -> float:
    number = _float(value)
    if not 0.0 <= number <= 1.0:
        raise LineError(f"must be between 0 and 1, got {number}")
    return number


def _choice(options: tuple[str, ...]) -> Checker:
    def check(value: Any) -> str:
        if value not in options:
            raise LineError(f"must be one of {', '.join(options)}; got {value!r}")
        return str(value)

    return check


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LineError(f"must be a JSON object, got {type(value).__name__}")
    checked: dict[str, Any] = _json(value)
    return checked


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise LineError(f"must be true or false, got {value!r}")
    return value


def _any(value: Any) -> Any:
    return _json(value)


def _vector(value: Any) -> list[float]:
    if not isinstance(value, list) or not value:
        raise LineError("must be a non-empty list of numbers")
    numbers = [_float(v) for v in value]
    if not any(numbers):  # as the store's vector check refuses it, before the write
        raise LineError("is the zero vector, which has no direction to compare by cosine")
    return numbers


def _optional(check: Checker) -> Checker:
    def optional(value: Any) -> Any:
        return None if value is None else check(value)

    return optional

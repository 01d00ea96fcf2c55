"""Time handling: every time in waggle_store is a timezone-aware UTC datetime.

A time is never stored or compared as a string (two string formats do not sort together): it
is parsed once, at the API boundary, and compared as a time everywhere after.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from waggle_store.errors import InvalidInputError

# Strict ISO-8601 with a zone: uppercase T, seconds, optional fraction, Z or
# ±HH[:]MM.
_ISO_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})$"
)


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_iso(value: str, *, name: str = "time") -> datetime:
    """Parse a strict ISO-8601 timestamp that carries a zone.

    V8's leniencies (Feb 30 rolling over, hour 24) are rejected deliberately:
    a memory's time that does not exist on the calendar is a bug in the caller's data.
    """
    if not isinstance(value, str) or not _ISO_RE.match(value):
        raise InvalidInputError(
            f"{name} must be an ISO-8601 timestamp with a zone, like 2025-12-01T14:32:00Z; "
            f"got {value!r}"
        )
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    frac = re.search(r"\.(\d+)", text)
    if frac and len(frac.group(1)) > 6:  # Python keeps microseconds; drop finer digits.
        text = text.replace(frac.group(0), "." + frac.group(1)[:6])
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidInputError(f"{name} is not a real calendar time: {value!r}") from exc
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:  # 9999-12-31T23:00:00-05:00 is in the year 10000 in UTC
        raise InvalidInputError(f"{name} is outside the years 1 to 9999 in UTC: {value!r}") from exc


def ensure_utc(value: datetime | str, *, name: str = "time") -> datetime:
    """Return ``value`` as an aware UTC datetime; naive datetimes are refused, not guessed."""
    if isinstance(value, str):
        return parse_iso(value, name=name)
    if not isinstance(value, datetime):
        raise InvalidInputError(
            f"{name} must be a datetime or ISO-8601 string, got {type(value).__name__}"
        )
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise InvalidInputError(
            f"{name} must be timezone-aware (got a naive datetime {value.isoformat()}); "
            "pass e.g. datetime.now(timezone.utc)"
        )
    return value.astimezone(UTC)


def optional_utc(value: datetime | str | None, *, name: str = "time") -> datetime | None:
    return None if value is None else ensure_utc(value, name=name)


_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def optional_bound(value: datetime | date | str | None, *, name: str = "time") -> datetime | None:
    """A query bound (``since``, ``until``) a person types: an ISO-8601 timestamp with a zone,
    or a plain date (``2026-11-01``, or a :class:`~datetime.date`), which means 00:00 UTC of
    that day. Times stored in memories stay strict (:func:`ensure_utc`): there a missing zone
    is a bug in the caller's data, while a bound is a day as often as it is a moment."""
    if isinstance(value, str) and _DATE_RE.match(value):
        try:
            value = date.fromisoformat(value)
        except ValueError as exc:
            raise InvalidInputError(f"{name} is not a real calendar date: {value!r}") from exc
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return optional_utc(value, name=name)

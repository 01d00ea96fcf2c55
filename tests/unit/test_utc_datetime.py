"""UTCDateTime's result processing (waggle_store/models/base.py): SQLite's stored strings read as
UTC datetimes, the fixed-width form by a fast path that must agree with the general one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.dialects import postgresql, sqlite

from waggle_store.models.base import UTCDateTime


@pytest.mark.parametrize(("stored", "expected"), [
    ("2026-11-30 12:34:56.123456", datetime(2026, 11, 30, 12, 34, 56, 123456, tzinfo=UTC)),
    ("2026-11-30 12:34:56.000000", datetime(2026, 11, 30, 12, 34, 56, tzinfo=UTC)),
    # Other forms (a default written by SQL, a T separator, an offset) take the general path.
    ("2026-11-30 12:34:56", datetime(2026, 11, 30, 12, 34, 56, tzinfo=UTC)),
    ("2026-11-30T12:34:56.123456", datetime(2026, 11, 30, 12, 34, 56, 123456, tzinfo=UTC)),
    ("2026-11-30 12:34:56.12+02:00", datetime(2026, 11, 30, 10, 34, 56, 120000, tzinfo=UTC)),
    (None, None),
])
def test_sqlite_strings_read_as_utc(stored: str | None, expected: datetime | None) -> None:
    dialect = sqlite.dialect()
    read = UTCDateTime().dialect_impl(dialect).result_processor(dialect, None)
    assert read is not None
    value = read(stored)
    assert value == expected
    if value is not None:
        assert value.tzinfo is UTC


def test_sqlite_round_trip_keeps_the_instant() -> None:
    dialect = sqlite.dialect()
    impl = UTCDateTime().dialect_impl(dialect)
    write, read = impl.bind_processor(dialect), impl.result_processor(dialect, None)
    assert write is not None
    assert read is not None
    when = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=-5)))
    assert read(write(when)) == when
    assert read(write(when)).tzinfo is UTC


def test_postgres_values_are_converted_to_utc() -> None:
    dialect = postgresql.dialect()
    read = UTCDateTime().dialect_impl(dialect).result_processor(dialect, None)
    aware = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    value = read(aware) if read is not None else aware
    assert value == aware
    assert value.tzinfo is UTC


def test_a_utc_value_is_returned_as_is() -> None:
    """The store's Postgres sessions run in UTC, so psycopg's values carry ``datetime.UTC``."""
    dialect = postgresql.dialect()
    read = UTCDateTime().dialect_impl(dialect).result_processor(dialect, None)
    assert read is not None
    value = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert read(value) is value


@pytest.mark.parametrize("dialect", [postgresql.dialect(), postgresql.psycopg.dialect()])
def test_postgres_none_and_naive_values(dialect: object) -> None:
    """Beside the UTC shortcut: None stays None, a naive value (a host's session in another
    zone reading ``timestamp``) is UTC by the store's convention, an aware one is converted."""
    read = UTCDateTime().dialect_impl(dialect).result_processor(dialect, None)  # type: ignore[arg-type]
    assert read is not None
    assert read(None) is None
    naive = datetime(2026, 1, 2, 3, 4, 5)
    assert read(naive) == naive.replace(tzinfo=UTC)
    assert read(naive).tzinfo is UTC
    east = datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert read(east) == east
    assert read(east).tzinfo is UTC

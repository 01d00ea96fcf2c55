"""The dates a query names (search/periods.py): what is read as a period, and what is not."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from waggle_store.search.periods import Period, calendar_periods, named_periods

#: A Wednesday.
NOW = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)


def _fields(query: str) -> list[tuple[int | None, int | None, int | None]]:
    return [(p.year, p.month, p.day) for p in named_periods(query, NOW)]


@pytest.mark.parametrize(("query", "expected"), [
    ("What painting did she show on October 13, 2023?", [(2023, 10, 13)]),
    ("what happened on oct 13th 2023", [(2023, 10, 13)]),
    ("What did Gina find on 1 February, 2023?", [(2023, 2, 1)]),
    ("the 3rd of March 2024 meeting", [(2024, 3, 3)]),
    ("notes from 2024-03-03", [(2024, 3, 3)]),
    ("Sep. 5, 2022 release", [(2022, 9, 5)]),
    ("What did we plan for March 3?", [(None, 3, 3)]),
    ("the party on 29 February", [(None, 2, 29)]),
    ("What did Mel paint in July 2023?", [(2023, 7, None)]),
    ("When did Melanie go camping in June?", [(None, 6, None)]),
    ("anything during August", [(None, 8, None)]),
    ("How many times has she gone to the beach in 2023?", [(2023, None, None)]),
    ("What did we decide in May?", [(None, 5, None)]),
    ("from June 2023 to March 5, 2024", [(2023, 6, None), (2024, 3, 5)]),
])
def test_calendar_dates_are_read(query: str,
                                 expected: list[tuple[int | None, int | None, int | None]]
                                 ) -> None:
    assert _fields(query) == expected


@pytest.mark.parametrize("query", [
    "What may Caroline do next?",
    "what did you say in may",           # lower case, no day or year: the verb
    "We invited 2023 people",            # a bare number is no year
    "What did Caroline research?",
    "meet at 10:30 on the second day",
    "what is planned on Friday",         # the coming Friday as often as the last
    "the deadline on February 30, 2023",  # not on the calendar
    "the 31 June",
    "2023-13-01",
    "",
])
def test_what_is_not_a_date_is_not_read(query: str) -> None:
    assert named_periods(query, NOW) == []


def test_a_date_is_read_once_by_its_most_specific_form() -> None:
    """"in October 13, 2023" is one day, not also October and 2023."""
    (period,) = named_periods("What did we do in October 13, 2023?", NOW)
    assert (period.year, period.month, period.day) == (2023, 10, 13)
    assert period.text == "October 13, 2023"


def test_relative_dates_are_resolved_against_now() -> None:
    def one(query: str) -> Period:
        (period,) = named_periods(query, NOW)
        return period

    assert (one("what did I do today").year, one("today").month, one("today").day) == (2026, 12, 2)
    assert (one("Yesterday's notes").month, one("yesterday").day) == (12, 1)
    assert one("what happened this week").week == date(2026, 11, 30)  # its Monday
    assert one("what did we decide last week").week == date(2026, 11, 23)
    assert (one("this month").year, one("this month").month) == (2026, 12)
    assert (one("last month").year, one("last month").month) == (2026, 11)
    assert one("last year").year == 2025
    new_year = datetime(2027, 1, 1, tzinfo=UTC)
    assert [(p.year, p.month) for p in named_periods("last month", new_year)] == [(2026, 12)]
    assert [(p.year, p.month, p.day) for p in named_periods("yesterday", new_year)] == [
        (2026, 12, 31)]


@pytest.mark.parametrize(("query", "expected"), [
    ("what did we discuss 3 days ago", (2026, 11, 29, None)),
    ("A day ago", (2026, 12, 1, None)),
    ("two weeks ago", (None, None, None, date(2026, 11, 16))),
    ("a month ago", (2026, 11, None, None)),
    ("13 months ago", (2025, 11, None, None)),
    ("2 years ago", (2024, None, None, None)),
    ("what did I say last Friday", (2026, 11, 27, None)),
    ("last Wednesday", (2026, 11, 25, None)),    # today is a Wednesday: the one before
    ("last monday", (2026, 11, 30, None)),
])
def test_days_weeks_months_ago_and_weekdays(
        query: str, expected: tuple[int | None, int | None, int | None, date | None]) -> None:
    (period,) = named_periods(query, NOW)
    assert (period.year, period.month, period.day, period.week) == expected


def test_a_period_holds_the_times_within_it_in_utc() -> None:
    (day,) = named_periods("on October 13, 2023", NOW)
    assert day.holds(datetime(2023, 10, 13, 0, 0, tzinfo=UTC))
    assert day.holds(datetime(2023, 10, 13, 23, 59, 59, tzinfo=UTC))
    assert not day.holds(datetime(2023, 10, 14, 0, 0, tzinfo=UTC))
    assert not day.holds(datetime(2024, 10, 13, 12, 0, tzinfo=UTC))
    # 20:00 on the 12th at UTC-5 is 01:00 on the 13th in UTC, the store's zone.
    assert day.holds(datetime(2023, 10, 12, 20, 0, tzinfo=timezone(timedelta(hours=-5))))
    (june,) = named_periods("in June", NOW)
    assert june.holds(datetime(2019, 6, 30, tzinfo=UTC))
    assert not june.holds(datetime(2019, 7, 1, tzinfo=UTC))
    (week,) = named_periods("last week", NOW)
    assert week.holds(datetime(2026, 11, 23, 0, 0, tzinfo=UTC))
    assert week.holds(datetime(2026, 11, 29, 23, 59, tzinfo=UTC))
    assert not week.holds(datetime(2026, 11, 30, 0, 0, tzinfo=UTC))
    assert not week.holds(datetime(2026, 11, 22, 23, 59, tzinfo=UTC))


def test_a_long_query_is_read_in_bounded_time() -> None:
    query = "on October 13, 2023 " + "x" * 1_000_000 + " in June"
    assert _fields(query) == [(2023, 10, 13)]  # read up to its first 2,000 characters


@pytest.mark.parametrize(("outer", "inner", "expected"), [
    ("in October 2023", "on October 13, 2023", True),
    ("on October 13, 2023", "in October 2023", False),
    ("on October 13, 2023", "on October 13, 2023", True),
    ("on October 13, 2023", "on October 14, 2023", False),
    ("in 2023", "on October 13, 2023", True),
    ("in 2023", "in 2024", False),
    ("in June", "on June 5, 2023", True),        # any year's June holds a day of June 2023
    ("in June", "in 2023", False),               # not the whole year
    ("in June", "on June 5", True),              # two patterns without a year
    ("on June 5", "in June", False),
    ("in June", "on March 3", False),
    ("in 2024", "on March 3", False),            # a day of any year is in no single year
    ("in November 2026", "last week", True),     # November 23–29, 2026
    ("in December", "this week", False),         # November 30 – December 6
    ("this week", "today", True),
    ("last week", "this week", False),
])
def test_a_period_contains_another_when_every_day_of_it_lies_within(
        outer: str, inner: str, expected: bool) -> None:
    (a,) = named_periods(outer, NOW)
    (b,) = named_periods(inner, NOW)
    assert a.contains(b) is expected


def test_calendar_periods_reads_no_relative_date() -> None:
    text = "Yesterday was wild; last week too; the show is on May 3, 2024, not in June"
    assert [(p.year, p.month, p.day) for p in calendar_periods(text)] == [
        (2024, 5, 3), (None, 6, None)]
    assert calendar_periods("we met 3 days ago, last Friday, this year") == []

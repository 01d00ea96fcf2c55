"""Calendar dates a query names ("on October 13, 2023", "in June", "last week"), as periods.

A question to a memory often says *when*: "What painting did Melanie show on October 13, 2023?",
"What did we decide last week?". Neither lane can use that: the frame's words do not say the
date (it is the frame's ``created_at``), so the keyword lane matches "October" only in frames that
mention the month, and an embedding of "October 13, 2023" is near nothing in particular. This
module finds such dates in the query text; :func:`~.explain.rank_results` ranks the found frames
of one of them first: created within it, or naming a calendar date within it in their own words
(see there). It never narrows a search: ``since``/``until`` are the filters.

**What is read** (English; month names in full or as three-letter abbreviations, any case,
except that "May" must be capitalised when it has no day or year: "what may I do" is a verb):

* a day: ``October 13, 2023``, ``Oct 13th 2023``, ``13 October 2023``, ``the 13th of October,
  2023``, ``2023-10-13``; without a year (``October 13``, ``13 October``) that day of any year;
* a month: ``October 2023``; ``in October`` / ``during October`` (any year's October);
* a year: ``in 2023`` / ``during 2023`` (a bare number is not taken for a year);
* relative to ``now``: ``today``, ``yesterday``, ``this week`` / ``last week`` (ISO weeks,
  Monday first), ``this month`` / ``last month``, ``this year`` / ``last year``; ``3 days ago``
  (that day), ``two weeks ago`` (that week), ``a month ago`` (that month), ``2 years ago``;
  ``last Friday`` (the latest Friday before today). Not "on Friday": it names the coming
  Friday as often as the last one.

Calendar dates are read in UTC, the zone every time of the store is in. Anything else ("next
Friday", "the summer", "recently") is not read: a date the parser misreads would reorder a
search, and one it ignores only leaves the order as it was.

**Why not dateparser** (PyPI): its ``search_dates`` takes "may" in "What may I do?" for May,
reads "in June" as one day (June 2 of this year), costs 0.3–6 ms a query here (190 ms on the
first) and brings 200 languages' tables; this module is a few regular expressions (3 µs for a
query naming no month, year or relative word, 25–50 µs for one that does) and reads nothing it
does not list above.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final

__all__ = ["Period", "calendar_periods", "named_periods"]


@dataclass(frozen=True, slots=True)
class Period:
    """A span of time named by a query: a calendar pattern (a field left None matches any
    value: ``month=6`` alone is June of any year) or, for an ISO week, its first day."""

    text: str
    year: int | None = None
    month: int | None = None
    day: int | None = None
    #: Monday of the ISO week this period is (then the other fields are None).
    week: date | None = None

    def holds(self, when: datetime) -> bool:
        """Whether ``when`` (aware; compared in UTC) lies within the period."""
        return self._has(when.astimezone(UTC).date())

    def contains(self, other: Period) -> bool:
        """Whether every day of ``other`` lies within this period ("in June" contains "June 5,
        2023" and "June 5", not "2023"; a period without a year is in no period with one)."""
        mine, theirs = self._days(), other._days()
        if theirs is None:  # any year's: within another pattern at most, field by field
            return mine is None and all(a is None or a == b for a, b in (
                (self.month, other.month), (self.day, other.day)))
        if mine is not None:
            return mine[0] <= theirs[0] and theirs[1] <= mine[1]
        first, end = theirs  # (a year at most)
        return all(self._has(first + timedelta(days=n)) for n in range((end - first).days))

    def _has(self, day: date) -> bool:
        if self.week is not None:
            return 0 <= (day - self.week).days < 7
        return ((self.year is None or day.year == self.year)
                and (self.month is None or day.month == self.month)
                and (self.day is None or day.day == self.day))

    def _days(self) -> tuple[date, date] | None:
        """The period's first day and the day after its last; None without a year (any year)."""
        if self.week is not None:
            return self.week, self.week + timedelta(days=7)
        if self.year is None:
            return None
        if self.month is None:
            return date(self.year, 1, 1), date(self.year + 1, 1, 1)
        if self.day is None:
            last = calendar.monthrange(self.year, self.month)[1]
            return date(self.year, self.month, 1), date(self.year, self.month, last) + timedelta(1)
        day = date(self.year, self.month, self.day)
        return day, day + timedelta(1)


_MONTHS: Final = {
    name.lower(): number for number, name in enumerate(calendar.month_name) if name
} | {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTH: Final = r"(?P<month>" + "|".join(
    sorted((re.escape(m) + (r"\.?" if len(m) == 3 else "") for m in _MONTHS),
           key=len, reverse=True)) + r")"
_DAY: Final = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR: Final = r"(?P<year>\d{4})"
#: Numbers in words, for "two weeks ago".
_COUNTS: Final[dict[str, int]] = {"a": 1, "an": 1} | {word: n for n, word in enumerate(
    ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
     "twelve"], start=1)}
#: Most specific first: a span taken by one pattern is not read again by a later one.
_CALENDAR: Final = [re.compile(p, re.IGNORECASE) for p in (
    rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b",
    rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b",
    r"\b(?P<year>\d{4})-(?P<num_month>\d{2})-(?P<day>\d{2})\b",
    rf"\b{_MONTH}\s+{_DAY}\b(?!:)",
    rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\b",
    rf"\b{_MONTH},?\s+{_YEAR}\b",
    rf"\b(?:in|during)\s+{_MONTH}\b",
    r"\b(?:in|during)\s+(?P<year>\d{4})\b",
)]
#: The dates relative to ``now``.
_RELATIVE: Final = [re.compile(p, re.IGNORECASE) for p in (
    r"\b(?P<relative>today|yesterday|(?:this|last)\s+(?:week|month|year))\b",
    r"\b(?P<count>\d{1,3}|" + "|".join(_COUNTS)
    + r")\s+(?P<unit>day|week|month|year)s?\s+ago\b",
    r"\blast\s+(?P<weekday>" + "|".join(
        name.lower() for name in calendar.day_name) + r")\b",
)]
#: A text longer than this is only read this far (a query names its date near its question).
_MAX_TEXT: Final = 2_000
#: What every pattern above needs (a month's first three letters, a year's four digits, a
#: relative word): one scan that most queries fail, so they cost 3 µs instead of the patterns' 30.
_ANY: Final = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|today|yesterday|this|last|ago|\d{4})",
    re.IGNORECASE)


def named_periods(query: str, now: datetime) -> list[Period]:
    """The periods ``query`` names, in the order it names them; [] when none (most queries).

    ``now`` (aware) resolves "today", "last week" and the like. A date that is not on the
    calendar (February 30) is not a period.
    """
    return _read(query, [*_CALENDAR, *_RELATIVE], now)


def calendar_periods(text: str) -> list[Period]:
    """The periods ``text`` names by the calendar ("March 3, 2024", "in June"): not its
    relative dates, which only the writer's "now" resolves (a frame's "last year" is the year
    before it was written, and a replayed conversation's dates are not today's)."""
    return _read(text, _CALENDAR, None)


def _read(text: str, patterns: list[re.Pattern[str]], now: datetime | None) -> list[Period]:
    text = text[:_MAX_TEXT]
    if _ANY.search(text) is None:
        return []
    found: list[tuple[int, int, Period]] = []  # (start, end, period) of each date read
    for pattern in patterns:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < t_end and t_start < end for t_start, t_end, _ in found):
                continue
            period = _period(match, now)
            if period is not None:
                found.append((start, end, period))
    found.sort(key=lambda item: item[0])
    return [period for _, _, period in found]


def _period(match: re.Match[str], now: datetime | None) -> Period | None:
    groups = match.groupdict()
    said = match.group(0)
    if now is None or not any(groups.get(g) for g in ("relative", "unit", "weekday")):
        return _calendar(said, groups)
    today = now.astimezone(UTC).date()
    if groups.get("relative") is not None:
        return _relative(said, " ".join(groups["relative"].lower().split()), today)
    if groups.get("unit") is not None:
        count = groups["count"].lower()
        return _ago(said, _COUNTS[count] if count in _COUNTS else int(count),
                    groups["unit"].lower(), today)
    return _weekday(said, groups["weekday"].lower(), today)


def _calendar(said: str, groups: dict[str, str | None]) -> Period | None:
    month_name, num_month = groups.get("month"), groups.get("num_month")
    year_text, day_text = groups.get("year"), groups.get("day")
    month: int | None = None
    if month_name is not None:
        name = month_name.lower().rstrip(".")
        month = _MONTHS[name]
        if name == "may" and not month_name[0].isupper() and day_text is None \
                and year_text is None:
            return None  # "in may" without a day or a year: most likely the verb
    elif num_month is not None:
        month = int(num_month)
    year = int(year_text) if year_text is not None else None
    day = int(day_text) if day_text is not None else None
    if not _on_calendar(year, month, day):
        return None
    return Period(said, year=year, month=month, day=day)


def _on_calendar(year: int | None, month: int | None, day: int | None) -> bool:
    if year is not None and not 1 <= year <= 9998:  # (its last day has a next one)
        return False
    if month is not None and not 1 <= month <= 12:
        return False
    if day is None:
        return True
    if month is None:
        return False
    # Without a year a day is on the calendar if some year has it (February 29).
    return 1 <= day <= calendar.monthrange(year if year is not None else 2000, month)[1]


_WEEKDAYS: Final = {name.lower(): number for number, name in enumerate(calendar.day_name)}


def _day(said: str, day: date) -> Period:
    """The period of one calendar day."""
    return Period(said, year=day.year, month=day.month, day=day.day)


def _ago(said: str, count: int, unit: str, today: date) -> Period:
    """"3 days ago" is that day; "2 weeks ago" that ISO week; "a month ago" that calendar month;
    "2 years ago" that year."""
    if unit == "day":
        return _day(said, today - timedelta(days=count))
    if unit == "week":
        return Period(said, week=today - timedelta(days=today.weekday() + 7 * count))
    if unit == "month":
        months = today.year * 12 + today.month - 1 - count
        return Period(said, year=months // 12, month=months % 12 + 1)
    return Period(said, year=today.year - count)


def _weekday(said: str, weekday: str, today: date) -> Period:
    """"last Friday": the latest Friday before today (a week ago on a Friday)."""
    back = (today.weekday() - _WEEKDAYS[weekday]) % 7 or 7
    return _day(said, today - timedelta(days=back))


def _relative(said: str, which: str, today: date) -> Period:
    if which in ("today", "yesterday"):
        return _day(said, today - timedelta(days=1 if which == "yesterday" else 0))
    last = which.startswith("last")
    if which.endswith("week"):
        monday = today - timedelta(days=today.weekday() + (7 if last else 0))
        return Period(said, week=monday)
    if which.endswith("month"):
        year, month = today.year, today.month
        if last:
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        return Period(said, year=year, month=month)
    return Period(said, year=today.year - (1 if last else 0))

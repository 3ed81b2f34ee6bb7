"""The times a query names: "on May 8, 2023", "in July", "last week", "three days ago".

A question about a day or a month ("What did Audrey eat for dinner on October 24, 2023?") is
answered by what was said around then, yet the date is rarely in the answer's words: the
message said "tonight". Hybrid search therefore reads the periods a query names and scores each
candidate by how close its time is to them (`ranking.features`), and adds the best keyword and
vector matches from inside those periods to the candidates.

Read here, in English:

- a day: "8 May, 2023", "May 8th 2023", "May 8", "2023-05-08";
- a month or a year: "May 2023", "in May", "2023", "summer 2023", "last summer";
- relative to `now`: "today", "yesterday", "the day before yesterday", "this/last week",
  "this/last month", "this/last year", "last weekend", "last Tuesday", "three days ago",
  "a couple of weeks ago".

A day or month without a year ("in July", "on May 8") is that day or month in any of the last
30 years, so a question asked long after the talk still matches it. A month name alone counts
only after a word like "in" or "during" ("in May", never "you may"), and "may" next to a day
without a year only when capitalised. Nothing else (times of day, "recently", ranges like "between May and July") is
read; such a query is ranked as if it named no time.

Libraries like dateparser turn a phrase into one instant; search needs the whole period a phrase
covers, in microseconds per query, so the few patterns are written out here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial

import numpy as np
from numpy.typing import NDArray

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
WEEKDAYS = {
    name: number
    for number, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
#: First month of each season (northern hemisphere) and its length in months.
SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3,
}  # fmt: skip

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_SEASON = "|".join(SEASONS)
_COUNT = "|".join(sorted(NUMBERS, key=len, reverse=True)) + r"|\d{1,3}"
#: Each pattern in the order it is tried; the text a pattern matched is blanked so a shorter
#: one ("May") does not read it again.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("iso", r"\b(\d{4})-(\d{2})-(\d{2})\b"),
        ("day_month_year", rf"\b{_DAY}(?:\s+of)?\s+({_MONTH})\.?,?\s*{_YEAR}\b"),
        ("month_day_year", rf"\b({_MONTH})\.?\s+{_DAY},?\s*{_YEAR}\b"),
        ("day_month", rf"\b{_DAY}(?:\s+of)?\s+({_MONTH})\b"),
        ("month_day", rf"\b({_MONTH})\.?\s+{_DAY}\b(?!\s*(?:am|pm|:|%))"),
        ("season_year", rf"\b({_SEASON})(?:\s+of)?\s+{_YEAR}\b"),
        ("month_year", rf"\b({_MONTH})\.?,?\s+(?:of\s+)?{_YEAR}\b"),
        ("last_season", rf"\blast\s+({_SEASON})\b"),
        ("day_before_yesterday", r"\bday before yesterday\b"),
        ("today", r"\b(today|tonight|this morning|this afternoon|this evening)\b"),
        ("yesterday", r"\b(yesterday|last night)\b"),
        ("ago", rf"\b({_COUNT})\s+(day|week|month|year)s?\s+ago\b"),
        ("this_last", r"\b(this|last|past|previous)\s+(week|weekend|month|year)\b"),
        ("weekday", r"\b(?:last|this|on)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"),
        ("month", rf"\b(?:in|during|of|since|early|late|mid|end of|beginning of)\s+({_MONTH})\b"),
        ("year", rf"\b(?:in|during|of|since|by|until|before|after|early|late|mid)\s+{_YEAR}\b"),
    )
)
#: Years a date without a year ("on May 8") is looked for in, back from the year of `now`.
YEARLESS_SPAN = 30
#: Characters of a query read for times (a question names its times early; a pasted page
#: must not turn into thousands of periods), and the most periods kept (three yearless dates).
MAX_TIME_TEXT = 1_000
MAX_PERIODS = 3 * YEARLESS_SPAN


@dataclass(frozen=True)
class Period:
    """[start, end) in UTC."""

    start: datetime
    end: datetime


def named_periods(query: str, now: datetime | None = None) -> list[Period]:
    """The periods the first MAX_TIME_TEXT characters of `query` name, relative to `now`
    (default: the current time), each once, at most MAX_PERIODS."""
    now = _utc(now or datetime.now(UTC))
    found: dict[Period, None] = {}
    # What each phrase names, read once however often it is repeated ("jan 1 jan 1 …").
    named: dict[tuple[str, tuple[str | None, ...]], bool] = {}

    def read(kind: str, match: re.Match[str]) -> str:
        phrase = (kind, match.groups())
        if phrase not in named:
            periods = _read(kind, match.groups(), now) if len(found) < MAX_PERIODS else []
            found.update(dict.fromkeys(periods))
            named[phrase] = bool(periods)
        # What one pattern read is blanked, so a later pattern does not read it again.
        return " " * len(match.group(0)) if named[phrase] else match.group(0)

    text = query[:MAX_TIME_TEXT]
    for kind, pattern in _PATTERNS:
        text = pattern.sub(partial(read, kind), text)
    return list(found)[:MAX_PERIODS]


def days_apart(timestamps: Sequence[float], periods: Sequence[Period]) -> NDArray[np.float64] | None:
    """Days between each moment (Unix seconds) and the nearest of `periods`, 0 inside one;
    None without periods."""
    if not periods:
        return None
    starts = np.array([p.start.timestamp() for p in periods])[None, :]
    ends = np.array([p.end.timestamp() for p in periods])[None, :]
    moments = np.asarray(timestamps, dtype=np.float64)[:, None]
    # Before a period: to its start; at or after its end (exclusive, so its last inside
    # second is end - 1): past that; else inside.
    seconds = np.where(moments < starts, starts - moments, np.where(moments >= ends, moments - ends + 1.0, 0.0))
    return np.asarray(seconds.min(axis=1) / 86400.0, dtype=np.float64)


def _read(kind: str, groups: Sequence[str | None], now: datetime) -> list[Period]:
    """The periods one match names; [] when its numbers are no date (May 35)."""
    g = [value or "" for value in groups]
    try:
        if kind == "iso":
            return [_day(int(g[0]), int(g[1]), int(g[2]))]
        if kind == "day_month_year":
            return [_day(int(g[2]), MONTHS[g[1].lower()], int(g[0]))]
        if kind == "month_day_year":
            return [_day(int(g[2]), MONTHS[g[0].lower()], int(g[1]))]
        if kind in ("day_month", "month_day") and "may" in g:
            return []  # "5 may be", "may 2 of us": without a year, only "May" is the month
        if kind == "day_month":
            return _every_year(now, MONTHS[g[1].lower()], int(g[0]))
        if kind == "month_day":
            return _every_year(now, MONTHS[g[0].lower()], int(g[1]))
        if kind == "season_year":
            first, months = SEASONS[g[0].lower()]
            return [_months(int(g[1]), first, months)]
        if kind == "month_year":
            return [_months(int(g[1]), MONTHS[g[0].lower()], 1)]
        if kind == "last_season":
            first, months = SEASONS[g[0].lower()]
            year = now.year if now >= _months(now.year, first, months).end else now.year - 1
            return [_months(year, first, months)]
        if kind == "month":
            return _every_year(now, MONTHS[g[0].lower()], None)
        if kind == "year":
            return [_months(int(g[0]), 1, 12)]
        return _relative(kind, g, now)
    except (ValueError, OverflowError):  # no such date, or one past what a datetime holds
        return []


def _relative(kind: str, g: Sequence[str], now: datetime) -> list[Period]:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    day = timedelta(days=1)
    if kind == "today":
        return [Period(today, today + day)]
    if kind == "yesterday":
        return [Period(today - day, today)]
    if kind == "day_before_yesterday":
        return [Period(today - 2 * day, today - day)]
    if kind == "ago":
        count = NUMBERS.get(g[0].lower()) or int(g[0])
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[g[1].lower()]
        middle = today - timedelta(days=count * days)
        slack = timedelta(days=max(1, days // 2))  # "two weeks ago" is roughly, not exactly
        return [Period(middle - slack, middle + slack + day)]
    if kind == "this_last":
        previous = g[0].lower() != "this"
        span = g[1].lower()
        if span in ("week", "weekend"):
            monday = today - timedelta(days=today.weekday()) - (timedelta(days=7) if previous else timedelta())
            if span == "weekend":
                saturday = monday + timedelta(days=5)
                return [Period(saturday, saturday + 2 * day)]
            return [Period(monday, monday + 7 * day)]
        if span == "month":
            year, month = (now.year, now.month) if not previous else _month_before(now.year, now.month)
            return [_months(year, month, 1)]
        return [_months(now.year - (1 if previous else 0), 1, 12)]
    if kind == "weekday":
        back = (today.weekday() - WEEKDAYS[g[0].lower()]) % 7 or 7
        start = today - timedelta(days=back)
        return [Period(start, start + day)]
    return []


def _every_year(now: datetime, month: int, day: int | None) -> list[Period]:
    """A day or month without a year: that day or month in each of the last YEARLESS_SPAN
    years up to the year of `now`."""
    years = range(now.year - YEARLESS_SPAN + 1, now.year + 1)
    return [_months(year, month, 1) if day is None else _day(year, month, day) for year in years]


def _day(year: int, month: int, day: int) -> Period:
    start = datetime(year, month, day, tzinfo=UTC)
    return Period(start, start + timedelta(days=1))


def _months(year: int, month: int, count: int) -> Period:
    """`count` months from `month` of `year` (December + 3 runs into the next year)."""
    start = datetime(year, month, 1, tzinfo=UTC)
    end_year, end_month = year + (month - 1 + count) // 12, (month - 1 + count) % 12 + 1
    return Period(start, datetime(end_year, end_month, 1, tzinfo=UTC))


def _month_before(year: int, month: int) -> tuple[int, int]:
    return (year - 1, 12) if month == 1 else (year, month - 1)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)

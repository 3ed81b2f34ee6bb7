"""Reading the times a query names (`recall.search.when`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from recall import PostRequest, Recall, World
from recall.search.when import YEARLESS_SPAN, Period, days_apart, named_periods

#: A Wednesday afternoon.
NOW = datetime(2024, 3, 13, 15, 30, tzinfo=UTC)


def _days(query: str) -> list[tuple[str, str]]:
    return [(p.start.date().isoformat(), p.end.date().isoformat()) for p in named_periods(query, NOW)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Audrey eat for dinner on October 24, 2023?", [("2023-10-24", "2023-10-25")]),
        ("What inspired her screenplay on 25 February, 2022?", [("2022-02-25", "2022-02-26")]),
        ("on the 3rd of June 2021", [("2021-06-03", "2021-06-04")]),
        ("Sept. 9 2020", [("2020-09-09", "2020-09-10")]),
        ("the log of 2023-05-08", [("2023-05-08", "2023-05-09")]),
        ("Which hobby did Dave pick up in October 2023?", [("2023-10-01", "2023-11-01")]),
        ("in the beginning of January 2023", [("2023-01-01", "2023-02-01")]),
        ("towards the end of summer 2023", [("2023-06-01", "2023-09-01")]),
        ("winter 2022", [("2022-12-01", "2023-03-01")]),
        ("What changed in 2022?", [("2022-01-01", "2023-01-01")]),
        ("yesterday", [("2024-03-12", "2024-03-13")]),
        ("what did I say last night", [("2024-03-12", "2024-03-13")]),
        ("the day before yesterday", [("2024-03-11", "2024-03-12")]),
        ("this morning", [("2024-03-13", "2024-03-14")]),
        ("last week", [("2024-03-04", "2024-03-11")]),
        ("this week", [("2024-03-11", "2024-03-18")]),
        ("last weekend", [("2024-03-09", "2024-03-11")]),
        ("last Tuesday", [("2024-03-12", "2024-03-13")]),
        ("on Wednesday", [("2024-03-06", "2024-03-07")]),  # today is Wednesday: the one before
        ("last month", [("2024-02-01", "2024-03-01")]),
        ("this year", [("2024-01-01", "2025-01-01")]),
        ("last year", [("2023-01-01", "2024-01-01")]),
        ("last summer", [("2023-06-01", "2023-09-01")]),
        ("three days ago", [("2024-03-09", "2024-03-12")]),
        ("a couple of weeks ago", [("2024-02-25", "2024-03-03")]),
        ("2 months ago", [("2023-12-29", "2024-01-29")]),  # give or take half a month
        ("What did Maria plan for the weekend?", []),
        ("you may want to call", []),
        ("5 may be too many", []),
        ("I scored 2023 points", []),
        ("", []),
    ],
)
def test_periods(query: str, expected: list[tuple[str, str]]) -> None:
    assert _days(query) == expected


def test_a_day_or_month_without_a_year_is_looked_for_in_every_recent_year() -> None:
    july = named_periods("When did Melanie go camping in July?", NOW)
    assert len(july) == YEARLESS_SPAN
    assert {(p.start.month, p.end.month) for p in july} == {(7, 8)}
    assert max(p.start.year for p in july) == 2024
    days = named_periods("What happened May 8th?", NOW)
    assert {(p.start.month, p.start.day) for p in days} == {(5, 8)} and len(days) == YEARLESS_SPAN


def test_two_times_in_one_query_are_both_read() -> None:
    assert _days("between May 2023 and July 2023") == [("2023-05-01", "2023-06-01"), ("2023-07-01", "2023-08-01")]


def test_a_day_that_does_not_exist_is_not_read_as_a_day() -> None:
    for query in ("on February 30, 2023", "on 45 May, 2023"):
        assert all((p.end - p.start).days > 1 for p in named_periods(query, NOW)), query


def test_now_defaults_to_the_current_time() -> None:
    today = datetime.now(UTC).date()
    (period,) = named_periods("today")
    assert period.start.date() == today


def test_days_apart() -> None:
    may_8 = Period(datetime(2023, 5, 8, tzinfo=UTC), datetime(2023, 5, 9, tzinfo=UTC))
    moments = [
        datetime(2023, 5, 8, 12, tzinfo=UTC).timestamp(),  # inside
        datetime(2023, 5, 6, tzinfo=UTC).timestamp(),  # two days before
        datetime(2023, 5, 9, tzinfo=UTC).timestamp(),  # the end is not inside
    ]
    apart = days_apart(moments, [may_8])
    assert apart is not None
    assert apart[0] == 0.0 and apart[1] == pytest.approx(2.0) and 0 < apart[2] < 1e-4
    later = Period(datetime(2023, 5, 10, tzinfo=UTC), datetime(2023, 5, 11, tzinfo=UTC))
    nearest = days_apart(moments, [later, may_8])
    assert nearest is not None and np.allclose(nearest, apart)
    assert days_apart(moments, []) is None


def test_a_search_favours_the_day_its_query_names(mem: Recall, world: World) -> None:
    """Through the Python API, on the real index: three messages alike in words, one said on
    the Tuesday the query means (relative to `now`), one on the day it names outright."""
    tuesday = datetime(2024, 3, 12, 19, tzinfo=UTC)
    world.import_messages(
        [
            PostRequest("maria", "I cooked a mushroom risotto for dinner", created_at=datetime(2024, 2, 1, tzinfo=UTC)),
            PostRequest("maria", "I cooked a mushroom risotto for dinner", created_at=tuesday),
            PostRequest("maria", "I cooked a mushroom risotto for dinner", created_at=datetime(2023, 8, 5, tzinfo=UTC)),
        ]
    )
    mem.refresh_index()
    by_day = {m.id: m.created_at.date().isoformat() for m in world.messages()}

    def top(query: str, **options: Any) -> str:
        return by_day[world.search(query, kinds=("message",), **options)[0].source_id]

    assert top("what did maria cook for dinner last Tuesday?", now=NOW) == "2024-03-12"
    assert top("what did maria cook for dinner on August 5, 2023?") == "2023-08-05"
    assert top("what did maria cook for dinner in February?", now=NOW) == "2024-02-01"


def test_what_is_read_for_times_is_bounded() -> None:
    """Issue 23: a message of 100,000 characters of `jan 1 ` made thousands of periods (and a
    candidates × periods matrix). Only the opening MAX_TIME_TEXT characters are read, each
    period counts once, and at most MAX_PERIODS are kept."""
    from recall.search.when import MAX_PERIODS, MAX_TIME_TEXT

    flood = named_periods("jan 1 " * 20_000, NOW)
    assert len(flood) == len(set(flood)) == YEARLESS_SPAN  # thirty January firsts, once each
    many = " ".join(f"{month} {day}" for month in ("jan", "feb", "mar", "apr", "jun", "jul") for day in range(1, 28))
    assert len(named_periods(many, NOW)) == MAX_PERIODS
    late = "x" * MAX_TIME_TEXT + " on 2023-05-08"
    assert named_periods(late, NOW) == []
    assert _days("y" * (MAX_TIME_TEXT - 20) + " on 2023-05-08") == [("2023-05-08", "2023-05-09")]


def test_a_search_query_has_a_documented_length_cap(world: World) -> None:
    from recall import InvalidInputError
    from recall.search.checks import MAX_QUERY_CHARS

    with pytest.raises(InvalidInputError, match=f"query.*{MAX_QUERY_CHARS:,}"):
        world.search("jan 1 " * (MAX_QUERY_CHARS // 6 + 1))
    assert world.search("jan 1 " * (MAX_QUERY_CHARS // 6 - 1)) == []

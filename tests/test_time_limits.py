"""Issue 23, points 7 and 11: impossible and edge times are refused on every way in (a post, an
import, a search's `now`), naming the field or the line, and never poison a world: every read of
it still answers. Both stores."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from recall import InvalidInputError, Recall, Settings, World
from recall.limits import MAX_TIME, MIN_TIME

QUICK = Settings(index_interval=0, embeddings="none")


@pytest.fixture
def mem(open_on_store: Callable[[Settings], Recall]) -> Recall:
    return open_on_store(QUICK)


@pytest.fixture
def world(mem: Recall) -> World:
    w = mem.world("w", create=True)
    w.add_human("maria")
    w.add_agent("desk")
    return w


def reads_still_answer(mem: Recall, world: World) -> None:
    desk = world.agent("desk")
    world.messages()
    desk.context()
    desk.inbox()
    world.search("parcel", method="bm25")
    mem.refresh_index()


@pytest.mark.parametrize(
    "when",
    [
        "9999-12-31T23:00:00-05:00",  # the year 10000 in UTC
        "0001-01-01T00:30:00+01:00",  # before the year 1 in UTC
        1e18,
        -1e12,
        1e308,
        float("nan"),
        datetime(9999, 12, 31, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=-1))),
    ],
)
def test_a_post_at_an_impossible_time_is_refused(mem: Recall, world: World, when: object) -> None:
    with pytest.raises(InvalidInputError) as raised:
        world.post("maria", "@desk my parcel", at=when)  # type: ignore[arg-type]
    assert raised.value.field == "created_at"
    assert world.messages() == []
    reads_still_answer(mem, world)


def test_times_at_the_edges_of_the_range_are_stored_and_read(mem: Recall, world: World) -> None:
    first = world.post("maria", "@desk the first parcel", at=MIN_TIME)
    last = world.post("maria", "@desk the last parcel", at=MAX_TIME)
    assert [m.created_at for m in world.messages()] == [MIN_TIME, MAX_TIME]
    assert {first.id, last.id} == {m.id for m in world.messages()}
    reads_still_answer(mem, world)
    # Relative times from either edge read nothing past it, and answer.
    for now in (MIN_TIME, MAX_TIME):
        for phrase in ("this year", "3 years ago", "last month", "in July", "9999 years ago", "tomorrow"):
            world.search(f"parcel {phrase}", now=now)


@pytest.mark.parametrize("now", [datetime(9999, 6, 1, tzinfo=UTC), datetime(1, 1, 5, tzinfo=UTC)])
def test_a_search_now_out_of_range_is_refused(world: World, now: datetime) -> None:
    with pytest.raises(InvalidInputError) as raised:
        world.search("what happened this year", now=now)
    assert raised.value.field == "now"


@pytest.mark.parametrize("stored", [1e18, -1e12, 1e308])
def test_an_import_with_an_impossible_time_is_refused_naming_the_line(
    mem: Recall, world: World, tmp_path: Path, stored: float
) -> None:
    world.post("maria", "@desk my parcel", at=datetime(2025, 1, 1, tzinfo=UTC))
    lines = [json.loads(line) for line in _export(world, tmp_path)]
    for record in lines:
        if record.get("record") == "message":
            record["created_at"] = stored
        if record.get("record") == "world":
            record["id"] = "copy"
    with pytest.raises(InvalidInputError) as raised:
        mem.import_world(lines)
    assert raised.value.field.startswith("line ") and raised.value.field.endswith("message.created_at")
    assert [w.id for w in mem.worlds()] == ["w"]


def _export(world: World, tmp_path: Path) -> list[str]:
    path = tmp_path / "w.jsonl"
    world.export_to(path)
    return path.read_text(encoding="utf-8").splitlines()

"""Deleting a message, a fact or a memory takes its text out of every recorded call whose copy
of the messages as sent (`call_copies = "full"`) quoted it, in the same transaction (issue 43,
point 7): readable with the agent's own key before, gone after. Records that did not quote it
keep their copy. Both stores."""

from __future__ import annotations

import zlib
from collections.abc import Callable

import pytest

from recall import Recall, Settings, World
from tests.worlds import query

ADDRESS = "my address is 5 Rue Sala"
TEA = "Maria only drinks green tea"
DOG = "Maria's dog is called Biscuit"


@pytest.fixture
def mem(open_on_store: Callable[[Settings], Recall]) -> Recall:
    return open_on_store(Settings(index_interval=0, call_copies="full"))


@pytest.fixture
def world(mem: Recall) -> World:
    world = mem.world("shop", create=True)
    world.add_human("maria")
    world.add_agent("desk")
    world.add_agent("other")
    return world


def stored_text(mem: Recall, location: str, call_id: str) -> str:
    """A stored record's body as the database holds it, decompressed (once what is queued is written)."""
    mem.service.calls.writer.flush()
    (body,) = query(location, "SELECT body FROM model_calls WHERE id = ?", (call_id,))[0]
    return zlib.decompress(bytes(body)).decode()


def test_deleting_a_message_takes_its_text_out_of_the_calls_that_quoted_it(
    mem: Recall, world: World, store_location: str
) -> None:
    said = world.post("maria", f"@desk {ADDRESS}")
    desk = world.agent("desk")
    quoting = desk.context(message=said, record=True).call_id
    world.post("maria", "@other hello", chat="elsewhere")
    other = world.agent("other").context("elsewhere", record=True).call_id
    assert quoting is not None and other is not None
    assert any(ADDRESS in str(m["content"]) for m in desk.call(quoting).messages or ())
    assert ADDRESS in stored_text(mem, store_location, quoting)

    world.delete_message(said)
    assert desk.call(quoting).messages is None  # the copy went; the items (ids, no text) stay
    assert any(i.kind == "message" and i.id == said.id for i in desk.call(quoting).items)
    assert ADDRESS not in stored_text(mem, store_location, quoting)
    assert world.agent("other").call(other).messages is not None  # it never quoted the message


def test_deleting_a_memory_or_a_fact_takes_its_text_out_of_the_calls(
    mem: Recall, world: World, store_location: str
) -> None:
    tea = world.add_memory(TEA, importance=9)
    dog = world.facts.add(DOG)
    world.post("maria", "@desk what should I bring to the tea party for the dog?")
    desk = world.agent("desk")
    first = desk.context(record=True).call_id
    second = desk.context(record=True).call_id
    assert first is not None and second is not None
    assert TEA in stored_text(mem, store_location, first) and DOG in stored_text(mem, store_location, first)

    world.delete_memory(tea)
    for call_id in (first, second):
        assert desk.call(call_id).messages is None
        assert TEA not in stored_text(mem, store_location, call_id)
    # The next record quotes the fact alone; deleting the fact takes it out of that one too.
    third = desk.context(record=True).call_id
    assert third is not None and DOG in stored_text(mem, store_location, third)
    world.facts.delete(dog.id)
    assert desk.call(third).messages is None
    assert DOG not in stored_text(mem, store_location, third)

"""Erasing a person reaches what extraction learnt from them (issue 23, point 13), on SQLite and
PostgreSQL, with a real local OpenAI-compatible server answering the extractions: the facts read
from their messages go in whatever scope they went, and an extraction that was still waiting
for the model when they were erased stores nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from recall import Recall
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.llm.test_extraction import answer, settings


@pytest.fixture
def mem(store_location: str, model_server: ModelServer) -> Iterator[Recall]:
    with Recall(store_location, settings(model_server)) as recall:
        world = recall.world("shop", create=True)
        world.add_human("maria")
        world.add_human("bob")
        world.add_agent("helper")
        world.post("maria", "Hi! I just moved to Lisbon and I only drink green tea.", chat="maria")
        world.post("helper", "Welcome to Lisbon, Maria! Noted: green tea.", chat="maria")
        world.post("bob", "I am Bob, I collect stamps.", chat="bob")
        yield recall


def contents(recall: Recall, scope: str) -> list[str]:
    return sorted(f.content for f in recall.scope(scope).list())


def test_erasing_a_person_removes_what_was_learnt_from_them_in_every_scope(
    mem: Recall, model_server: ModelServer
) -> None:
    shop = mem.world("shop")
    model_server.script(
        answer(("A customer moved to Lisbon", "context", 0.95)),  # maria's chat, into the world's scope
        answer(("A customer collects stamps", "context", 0.95)),  # bob's chat, same scope
        answer(("Drinks only green tea", "preference", 0.9)),  # maria's chat, her own scope
    )
    assert shop.agent("helper").extract(chat="maria", scope="world:shop")["queued"]
    assert mem.flush_extraction() == 1
    assert shop.agent("helper").extract(chat="bob", scope="world:shop")["queued"]
    assert mem.flush_extraction() == 1
    assert shop.agent("helper").extract(chat="maria")["scope"] == "user:maria"
    assert mem.flush_extraction() == 1
    mem.scope("world:shop").add("The shop opens at nine")  # by hand: no messages behind it
    assert contents(mem, "world:shop") == [
        "A customer collects stamps",
        "A customer moved to Lisbon",
        "The shop opens at nine",
    ]
    assert [h.text for h in shop.search("Lisbon", method="bm25", kinds=("fact",))] == ["A customer moved to Lisbon"]

    removed = shop.delete_human("maria", erase=True)

    assert removed["facts"] == 2  # her own scope's, and the one the world's scope learnt from her
    assert contents(mem, "world:shop") == ["A customer collects stamps", "The shop opens at nine"]
    assert contents(mem, "user:maria") == []
    assert shop.search("Lisbon", method="bm25", kinds=("fact",)) == []
    # Without erase, a person's leaving takes nothing learnt.
    shop.delete_human("bob")
    assert contents(mem, "world:shop") == ["A customer collects stamps", "The shop opens at nine"]


def test_an_extraction_waiting_for_the_model_when_its_person_is_erased_stores_nothing(
    mem: Recall, model_server: ModelServer, store_location: str
) -> None:
    shop = mem.world("shop")
    other = Recall(store_location, settings(model_server))  # another process: no lock shared with this one
    try:

        def erase_then_answer(path: str, body: dict[str, Any]) -> str:
            # The model "takes its time": the person is erased before its answer is stored.
            other.world("shop").delete_human("maria", erase=True)
            return answer(("A customer moved to Lisbon", "context", 0.95), sections={"top_of_mind": "Lisbon"})

        model_server.responder = erase_then_answer
        assert shop.agent("helper").extract(chat="maria", scope="world:shop")["queued"]
        runs = mem.service.extraction.run_extraction()
    finally:
        other.close()
    assert [run.error for run in runs] == ["a message it read was deleted meanwhile; nothing stored"]
    assert contents(mem, "world:shop") == [] and mem.scope("world:shop").sections == {}
    assert shop.search("Lisbon", method="bm25", kinds=("fact",)) == []

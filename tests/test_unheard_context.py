"""An unheard turn never shapes an agent's ranking (issue 43, point 14): a message's words count
with those of the turn before it only where everyone who heard it heard that turn too. Else an
agent that joined later, or one that never got another's tool result, could test guesses about
what it never heard by what its searches rank. Both stores, the Python API (REST and MCP share
the same search)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recall import Recall, Settings

QUICK = Settings(index_interval=0, embeddings="none")


@pytest.fixture
def mem(open_on_store: Callable[[Settings], Recall]) -> Recall:
    return open_on_store(QUICK)


def texts(mem: Recall, agent: str, query: str) -> list[str]:
    mem.refresh_index()
    return [hit.text for hit in mem.world("w").agent(agent).search(query, k=10, kinds=("message",))]


def test_a_late_joiner_cannot_rank_by_what_was_said_before_it_joined(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("a")
    world.post("maria", "the launch code is swordfish")
    world.add_agent("b")
    world.post("maria", "ok, noted")
    world.post("maria", "lunch at noon?")
    world.post("maria", "the weather is fine")  # its turn before was heard by both: context kept
    assert texts(mem, "b", "swordfish launch code") == []
    assert texts(mem, "a", "swordfish launch code") == ["maria: the launch code is swordfish"]
    # Where everyone heard the turn before, it still helps: an answer is found by its question.
    assert texts(mem, "b", "lunch noon")[0] == "maria: lunch at noon?"
    assert "maria: the weather is fine" in texts(mem, "b", "lunch noon")


def test_no_one_ranks_by_another_agents_tool_result(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("a")
    world.add_agent("b")
    world.agent("a").post_tool_result("the vault code is 7781", call_id="call_1")
    world.post("maria", "thanks, all done")
    assert texts(mem, "b", "vault code 7781") == []
    assert texts(mem, "a", "vault code 7781") == ["system: the vault code is 7781"]

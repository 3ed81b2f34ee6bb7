"""Issue point 8: the adapters refuse a world, agent or human that does not exist, saying which
ids are close, instead of making a new one with an empty history; `create=True` makes it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from recall import InvalidInputError, NotFoundError, Recall, World
from recall.errors import UnknownParticipantError, UnknownWorldError
from recall.integrations._common import UnknownParticipantNameError, UnknownWorldNameError
from recall.integrations.langchain import RecallChatMessageHistory
from recall.integrations.langchain_context import RecallContext
from recall.integrations.langchain_tools import recall_tools
from recall.integrations.langgraph import RecallStore
from recall.integrations.langgraph_context import RecallContextNode
from recall.integrations.openai_agents import RecallSession

#: Each adapter, made from the names a caller typed (a human only where the adapter takes one).
Make = Callable[..., Any]
ADAPTERS: dict[str, Make] = {
    "langgraph": lambda mem, world, agent, human="human", **kw: RecallStore(mem, world=world, agent=agent, **kw),
    "langchain": lambda mem, world, agent, human="human", **kw: RecallChatMessageHistory(
        mem, world=world, agent=agent, human=human, **kw
    ),
    "openai_agents": lambda mem, world, agent, human="human", **kw: RecallSession(
        mem, session_id="s1", world=world, agent=agent, human=human, **kw
    ),
    "langchain_context": lambda mem, world, agent, human="human", **kw: RecallContext(
        mem, world=world, agent=agent, human=human, **kw
    ),
    "langgraph_context": lambda mem, world, agent, human="human", **kw: RecallContextNode(
        mem, world=world, agent=agent, human=human, **kw
    ),
    "langchain_tools": lambda mem, world, agent, human="human", **kw: recall_tools(mem, world=world, agent=agent, **kw),
}
#: The adapters that take a human.
WITH_HUMAN = ["langchain", "openai_agents", "langchain_context", "langgraph_context"]


@pytest.fixture
def shop(mem: Recall) -> World:
    """World `shop`: agent `helper`, human `maria`."""
    w = mem.world("shop", create=True)
    w.add_agent("helper")
    w.add_human("maria")
    return w


def state(mem: Recall) -> dict[str, list[tuple[str, str]]]:
    """Every world and its participants: what a refused adapter must not have changed."""
    return {w.id: sorted((p.id, p.kind) for p in w.participants()) for w in mem.worlds()}


@pytest.mark.parametrize("make", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_a_misspelt_world_is_refused_with_the_close_ids(mem: Recall, shop: World, make: Make) -> None:
    before = state(mem)
    with pytest.raises(UnknownWorldError) as refused:
        make(mem, "shpo", "helper")
    message = str(refused.value)
    assert "unknown world 'shpo'" in message and "did you mean 'shop'?" in message and "create=True" in message
    assert isinstance(refused.value, UnknownWorldNameError) and refused.value.suggestions == ["shop"]
    assert isinstance(refused.value, NotFoundError)
    assert state(mem) == before  # no world "shpo"


@pytest.mark.parametrize("make", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_a_misspelt_agent_is_refused_with_the_close_ids(mem: Recall, shop: World, make: Make) -> None:
    before = state(mem)
    for world in ("shop", shop):
        with pytest.raises(UnknownParticipantError) as refused:
            make(mem, world, "hepler")
        message = str(refused.value)
        assert "unknown agent 'hepler' in world 'shop'" in message and "did you mean 'helper'?" in message
        assert "create=True registers 'hepler' as an agent" in message
        assert isinstance(refused.value, UnknownParticipantNameError) and refused.value.suggestions == ["helper"]
    # Nothing close: the error lists the agents there are.
    with pytest.raises(UnknownParticipantError, match="the agents are 'helper'"):
        make(mem, shop, "zz-top")
    assert state(mem) == before


@pytest.mark.parametrize("make", [ADAPTERS[name] for name in WITH_HUMAN], ids=WITH_HUMAN)
def test_a_misspelt_human_is_refused_with_the_close_ids(mem: Recall, shop: World, make: Make) -> None:
    before = state(mem)
    with pytest.raises(UnknownParticipantError) as refused:
        make(mem, "shop", "helper", human="maira")
    message = str(refused.value)
    assert "unknown human 'maira' in world 'shop'" in message and "did you mean 'maria'?" in message
    assert "create=True registers 'maira' as a human" in message
    # The humans every world has need no registering.
    for anonymous in ("human", "user", "You"):
        make(mem, "shop", "helper", human=anonymous)
    # An agent is not a human.
    with pytest.raises(InvalidInputError, match="'helper' is an agent of world 'shop', not a human"):
        make(mem, "shop", "helper", human="helper")
    with pytest.raises(InvalidInputError, match="reserved sender name"):
        make(mem, "shop", "helper", human="system")
    assert state(mem) == before


@pytest.mark.parametrize("make", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_a_human_or_a_reserved_name_as_the_agent_is_refused(mem: Recall, shop: World, make: Make) -> None:
    before = state(mem)
    with pytest.raises(InvalidInputError) as refused:
        make(mem, "shop", "Maria")
    assert "'Maria' is a human of world 'shop', not an agent: the agents are 'helper'" in str(refused.value)
    for reserved in ("human", "system"):
        with pytest.raises(InvalidInputError, match="reserved sender name"):
            make(mem, "shop", reserved)
    assert state(mem) == before


@pytest.mark.parametrize("make", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_create_makes_what_is_missing(mem: Recall, shop: World, make: Make) -> None:
    make(mem, "new-shop", "new-helper", human="tom", create=True)
    made = state(mem)["new-shop"]
    assert ("new-helper", "agent") in made
    # Existing names are used as they are, in any case, with or without create.
    make(mem, "SHOP", "Helper", human="maria", create=True)
    make(mem, "shop", "HELPER", human="MARIA")
    assert state(mem)["shop"] == [("helper", "agent"), ("maria", "human")]


def test_an_adapter_reads_the_history_of_the_names_it_was_given(mem: Recall, shop: World) -> None:
    """What the issue saw: a misspelt name read an empty history of a new agent. Spelt right, the
    adapters read what is there."""
    RecallChatMessageHistory(mem, world="shop", agent="helper", human="maria", chat="c").add_messages(
        [HumanMessage("where is my parcel?")]
    )
    assert [m.content for m in RecallChatMessageHistory(mem, world="shop", agent="helper", chat="c").messages] == [
        "where is my parcel?"
    ]
    session = RecallSession(mem, session_id="c2", world="shop", agent="helper", human="maria")
    asyncio.run(session.add_items([{"role": "user", "content": "hello"}]))
    assert [m.sender for m in shop.messages("c2")] == ["maria"]

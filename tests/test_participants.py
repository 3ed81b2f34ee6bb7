"""Participants that can change: list agents and humans, read and update an agent's profile,
and register again without an error (`exist_ok`), on both stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from recall import Recall, Settings
from recall.errors import ConflictError, InvalidInputError, UnknownParticipantError


@pytest.fixture
def mem(store_location: str) -> Iterator[Recall]:
    with Recall(store_location, settings=Settings(embeddings="none", index_interval=0)) as recall:
        yield recall


def test_list_agents_and_humans(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_agent("scribe", system_prompt="You take notes.")
    world.add_agent("Helper", system_prompt="You help.", channel="sms")
    world.add_human("maria")
    assert [a.id for a in world.agents()] == ["Helper", "scribe"]
    assert world.agents()[0].profile.channel == "sms"
    assert [h.id for h in world.humans()] == ["maria"]
    assert mem.world("w").agent("helper").id == "Helper"  # any case finds it


def test_update_changes_only_the_settings_given(mem: Recall, store_location: str) -> None:
    world = mem.world("w", create=True)
    agent = world.add_agent("helper", system_prompt="You help.", goals=["be brief"], history_limit=20)
    updated = agent.update(system_prompt="You help with parcels.", model="gpt-4o")
    assert updated.system_prompt == "You help with parcels." and updated.model == "gpt-4o"
    assert updated.goals == ("be brief",) and updated.history_limit == 20  # untouched
    # What was stored, read back by another process's view of the store.
    with Recall(store_location, settings=Settings(embeddings="none", index_interval=0)) as other:
        assert other.world("w").agent("helper").profile == updated
    assert "You help with parcels." in world.agent("helper").system_prompt()
    # None puts a setting back to its default.
    assert agent.update(history_limit=None, model=None).history_limit is None
    assert agent.profile.model is None and agent.profile.goals == ("be brief",)


def test_a_bad_update_says_what_is_wrong_and_changes_nothing(mem: Recall) -> None:
    world = mem.world("w", create=True)
    agent = world.add_agent("helper", system_prompt="You help.")
    before = agent.profile
    with pytest.raises(InvalidInputError, match="colour"):
        agent.update(colour="blue")
    with pytest.raises(InvalidInputError, match="context_filter"):
        agent.update(system_prompt="changed", context_filter="some")
    with pytest.raises(InvalidInputError, match="history_limit"):
        agent.update(history_limit=-1)
    assert agent.profile == before
    with pytest.raises(UnknownParticipantError):
        world.agent("ghost")
    world.add_human("maria")
    with pytest.raises(UnknownParticipantError):
        world.service.worlds.update_agent(world.key, "maria", system_prompt="x")  # a human has no profile


def test_exist_ok_lets_a_script_run_again(mem: Recall) -> None:
    world = mem.world("w", create=True)
    first = world.add_agent("helper", system_prompt="You help.")
    with pytest.raises(ConflictError, match="already exists"):
        world.add_agent("helper")
    again = world.add_agent("helper", system_prompt="Something else", exist_ok=True)
    assert again.id == first.id and again.profile.system_prompt == "You help."  # left as it was
    assert world.add_human("maria").id == world.add_human("maria", exist_ok=True).id
    assert [h.id for h in world.humans()] == ["maria"] and len(world.agents()) == 1
    # exist_ok never turns a human into an agent, or the other way round.
    with pytest.raises(ConflictError, match="human 'maria'"):
        world.add_agent("maria", exist_ok=True)
    with pytest.raises(ConflictError, match="agent 'helper'"):
        world.add_human("helper", exist_ok=True)


def test_a_conflict_says_how_a_script_runs_again(mem: Recall) -> None:
    """The README's first snippet run a second time: the error names the way out (issue 44)."""
    world = mem.world("w", create=True)
    world.add_agent("helper")
    with pytest.raises(ConflictError, match=r"agent 'helper' already exists in world 'w': pass exist_ok=True"):
        world.add_agent("helper")
    world.add_human("maria")
    with pytest.raises(ConflictError, match="exist_ok=True"):
        world.add_human("maria")
    # Where exist_ok would not help (a human of that id), the error does not suggest it.
    with pytest.raises(ConflictError, match="human 'maria' already exists") as taken:
        world.add_agent("maria")
    assert "exist_ok" not in str(taken.value) and "another id" in str(taken.value)
    with pytest.raises(ConflictError, match=r"world 'w' already exists: to use it, open it \(Recall.world\('w'"):
        mem.create_world("w")

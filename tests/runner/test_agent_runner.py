"""One runner driven step by step against a real local model server: tool calls and their
results kept in the history, model errors answered with an apology, world tags, extraction
after each run, and a loop that outlives failures."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recall import Recall, Settings, World
from recall.llm import OpenAICompatibleModel
from recall.runner.agent_runner import APOLOGY, AgentRunner, tool_function
from recall.runner.backend import LocalBackend
from tests.llm.model_server import (  # noqa: F401  (the model_server fixture)
    ModelServer,
    ScriptedReply,
    model_server_fixture,
)

CHAT = "/v1/chat/completions"


def get_weather(city: str) -> dict[str, Any]:
    if city == "Atlantis":
        raise LookupError("no such city")
    return {"city": city, "temp": 21}


WEATHER = tool_function(
    get_weather,
    "The current weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with Recall(tmp_path / "r.db", Settings(embeddings="none", index_interval=0)) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper", system_prompt="You are helper.")
        world.add_agent("other", system_prompt="You are other.")
        yield world


def runner(world: World, server: ModelServer, **options: Any) -> AgentRunner:
    model = OpenAICompatibleModel("test-model", base_url=server.openai_url, max_retries=0)
    return AgentRunner(LocalBackend(world.agent("helper")), model, **options)


def contents(world: World) -> list[tuple[str, str]]:
    return [(m.sender, m.content) for m in world.messages()]


def test_tool_calls_run_and_stay_in_the_history(world: World, model_server: ModelServer) -> None:
    helper = runner(world, model_server, tools=[WEATHER])
    model_server.script(
        ScriptedReply(tool_calls=(("get_weather", {"city": "Lisbon"}), ("get_weather", {"city": "Atlantis"}))),
        "Lisbon: 21 degrees. I could not find Atlantis.",
    )
    asked = world.post("maria", "@helper weather in Lisbon and Atlantis?")
    assert helper.step() == 1
    first, second = model_server.bodies(CHAT)
    assert first["tools"] == [WEATHER.tool.openai()]
    calls = second["messages"][-3]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_weather"]
    assert second["messages"][-2:] == [
        {"role": "tool", "content": '{"city": "Lisbon", "temp": 21}', "tool_call_id": calls[0]["id"]},
        {"role": "tool", "content": "error: LookupError: no such city", "tool_call_id": calls[1]["id"]},
    ]
    stored = world.messages()
    assert [m.sender for m in stored] == ["maria", "helper", "system", "system", "helper"]
    assert all(m.parent_id == asked.id for m in stored[1:])
    assert stored[1].content == "" and stored[1].metadata["tool_calls"] == calls
    assert stored[2].metadata["tool_result_for"] == "helper"
    assert helper.stats.tool_calls == 2 and helper.stats.model_calls == 2
    assert world.agent("helper").service.agent_state.turn_count("w", "helper") == 2  # each model call counts

    # The next context shows the whole round trip in the agent's history.
    world.post("maria", "@helper and tomorrow?")
    model_server.script("Also sunny.")
    helper.step()
    history = model_server.bodies(CHAT)[2]["messages"]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    assert history[2]["tool_calls"] == calls
    # Other agents do not see the tool traffic in their context.
    other = world.agent("other").context(message=world.messages()[-1].id).openai()
    assert not any(m.get("tool_calls") or m["role"] == "tool" for m in other)


def test_a_model_error_is_logged_and_counted_and_the_world_hears_nothing(
    world: World, model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    helper = runner(world, model_server)
    model_server.script(500)
    world.post("maria", "@helper are you there?")
    with caplog.at_level(logging.WARNING, logger="recall.runner"):
        assert helper.step() == 0
    assert contents(world)[-1] == ("maria", "@helper are you there?")
    assert helper.stats.model_errors == 1
    assert "model failed" in caplog.text and "HTTP 500" in caplog.text
    assert APOLOGY not in caplog.text


def test_world_tags_and_post_processing(world: World, model_server: ModelServer) -> None:
    helper = runner(world, model_server)
    model_server.script("<world>PASS</world>", "@helper Done here. <world>DONE</world>")
    world.post("maria", "@helper ping")
    assert helper.step() == 0  # PASS: nothing posted
    world.post("other", "@helper ping")
    assert helper.step() == 1
    assert contents(world)[-1] == ("helper", "Done here.")  # no own mention, no auto-mention


def test_one_answer_per_chat_to_the_newest_message(world: World, model_server: ModelServer) -> None:
    helper = runner(world, model_server)
    world.post("maria", "@helper first question")
    world.post("maria", "@helper second question")
    world.post("maria", "@helper in the other chat", chat="side")
    model_server.script("both answered", "side answered")
    assert helper.step() == 2
    first, second = model_server.bodies(CHAT)
    assert [m["content"] for m in first["messages"][1:]] == ["@helper first question", "@helper second question"]
    assert [m["content"] for m in second["messages"][1:]] == ["@helper in the other chat"]
    assert [(m.chat_id, m.parent_id) for m in world.messages(all_chats=True) if m.sender == "helper"] == [
        (None, 2),
        ("side", 3),
    ]
    assert world.agent("helper").inbox() == []  # all read


def test_extraction_is_queued_after_each_answer(tmp_path: Path, model_server: ModelServer) -> None:
    settings = Settings(
        embeddings="none",
        index_interval=0,
        llm_provider="openai",
        llm_model="test-model",
        llm_base_url=model_server.openai_url,
        extraction_debounce=3600.0,
    )
    with Recall(tmp_path / "r.db", settings) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper", system_prompt="You are helper.")
        helper = AgentRunner(
            LocalBackend(world.agent("helper")),
            OpenAICompatibleModel("test-model", base_url=model_server.openai_url, max_retries=0),
        )
        world.post("maria", "@helper I live in Porto.")
        facts = {"sections": {}, "new_facts": [{"content": "Lives in Porto", "category": "context", "confidence": 0.9}]}
        model_server.script("Noted, Porto!", json.dumps(facts))
        helper.step()
        assert mem.flush_extraction() == 1
        assert [f.content for f in mem.scope("user:maria").list()] == ["Lives in Porto"]


def test_the_loop_outlives_a_failing_step(world: World, model_server: ModelServer) -> None:
    helper = runner(world, model_server)
    calls = {"n": 0}
    real = helper.backend.next_messages

    def flaky(timeout: float) -> list[Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("server restarting")
        return real(timeout)

    helper.backend.next_messages = flaky  # type: ignore[method-assign]
    model_server.script("still here")
    world.post("maria", "@helper hello?")
    stop = threading.Event()
    thread = threading.Thread(target=helper.run, args=(stop, 0.1))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("recall.runner.agent_runner.ERROR_PAUSE", 0.05)
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while contents(world)[-1] != ("helper", "still here"):
                assert time.monotonic() < deadline
                stop.wait(0.02)
        finally:
            stop.set()
            thread.join(timeout=5)
    assert helper.stats.errors == 1


def test_each_model_call_is_recorded_with_what_the_model_was_sent(world: World, model_server: ModelServer) -> None:
    helper = runner(world, model_server)
    asked = world.post("maria", "@helper is the shop open on Sunday?")
    model_server.script("Yes, from ten.")
    assert helper.step() == 1
    (call,) = world.agent("helper").calls()
    assert (call.source, call.trigger_id) == ("runner", asked.id)
    sent = model_server.bodies(CHAT)[0]["messages"]
    replay = world.agent("helper").replay(call.id)
    assert replay.identical and replay.context is not None and replay.context.openai() == sent

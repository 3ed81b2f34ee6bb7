"""A runner tells recall which model it calls: each context is built and recorded for that model
and fits its window (given, known, or a safe default), and a model that fails leaves the messages
it did not answer unread, to be listed and tried again. In-process and over a real recall server,
against the scripted OpenAI-compatible model server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recall import Recall, Settings, World
from recall.errors import InvalidInputError
from recall.llm import OpenAICompatibleModel
from recall.llm.factory import agent_model
from recall.llm.scripted_server import Reply
from recall.llm.windows import DEFAULT_WINDOW, OLLAMA_WINDOW, model_window
from recall.runner.agent_runner import AgentRunner, tool_function
from recall.runner.backend import HttpBackend, LocalBackend, RunnerBackend
from recall.server.config import ServerConfig
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.server.conftest import start_server, stop_server

SETTINGS = Settings(embeddings="none", index_interval=0)


@pytest.fixture(params=["local", "http"])
def connected(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[World, RunnerBackend]]:
    """A world with maria and helper, and helper's backend: in this process or over HTTP."""
    if request.param == "local":
        with Recall(tmp_path / "r.db", SETTINGS) as mem:
            world = mem.world("w", create=True)
            world.add_human("maria")
            world.add_agent("helper", system_prompt="You are helper.")
            yield world, LocalBackend(world.agent("helper"))
        return
    live = start_server(tmp_path / "r.db", ServerConfig(rate_limit=0), SETTINGS)
    backend = HttpBackend(live.url, "w", "helper")
    try:
        world = live.mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper", system_prompt="You are helper.")
        yield world, backend
    finally:
        backend.close()
        stop_server(live)


def model(server: ModelServer, name: str = "my-local-model") -> OpenAICompatibleModel:
    return OpenAICompatibleModel(name, base_url=server.openai_url, max_retries=0)


def test_the_window_of_known_unknown_and_ollama_models() -> None:
    assert model_window("openai:gpt-4o-mini") == 128_000
    assert model_window("openai/gpt-4") == 8_192 and model_window("openai:gpt-4.1-mini") == 1_047_576
    assert model_window("anthropic:claude-sonnet-4-5") == 200_000
    # Served by Ollama: Ollama's context length, whatever the model's own window.
    assert model_window("ollama:llama3.1:8b") == OLLAMA_WINDOW == 4_096
    assert model_window("openai:my-finetune") == model_window("mistral-small") == DEFAULT_WINDOW == 8_192
    assert agent_model("ollama/llama3.2").name == "ollama:llama3.2"


def test_each_context_is_built_and_recorded_for_the_runners_model_and_window(
    connected: tuple[World, RunnerBackend], model_server: ModelServer
) -> None:
    world, backend = connected
    helper = world.agent("helper")
    runner = AgentRunner(backend, model(model_server))  # a model recall has no window for
    model_server.script("Hello!", "Hi again.", "Still here.")
    world.post("maria", "@helper hi")
    assert runner.step(timeout=5) == 1
    (call,) = helper.calls()
    assert call.model == "openai/my-local-model"
    assert call.settings["budget"] == DEFAULT_WINDOW - 1024  # the reply's tokens come out of the window
    assert call.settings["explicit"] == {"model": "openai/my-local-model", "max_tokens": DEFAULT_WINDOW - 1024}

    # A window given (recall agent run --max-context), and the agent's own smaller budget.
    runner = AgentRunner(backend, model(model_server), max_tokens=500, context_window=3_000)
    world.post("maria", "@helper and now?")
    assert runner.step(timeout=5) == 1
    assert helper.calls()[0].settings["budget"] == 2_500
    helper.update(max_tokens=1_200)
    world.post("maria", "@helper once more")
    assert runner.step(timeout=5) == 1
    latest = helper.calls()[0]
    assert latest.settings["budget"] == 1_200 and latest.model == "openai/my-local-model"
    replay = helper.replay(latest.id)  # rebuilt for the same model and budget
    assert replay.identical


def test_tool_definitions_come_out_of_the_budget_and_a_window_too_small_is_refused(
    connected: tuple[World, RunnerBackend], model_server: ModelServer
) -> None:
    _, backend = connected
    tool = tool_function(lambda: "ok", "A tool.")
    with_tools = AgentRunner(backend, model(model_server), tools=[tool], context_window=4_000)
    assert 0 < 4_000 - 1024 - with_tools.context_budget < 100
    with pytest.raises(InvalidInputError, match="leave no room"):
        AgentRunner(backend, model(model_server), max_tokens=2_000, context_window=2_000)


def answered(world: World) -> list[str]:
    return [m.content for m in world.messages(all_chats=True) if m.sender == "helper"]


def test_messages_a_failing_model_left_unanswered_stay_unread_and_are_answered_when_it_is_back(
    connected: tuple[World, RunnerBackend], model_server: ModelServer
) -> None:
    world, backend = connected
    helper = world.agent("helper")
    runner = AgentRunner(backend, model(model_server))
    model_server.responder = lambda path, body: 503
    world.post("maria", "@helper where is my parcel?")
    world.post("maria", "@helper the invoice too", chat="billing")
    assert runner.step(timeout=5) == 0
    # One model call failed; the other chat was not sent to a model that had just failed.
    assert runner.stats.model_errors == 1 and len(model_server.bodies("/v1/chat/completions")) == 1
    assert runner.retry_pause > 0
    unread = [m.content for m in helper.inbox()]
    assert unread == ["@helper where is my parcel?", "@helper the invoice too"]
    assert runner.step() == 0 and runner.retry_pause == 4.0  # still down: the pause doubles

    model_server.responder = lambda path, body: "Answered."
    assert runner.step() == 2
    assert answered(world) == ["Answered.", "Answered."] and helper.inbox() == []
    assert runner.retry_pause == 0.0


def test_an_outage_spends_no_turns_and_a_refused_request_is_not_retried(
    connected: tuple[World, RunnerBackend], model_server: ModelServer
) -> None:
    world, backend = connected
    world.add_agent("other")
    helper = world.agent("helper")
    runner = AgentRunner(backend, model(model_server))
    model_server.responder = lambda path, body: 503
    world.post("other", "@helper ping")  # an agent's message: it does not reset the turn counter
    for _ in range(6):  # more failures than the turn limit (5)
        runner.step()
    assert helper.service.agent_state.turn_count("w", "helper") == 0
    model_server.responder = lambda path, body: "pong"
    assert runner.step() == 1 and answered(world) == ["@other pong"]

    # A request the model refuses as such would be refused again: read, logged, not retried.
    script: list[Reply] = [(400, "context too long")]
    model_server.responder = lambda path, body: script.pop() if script else "never sent"
    world.post("maria", "@helper a very long question")
    assert runner.step() == 0
    assert helper.inbox() == [] and runner.retry_pause == 0.0
    assert runner.stats.model_errors == 7


def test_the_context_api_takes_the_model_a_context_is_for(tmp_path: Path) -> None:
    """What the runner sends over REST (`model`), and the service's check of it."""
    live = start_server(tmp_path / "r.db", ServerConfig(rate_limit=0), SETTINGS)
    try:
        world = live.mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper")
        world.post("maria", "@helper hi")
        with live.client() as client:
            path = "/v1/worlds/w/agents/helper/context"
            built = client.post(path, json={"model": "gpt-4", "record": True})
            assert built.status_code == 200, built.text
            (call,) = world.agent("helper").calls()
            # gpt-4's window (8,192) less the reply reserve, in gpt-4's encoding.
            assert (call.model, call.encoding, call.settings["budget"]) == ("gpt-4", "cl100k_base", 8_192 - 4_096)
            for bad in ("", "x" * 201):
                refused = client.post(path, json={"model": bad})
                assert refused.status_code == 422 and "model" in refused.text
        with pytest.raises(InvalidInputError, match="model"):
            live.mem.service.contexts.build_context(world.key, "helper", model="gpt\x00")
    finally:
        stop_server(live)

"""A runner whose model fails, and history that needs no answer: `recall agent run` checks the
model before it starts (an unreachable or unauthorised one is a clear error, exit 1, nothing
posted); during an outage an agent apologises once per chat until its model answers again; and
imported history arrives read, so no runner answers it, while it stays in the agents' memory.
Against a real local model server, a real recall server, SQLite and PostgreSQL."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from recall import Recall, Settings, World
from recall.app.posting import PostRequest
from recall.errors import ModelError
from recall.importers import read_jsonl, store_conversation
from recall.llm import OpenAICompatibleModel
from recall.llm.anthropic import AnthropicModel
from recall.runner.agent_runner import APOLOGY, AgentRunner
from recall.runner.backend import LocalBackend
from recall.server.config import ServerConfig
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.server.conftest import free_port, start_server, stop_server

CHAT = "/v1/chat/completions"
SETTINGS = Settings(embeddings="none", index_interval=0)


@pytest.fixture
def mem(store_location: str) -> Iterator[Recall]:
    with Recall(store_location, SETTINGS) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper", system_prompt="You are helper.")
        world.add_agent("other", system_prompt="You are other.")
        yield mem


@pytest.fixture
def world(mem: Recall) -> World:
    return mem.world("w")


def helper_runner(world: World, server: ModelServer, notice: str | None = APOLOGY) -> AgentRunner:
    model = OpenAICompatibleModel("test-model", base_url=server.openai_url, max_retries=0)
    return AgentRunner(LocalBackend(world.agent("helper")), model, outage_notice=notice)


def apologies(world: World) -> list[str | None]:
    """The chat of every apology posted, in order."""
    return [m.chat_id for m in world.messages(all_chats=True) if m.content == APOLOGY]


# -- the model check at start ---------------------------------------------------------------


def test_the_check_passes_on_a_live_model_and_names_what_fails(model_server: ModelServer) -> None:
    for model in (
        OpenAICompatibleModel("test-model", base_url=model_server.openai_url),
        AnthropicModel("test-model", base_url=model_server.anthropic_url),
    ):
        model.check()
    assert [(r.method, r.path) for r in model_server.requests] == [("GET", "/v1/models")] * 2
    model_server.model_list = 401
    with pytest.raises(ModelError, match=r"HTTP 401.*check the API key"):
        OpenAICompatibleModel("test-model", base_url=model_server.openai_url).check()
    with pytest.raises(ModelError, match=r"HTTP 401.*check the API key"):
        AnthropicModel("test-model", base_url=model_server.anthropic_url).check()
    unreachable = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ModelError, match="could not connect"):
        OpenAICompatibleModel("test-model", base_url=unreachable).check()


@pytest.mark.parametrize("status", [404, 405, 501])
def test_without_a_models_list_the_check_makes_a_one_token_call(model_server: ModelServer, status: int) -> None:
    model_server.model_list = status  # 501: a minimal server with chat completions only
    model_server.script("hi")
    OpenAICompatibleModel("test-model", base_url=model_server.openai_url).check()
    assert model_server.bodies(CHAT)[0]["max_tokens"] == 1
    model_server.script((404, "model 'test-model' not found"))
    with pytest.raises(ModelError, match="not found"):
        OpenAICompatibleModel("test-model", base_url=model_server.openai_url, max_retries=0).check()


def agent_run(server: str, base_url: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "recall.cli", "agent", "run", "--server", server, "--world", "desk",
        "--agent", "ana", "--model", "openai/test-model", "--base-url", base_url, "--api-key", "sk-test",
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_agent_run_with_an_unreachable_or_unauthorised_model_exits_1_and_posts_nothing(
    tmp_path: Path, model_server: ModelServer
) -> None:
    live = start_server(tmp_path / "r.db", ServerConfig(rate_limit=0), SETTINGS)
    try:
        world = live.mem.world("desk", create=True)
        world.add_human("maria")
        world.add_agent("ana", system_prompt="You are ana.")
        world.post("maria", "@ana are you there?")
        world.post("maria", "@ana hello?", chat="side")

        unreachable = agent_run(live.url, f"http://127.0.0.1:{free_port()}/v1")
        assert unreachable.returncode == 1, unreachable.stderr
        assert "could not connect" in unreachable.stderr and "is the server running?" in unreachable.stderr

        model_server.model_list = 401
        refused = agent_run(live.url, model_server.openai_url)
        assert refused.returncode == 1, refused.stderr
        assert "HTTP 401" in refused.stderr and "check the API key" in refused.stderr

        assert model_server.bodies(CHAT) == []  # no chat call: the runner never started
        assert [m.sender for m in world.messages(all_chats=True)] == ["maria", "maria"]
        assert len(world.agent("ana").inbox()) == 2  # still waiting for a runner that works
    finally:
        stop_server(live)


# -- an outage -------------------------------------------------------------------------------


def test_an_outage_posts_nothing_into_the_world_by_default(
    world: World, model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The world is a shared record: an outage goes to the log and the runner's counts."""
    helper = helper_runner(world, model_server, notice=None)
    model_server.responder = lambda path, body: 503
    with caplog.at_level(logging.WARNING, logger="recall.runner"):
        for text in ("@helper are you there?", "@helper hello?"):
            world.post("maria", text)
            helper.step()
    assert [m.sender for m in world.messages(all_chats=True)] == ["maria", "maria"]
    assert helper.stats.model_errors == 2 and helper.stats.replies == 0
    assert sum("left unanswered" in r.getMessage() for r in caplog.records) == 2


def test_an_outage_notice_is_posted_once_per_chat_until_the_model_answers(
    world: World, model_server: ModelServer
) -> None:
    helper = helper_runner(world, model_server)
    model_server.responder = lambda path, body: 503
    # Three messages in one chat, each arriving while the model is down.
    for text in ("@helper are you there?", "@helper hello?", "@helper anyone?"):
        world.post("maria", text)
        helper.step()
    world.post("maria", "@helper and here?", chat="side")
    helper.step()
    assert apologies(world) == [None, "side"]
    assert helper.stats.model_errors == 4
    # Unanswered, so still unread: the next step tries them again.
    assert [m.content for m in world.agent("helper").inbox()] == [
        "@helper are you there?",
        "@helper hello?",
        "@helper anyone?",
        "@helper and here?",
    ]

    # The model is back: it answers each chat once; a new outage gets a new apology.
    model_server.responder = lambda path, body: "back now"
    world.post("maria", "@helper still there?")
    assert helper.step() == 2
    assert world.agent("helper").inbox() == []
    model_server.responder = lambda path, body: 503
    world.post("maria", "@helper and now?")
    helper.step()
    assert [m.content for m in world.messages()][-3:] == ["back now", "@helper and now?", APOLOGY]
    assert [m.content for m in world.messages(chat="side")][-1] == "back now"
    assert apologies(world) == [None, "side", None]


def test_pending_messages_met_by_a_failing_model_get_one_notice(world: World, model_server: ModelServer) -> None:
    helper = helper_runner(world, model_server)
    model_server.responder = lambda path, body: 503
    for text in ("@helper are you there?", "@helper hello?", "@helper anyone?"):
        world.post("maria", text)
    helper.step()
    helper.step()
    assert apologies(world) == [None]


# -- imported history ------------------------------------------------------------------------


def test_imported_history_arrives_read_and_stays_in_memory(
    mem: Recall, world: World, model_server: ModelServer, tmp_path: Path
) -> None:
    source = tmp_path / "w.jsonl"
    lines = [
        {"role": "user", "name": "maria", "content": "@helper where is my order?", "created_at": 1704103200},
        {"role": "assistant", "name": "helper", "content": "It ships tomorrow.", "created_at": 1704103260},
        {"role": "user", "name": "maria", "content": "@helper thanks! and the invoice?", "created_at": 1704103320},
    ]
    source.write_text("\n".join(json.dumps(line) for line in lines))
    assert store_conversation(mem, read_jsonl(source, "w")) == 3
    helper = world.agent("helper")
    assert helper.inbox() == [] and world.agent("other").inbox() == []
    assert [m.content for m in helper.inbox(unread_only=False)] == [lines[0]["content"], lines[2]["content"]]

    # No runner answers it: no model call, nothing posted.
    assert helper_runner(world, model_server).step() == 0
    assert model_server.requests == []
    assert len(world.messages()) == 3

    # It is the agent's history: the next live message is answered with it in the context.
    model_server.script("Sent it just now.")
    world.post("maria", "@helper please send the invoice again")
    assert helper_runner(world, model_server).step() == 1
    sent = model_server.bodies(CHAT)[0]["messages"]
    assert [m["content"] for m in sent[1:]] == [
        *(line["content"] for line in lines),
        "@helper please send the invoice again",
    ]


def test_imported_messages_through_the_service_arrive_read(world: World) -> None:
    world.import_messages([PostRequest("maria", "@helper hi", created_at="2024-01-01T10:00:00Z")])
    world.post("maria", "@helper live")  # a post is not history: it waits to be answered
    assert [m.content for m in world.agent("helper").inbox()] == ["@helper live"]


def test_each_call_records_whether_the_model_answered_or_failed(world: World, model_server: ModelServer) -> None:
    """The outage is on the agent's recorded call (the calls list, the inspector), not in the world."""
    helper = helper_runner(world, model_server, notice=None)
    model_server.responder = lambda path, body: 503
    world.post("maria", "@helper are you there?")
    helper.step()
    model_server.responder = None
    model_server.script("Yes, here.")
    world.post("maria", "@helper now?")
    helper.step()
    answered, failed = world.agent("helper").calls()  # newest first
    assert (answered.outcome, answered.error) == ("answered", None)
    assert failed.outcome == "failed" and failed.error is not None and "503" in failed.error
    assert [m.sender for m in world.messages(all_chats=True)] == ["maria", "maria", "helper"]


def test_a_runner_over_http_reports_the_outage_to_the_servers_calls_and_metrics(
    tmp_path: Path, model_server: ModelServer
) -> None:
    from recall.runner.backend import HttpBackend

    live = start_server(tmp_path / "o.db", ServerConfig(rate_limit=0), SETTINGS)
    try:
        world = live.mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper")
        backend = HttpBackend(live.url, "w", "helper")
        model = OpenAICompatibleModel("test-model", base_url=model_server.openai_url, max_retries=0)
        runner = AgentRunner(backend, model)
        model_server.responder = lambda path, body: 503
        world.post("maria", "@helper hello?")
        assert runner.step() == 0
        (call,) = world.agent("helper").calls()
        assert (call.source, call.outcome) == ("rest", "failed") and "503" in (call.error or "")
        metrics = httpx.get(f"{live.url}/metrics").text
        assert "recall_model_call_failures_total 1" in metrics
        assert "recall_model_calls_answered_total 0" in metrics
        assert [m.sender for m in world.messages()] == ["maria"]
        backend.close()
    finally:
        stop_server(live)

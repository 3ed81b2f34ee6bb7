"""End to end: one human and three agents, each agent a runner against a real local
OpenAI-compatible server (scripted replies, every request recorded). The runners reach recall
in this process or over HTTP (a real server), and coordinate only through it.

What each agent's model received is asserted exactly: the filtered history (an agent sees only
what it was addressed in, plus its own replies), a byte-identical system prompt on every call,
the facts block. So are the replies (threaded, auto-mentioned), the turn-limit stop after two
agents kept mentioning each other, and the human message that resumes them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from recall import Recall, Settings, World
from recall.demo_live import AGENTS, HUMAN_TURNS, LIVE_WORLD, build_live_world, start_scripted_model, system_prompt
from recall.llm import OpenAICompatibleModel
from recall.llm.scripted_server import ModelServer
from recall.runner.agent_runner import AgentRunner, run_agents
from recall.runner.backend import HttpBackend, LocalBackend, RunnerBackend
from recall.server.config import ServerConfig
from tests.server.conftest import start_server, stop_server

MEMORY = {"role": "system", "content": "<memory>\nFacts:\n- [preference | 0.90] Maria prefers short answers\n</memory>"}


def prompt(agent: str) -> dict[str, str]:
    return {"role": "system", "content": system_prompt(agent)}


def user(sender: str, content: str) -> dict[str, str]:
    return {"role": "user", "content": content, "name": sender}


def assistant(content: str) -> dict[str, str]:
    return {"role": "assistant", "content": content}


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    server = start_scripted_model()
    yield server
    server.close()


def _until(world: World, done: Callable[[list[str]], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not done([f"{m.sender}: {m.content}" for m in world.messages()]):
        assert time.monotonic() < deadline, [f"{m.sender}: {m.content}" for m in world.messages()]
        time.sleep(0.02)


SETTINGS = Settings(embeddings="none", index_interval=0)


@contextmanager
def _recall(path: Path, transport: str) -> Iterator[tuple[World, Callable[[str], RunnerBackend]]]:
    """The world, and how a runner reaches an agent: in this process, or over a real server."""
    if transport == "local":
        with Recall(path, SETTINGS) as mem:
            world = build_live_world(mem)
            yield world, lambda agent: LocalBackend(world.agent(agent))
        return
    live = start_server(path, ServerConfig(rate_limit=0), SETTINGS)
    backends: list[HttpBackend] = []

    def connect(agent: str) -> RunnerBackend:
        backends.append(HttpBackend(live.url, LIVE_WORLD, agent))
        return backends[-1]

    try:
        yield build_live_world(live.mem), connect
    finally:
        for backend in backends:
            backend.close()
        stop_server(live)


@pytest.mark.parametrize("transport", ["local", "http"])
def test_three_agents_one_human(tmp_path: Path, model_server: ModelServer, transport: str) -> None:
    with _recall(tmp_path / "r.db", transport) as (world, connect):
        runners = [
            AgentRunner(connect(agent), OpenAICompatibleModel("test-model", base_url=model_server.openai_url))
            for agent in AGENTS
        ]
        _converse(world, runners)
        _check(world, runners, model_server)


def _converse(world: World, runners: list[AgentRunner]) -> None:
    stop = threading.Event()
    threads = run_agents(runners, stop, wait=0.2)
    try:
        first, second, third = HUMAN_TURNS
        world.post("maria", first)
        _until(world, lambda lines: any("Turn limit reached" in line for line in lines))
        world.post("maria", second)
        _until(world, lambda lines: lines[-1].startswith("carol:"))
        world.post("maria", third)
        _until(world, lambda lines: lines[-1] == "bob: Yes, confirmed.")
        time.sleep(0.3)  # nothing else may happen
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)


def _check(world: World, runners: list[AgentRunner], model_server: ModelServer) -> None:
    messages = world.messages()
    assert [(m.sender, m.content, m.parent_id) for m in messages] == [
        ("maria", "@alice please plan the offsite with bob", None),
        ("alice", "@bob can you find a venue for 12 people?", 1),
        ("bob", "@alice Casa Azul fits 12.", 2),  # auto-mention of the agent it answers
        ("alice", "@bob great, please book it.", 3),
        ("bob", "@alice Booked for Friday.", 4),
        # alice has made 2 model calls since maria spoke: the limit stops the loop.
        ("alice", "@human Turn limit reached (2 LLM calls). Please take control of the conversation.", 5),
        ("maria", "@carol write the invitation", None),
        ("carol", "Dear team, the offsite is at Casa Azul on Friday.", 7),
        ("maria", "@bob is the booking confirmed?", None),  # a human message resumes bob
        ("bob", "Yes, confirmed.", 9),
    ]
    calls = {agent: [r.body["messages"] for r in model_server.requests if r.body["messages"][0] == prompt(agent)]
             for agent in AGENTS}  # fmt: skip
    assert len(model_server.requests) == 6
    assert calls["alice"] == [
        [prompt("alice"), MEMORY, user("maria", "@alice please plan the offsite with bob")],
        [
            prompt("alice"),
            MEMORY,
            user("maria", "@alice please plan the offsite with bob"),
            assistant("@bob can you find a venue for 12 people?"),
            user("bob", "@alice Casa Azul fits 12."),
        ],
    ]
    # bob never sees maria's first message (it addressed alice), nor carol's exchange.
    assert calls["bob"] == [
        [prompt("bob"), MEMORY, user("alice", "@bob can you find a venue for 12 people?")],
        [
            prompt("bob"),
            MEMORY,
            user("alice", "@bob can you find a venue for 12 people?"),
            assistant("@alice Casa Azul fits 12."),
            user("alice", "@bob great, please book it."),
        ],
        [
            prompt("bob"),
            MEMORY,
            user("alice", "@bob can you find a venue for 12 people?"),
            assistant("@alice Casa Azul fits 12."),
            user("alice", "@bob great, please book it."),
            assistant("@alice Booked for Friday."),
            user("maria", "@bob is the booking confirmed?"),
        ],
    ]
    # carol heard everything, was addressed once: her history is empty.
    assert calls["carol"] == [[prompt("carol"), MEMORY, user("maria", "@carol write the invitation")]]
    assert [(r.stats.replies, r.stats.notices, r.stats.model_calls, r.stats.errors) for r in runners] == [
        (2, 1, 2, 0),
        (3, 0, 3, 0),
        (1, 0, 1, 0),
    ]

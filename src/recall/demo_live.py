"""`recall demo --live`: three agents and a human in a live world, each agent a runner.

Maria asks alice to plan an offsite with bob; alice and bob keep mentioning each other until the
turn limit (2 model calls here) stops them; maria then asks carol for the invitation and bob
whether the booking is confirmed, which resumes him. Every agent heard everything, yet each
model call holds only what that agent was addressed in.

The transcript is printed from the store, in message-id order, by the thread that plays maria:
ids are given in commit order and an agent stores its answer only after it read the message it
answers, so the printed order is the order things happened whatever the threads' timing (printing
from each runner's thread as it posts would race: alice could print her answer to bob's message
before bob's thread got to print the message).

Without a model configured the agents talk to recall's scripted model server on loopback, which
answers each agent's line from `REPLIES`; with `--model` (or settings.llm_model) a real model
answers and the conversation is its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from recall.api import Recall, World
from recall.core.models import SenderType
from recall.llm.base import AgentModel
from recall.llm.scripted_server import ModelServer, Reply, start_model_server
from recall.runner.agent_runner import AgentRunner, run_agents
from recall.runner.backend import LocalBackend

LIVE_WORLD = "offsite"
AGENTS = ("alice", "bob", "carol")
TURN_LIMIT = 2
#: What maria says, in order; each waits for the agents to fall quiet.
HUMAN_TURNS = (
    "@alice please plan the offsite with bob",
    "@carol write the invitation",
    "@bob is the booking confirmed?",
)
#: The scripted model: (agent, the newest message it is given) → its reply.
REPLIES: dict[tuple[str, str], str] = {
    ("alice", "@alice please plan the offsite with bob"): "@bob can you find a venue for 12 people?",
    ("bob", "@bob can you find a venue for 12 people?"): "Casa Azul fits 12.",
    ("alice", "@alice Casa Azul fits 12."): "@bob great, please book it.",
    ("bob", "@bob great, please book it."): "Booked for Friday.",
    ("carol", "@carol write the invitation"): "Dear team, the offsite is at Casa Azul on Friday.",
    ("bob", "@bob is the booking confirmed?"): "Yes, confirmed.",
}


def system_prompt(agent: str) -> str:
    return f"You are {agent}, part of the office team."


def build_live_world(mem: Recall) -> World:
    """The world of the live demo: maria, three agents, one fact about maria."""
    world = mem.world(LIVE_WORLD, create=True, turn_limit=TURN_LIMIT, name="Offsite planning (live demo)")
    world.add_human("maria")
    for agent in AGENTS:
        world.add_agent(agent, system_prompt=system_prompt(agent))
    mem.scope("user:maria").add("Maria prefers short answers", category="preference", confidence=0.9)
    return world


def scripted_reply(path: str, body: dict[str, Any]) -> Reply:
    """The scripted model server's answer: the line `REPLIES` gives this agent for the newest
    message, or `PASS` (stay silent) for anything unscripted."""
    messages = body.get("messages") or []
    system = body.get("system") or (messages[0].get("content") if messages else "")
    agent = next((a for a in AGENTS if str(system).startswith(system_prompt(a))), "")
    last = str(messages[-1].get("content")) if messages else ""
    return REPLIES.get((agent, last), "<world>PASS</world>")


def start_scripted_model() -> ModelServer:
    return start_model_server(scripted_reply)


class Transcript:
    """Prints a world's messages once each, in id order (the order they were stored)."""

    def __init__(self, world: World, console: Console) -> None:
        self.world = world
        self.console = console
        self.last_id = 0

    def show_new(self) -> None:
        """Print every message stored since the last call."""
        while batch := self.world.messages(after=self.last_id, all_chats=True):
            for message in batch:
                style = "bold cyan" if message.sender_type is SenderType.HUMAN else "bold green"
                self.console.print(f"[{style}]{message.sender}[/]: {escape(message.content)}", highlight=False)
                self.last_id = message.id


def wait_until_quiet(world: World, quiet: float, timeout: float, on_poll: Callable[[], None] | None = None) -> None:
    """Return once every agent has read everything delivered to it, for `quiet` seconds on end
    (or after `timeout`), calling `on_poll` at each look. A runner acknowledges a message only
    after posting its answer, and an answer reaches the other agents' inboxes as it is stored,
    so empty inboxes mean no answer is under way."""
    deadline = time.monotonic() + timeout
    settled: float | None = None
    while time.monotonic() < deadline:
        if on_poll is not None:
            on_poll()
        if any(world.agent(agent).inbox(limit=1) for agent in AGENTS):
            settled = None
        elif settled is None:
            settled = time.monotonic()
        elif time.monotonic() - settled >= quiet:
            return
        time.sleep(0.05)


def run_live_demo(
    mem: Recall,
    model: AgentModel,
    console: Console,
    *,
    quiet: float = 0.5,
    timeout: float = 120.0,
    on_turn: Callable[[World], None] | None = None,
) -> tuple[World, list[AgentRunner]]:
    """Play the scenario with `model`, printing every post (in store order) as it happens."""
    world = build_live_world(mem)
    transcript = Transcript(world, console)
    runners = [AgentRunner(LocalBackend(world.agent(agent)), model) for agent in AGENTS]
    stop = threading.Event()
    threads = run_agents(runners, stop, wait=0.2)
    try:
        for text in HUMAN_TURNS:
            world.post("maria", text)
            wait_until_quiet(world, quiet, timeout, transcript.show_new)
            transcript.show_new()
            if on_turn is not None:
                on_turn(world)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
        transcript.show_new()
    return world, runners

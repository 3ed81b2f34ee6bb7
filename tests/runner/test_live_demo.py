"""`recall demo --live` in the terminal, and the same scenario against a real local model when
one is reachable (skipped with the reason otherwise: nothing leaves this machine)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from rich.console import Console

from recall import Recall, Settings
from recall.demo_live import (
    AGENTS,
    HUMAN_TURNS,
    LIVE_WORLD,
    TURN_LIMIT,
    run_live_demo,
    start_scripted_model,
    system_prompt,
)
from recall.llm.base import AgentModel, ModelReply, Tool
from recall.llm.factory import OLLAMA_URL, agent_model
from recall.llm.openai_compat import OpenAICompatibleModel

#: What the scripted scenario prints, in this order, every time.
SCRIPTED_TRANSCRIPT = [
    "maria: @alice please plan the offsite with bob",
    "alice: @bob can you find a venue for 12 people?",
    "bob: @alice Casa Azul fits 12.",
    "alice: @bob great, please book it.",
    "bob: @alice Booked for Friday.",
    "alice: @human Turn limit reached (2 LLM calls). Please take control of the conversation.",
    "maria: @carol write the invitation",
    "carol: Dear team, the offsite is at Casa Azul on Friday.",
    "maria: @bob is the booking confirmed?",
    "bob: Yes, confirmed.",
]


def test_demo_live_plays_the_scenario_in_the_terminal() -> None:
    script = Path(sys.executable).parent / "recall"
    env = {**os.environ, "COLUMNS": "200", "RECALL_LLM_MODEL": ""}
    result = subprocess.run([str(script), "demo", "--live"], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "scripted model server" in lines[0]
    assert lines[1:11] == SCRIPTED_TRANSCRIPT
    assert "what bob's model got last" in result.stdout and "turn-limit-notice" in result.stdout


class SlowToPrint(Console):
    """A terminal that is slow at the worst moment: printing bob's "Booked for Friday" waits
    until alice's turn-limit notice (her answer to it) is stored. A demo that prints from the
    agents' threads then shows the notice first; one that prints in store order cannot."""

    def __init__(self, mem: Recall) -> None:
        super().__init__(file=io.StringIO(), width=200, record=True, color_system=None)
        self.mem = mem

    def print(self, *objects: Any, **options: Any) -> None:
        if any("Booked for Friday" in str(o) for o in objects):
            self._wait_for_the_notice()
        super().print(*objects, **options)

    def _wait_for_the_notice(self) -> None:
        deadline = time.monotonic() + 20
        while not any("Turn limit reached" in m.content for m in self.mem.world(LIVE_WORLD).messages()):
            assert time.monotonic() < deadline, "alice never posted her turn-limit notice"
            time.sleep(0.01)


def test_the_transcript_follows_the_store_however_slow_the_terminal(tmp_path: Path) -> None:
    scripted = start_scripted_model()
    model = OpenAICompatibleModel("scripted", base_url=scripted.openai_url, max_retries=0)
    try:
        with Recall(tmp_path / "r.db", Settings(embeddings="none", index_interval=0)) as mem:
            console = SlowToPrint(mem)
            world, _ = run_live_demo(mem, model, console)
            stored = [f"{m.sender}: {m.content}" for m in world.messages()]
    finally:
        scripted.close()
    assert console.export_text().splitlines() == stored == SCRIPTED_TRANSCRIPT


class Recording:
    """Passes calls to a real model and keeps the messages each call was given."""

    def __init__(self, model: AgentModel) -> None:
        self.model = model
        self.name = model.name
        self.calls: list[list[dict[str, Any]]] = []

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Tool] = (),
        max_tokens: int = 1024,
        temperature: float | None = None,
    ) -> ModelReply:
        self.calls.append([dict(m) for m in messages])
        return self.model.chat(messages, tools=tools, max_tokens=max_tokens, temperature=temperature)


def _local_model() -> str:
    """RECALL_TEST_MODEL (PROVIDER/MODEL, with RECALL_TEST_BASE_URL), else the first model of an
    Ollama on this machine; skips the test when there is none."""
    if os.environ.get("RECALL_TEST_MODEL"):
        return os.environ["RECALL_TEST_MODEL"]
    try:
        tags = httpx.get(OLLAMA_URL.removesuffix("/v1") + "/api/tags", timeout=1).json()
    except (httpx.HTTPError, ValueError):
        pytest.skip("no local model: set RECALL_TEST_MODEL=PROVIDER/MODEL or run Ollama on localhost:11434")
    models = [m["name"] for m in tags.get("models", [])]
    if not models:
        pytest.skip("Ollama is running but has no model pulled")
    return f"ollama/{models[0]}"


def test_the_scenario_against_a_real_local_model(tmp_path: Path) -> None:
    spec = _local_model()
    model = Recording(agent_model(spec, base_url=os.environ.get("RECALL_TEST_BASE_URL"), timeout=120))
    with Recall(tmp_path / "r.db", Settings(embeddings="none", index_interval=0)) as mem:
        world, runners = run_live_demo(mem, model, Console(quiet=True), timeout=300)
        assert all(r.stats.errors == 0 and r.stats.model_errors == 0 for r in runners)
        # The first call is alice's, exactly: her prompt, the facts, maria's message.
        assert model.calls[0][0] == {"role": "system", "content": system_prompt("alice")}
        assert model.calls[0][-1] == {"role": "user", "content": HUMAN_TURNS[0], "name": "maria"}
        for agent in AGENTS:
            prompts = {c[0]["content"] for c in model.calls if c[0]["content"].startswith(system_prompt(agent))}
            assert len(prompts) <= 1  # byte-identical on every call
        # Whatever the model said, the turn limit bounds each agent's calls per human message.
        assert all(r.stats.model_calls <= TURN_LIMIT * len(HUMAN_TURNS) for r in runners)
        # maria's last message addressed bob: a human message resumes him whatever came before.
        bob = [c for c in model.calls if c[0]["content"] == system_prompt("bob")]
        assert bob and bob[-1][-1] == {"role": "user", "content": HUMAN_TURNS[2], "name": "maria"}

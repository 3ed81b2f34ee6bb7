"""`recall agent run` as processes of their own: three agents in two processes on a real recall
server answer through a real local model server, and SIGTERM stops each process cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall import Settings
from recall.cli import app
from recall.server.config import ServerConfig
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.server.conftest import start_server, stop_server


@pytest.mark.starts_first
def test_agent_run_answers_over_http_and_stops_on_sigterm(tmp_path: Path, model_server: ModelServer) -> None:
    live = start_server(tmp_path / "r.db", ServerConfig(rate_limit=0), Settings(embeddings="none", index_interval=0))
    world = live.mem.world("desk", create=True)
    world.add_human("maria")
    world.add_agent("ana", system_prompt="You are ana.")
    world.add_agent("ben", system_prompt="You are ben.")
    world.add_agent("cy", system_prompt="You are cy.")
    model_server.responder = lambda path, body: f"{body['messages'][0]['content'].split()[2]} here"

    def command(*agents: str) -> list[str]:
        return [
            sys.executable, "-m", "recall.cli", "agent", "run", "--server", live.url, "--world", "desk",
            *(a for agent in agents for a in ("--agent", agent)),
            "--model", "openai/test-model", "--base-url", model_server.openai_url, "--api-key", "sk-test",
        ]  # fmt: skip

    # Two agents in one process, a third in another: they coordinate only through the server.
    processes = [
        subprocess.Popen(command("ana", "ben"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ}),
        subprocess.Popen(command("cy"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ}),
    ]
    try:
        world.post("maria", "Good morning!")  # public: every agent answers, once
        deadline = time.monotonic() + 90  # two processes starting on a busy machine
        expected = ["ana. here", "ben. here", "cy. here"]
        while sorted(m.content for m in world.messages() if m.sender != "maria") != expected:
            for process in processes:
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline, [m.content for m in world.messages()]
            time.sleep(0.05)
        assert {r.headers.get("authorization") for r in model_server.requests} == {"Bearer sk-test"}
        # Each process checked the model once (GET /v1/models) before it started its agents.
        assert [r.method for r in model_server.requests].count("GET") == 2
        assert len(model_server.bodies("/v1/chat/completions")) == 3
    finally:
        outputs = []
        for process in processes:
            process.send_signal(signal.SIGTERM)
            outputs.append(process.communicate(timeout=60)[1].decode())
        stop_server(live)
    assert [p.returncode for p in processes] == [0, 0], outputs
    assert "running ana, ben in desk on openai:test-model" in outputs[0]
    assert "running cy in desk on openai:test-model" in outputs[1]


def test_agent_run_refuses_a_bad_model_spec() -> None:
    result = CliRunner().invoke(
        app, ["agent", "run", "--server", "http://127.0.0.1:9", "--world", "w", "--agent", "a", "--model", "gpt4"]
    )
    assert result.exit_code == 1
    assert "must be PROVIDER/MODEL" in result.output

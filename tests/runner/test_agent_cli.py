"""`recall agent run` as its own process: two agents on a real recall server answer through a
real local model server, and SIGTERM stops the process cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from recall import Settings
from recall.cli import app
from recall.server.config import ServerConfig
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.server.conftest import start_server, stop_server


def test_agent_run_answers_over_http_and_stops_on_sigterm(tmp_path: Path, model_server: ModelServer) -> None:
    live = start_server(tmp_path / "r.db", ServerConfig(rate_limit=0), Settings(embeddings="none", index_interval=0))
    world = live.mem.world("desk", create=True)
    world.add_human("maria")
    world.add_agent("ana", system_prompt="You are ana.")
    world.add_agent("ben", system_prompt="You are ben.")
    model_server.responder = lambda path, body: f"{body['messages'][0]['content'].split()[2]} here"
    command = [
        sys.executable, "-m", "recall.cli", "agent", "run", "--server", live.url, "--world", "desk",
        "--agent", "ana", "--agent", "ben", "--model", "openai/test-model", "--base-url", model_server.openai_url,
        "--api-key", "sk-test",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    try:
        world.post("maria", "Good morning!")  # public: both answer
        deadline = time.monotonic() + 30
        while sorted(m.content for m in world.messages() if m.sender != "maria") != ["ana. here", "ben. here"]:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline, [m.content for m in world.messages()]
            time.sleep(0.05)
        assert {r.headers.get("authorization") for r in model_server.requests} == {"Bearer sk-test"}
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        stop_server(live)
    assert process.returncode == 0, stderr.decode()
    assert b"running ana, ben in desk on openai:test-model" in stderr


def test_agent_run_refuses_a_bad_model_spec() -> None:
    result = CliRunner().invoke(
        app, ["agent", "run", "--server", "http://127.0.0.1:9", "--world", "w", "--agent", "a", "--model", "gpt4"]
    )
    assert result.exit_code == 1
    assert "must be PROVIDER/MODEL" in result.output

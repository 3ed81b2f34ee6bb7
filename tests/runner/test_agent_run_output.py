"""`recall agent run` as a user runs it, in a process of its own against a real recall server and
the scripted model server: a line per reply on stderr (the HTTP requests behind it only with -v),
contexts built and recorded for the model it calls and the window `--max-context` gives, and a
model outage that leaves the messages it did not answer unread (`recall inbox` lists them) until
the model answers them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recall import Settings, World
from recall.cli import app
from recall.server.config import ServerConfig
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.server.conftest import LiveServer, start_server, stop_server

CHAT = "/v1/chat/completions"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    server = start_server(tmp_path / "r.db", ServerConfig(rate_limit=0), Settings(embeddings="none", index_interval=0))
    try:
        world = server.mem.world("desk", create=True)
        world.add_human("maria")
        world.add_agent("ana", system_prompt="You are ana.")
        yield server
    finally:
        stop_server(server)


def start(live: LiveServer, model_server: ModelServer, *options: str) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "recall.cli", "agent", "run", "--server", live.url, "--world", "desk",
        "--agent", "ana", "--base-url", model_server.openai_url, "--api-key", "sk-test", *options,
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 90  # a process starting on a busy machine: seconds, not minutes
    while not condition():
        assert process.poll() is None, stop(process)
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def stop(process: subprocess.Popen[bytes]) -> list[str]:
    """SIGTERM, then the lines the process wrote to stderr."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr.decode()
    return stderr.decode().splitlines()


def replies(world: World) -> list[str]:
    return [m.content for m in world.messages() if m.sender == "ana"]


@pytest.mark.parametrize("verbose", [False, True])
def test_one_reply_is_one_line_and_its_context_is_for_the_model_called(
    live: LiveServer, model_server: ModelServer, verbose: bool
) -> None:
    world = live.mem.world("desk")
    model_server.responder = lambda path, body: "Hello Maria."
    options = ["--model", "openai/house-model", "--max-context", "6000", "--max-tokens", "500"]
    process = start(live, model_server, *options, *(["-v"] if verbose else []))
    try:
        world.post("maria", "@ana hello")
        wait_for(lambda: replies(world) == ["Hello Maria."], process, "no reply")
    finally:
        lines = stop(process)
    (call,) = world.agent("ana").calls()
    assert (call.model, call.settings["budget"], call.outcome) == ("openai/house-model", 5_500, "answered")
    started = next(i for i, line in enumerate(lines) if line.startswith("running ana in desk"))
    assert "on openai:house-model (context window 6,000 tokens)" in lines[started]
    requests = [line for line in lines if "HTTP Request:" in line]
    if verbose:  # the model check, the inbox, decide, context, the model call, the reply, ack…
        assert len(requests) >= 8 and any(f"POST {model_server.openai_url}/chat/completions" in r for r in requests)
    else:
        assert requests == []
        # The agent's start, the command's, then one line for the reply.
        assert len(lines) == 3 and "agent ana answered message 1" in lines[-1], lines
    assert sum("answered message" in line for line in lines) == 1


def test_an_outage_leaves_its_messages_unread_until_the_model_answers_them(
    live: LiveServer, model_server: ModelServer, tmp_path: Path
) -> None:
    world = live.mem.world("desk")
    ana = world.agent("ana")
    down = {"yes": True}
    model_server.responder = lambda path, body: 500 if down["yes"] else "Back, sorry for the wait."
    process = start(live, model_server, "--model", "ollama/llama3.2")
    try:
        asked = world.post("maria", "@ana is my parcel on its way?")
        wait_for(lambda: any(c.outcome == "failed" for c in ana.calls()), process, "the model was never called")
        # Nobody answered it, so nobody marked it read: the inbox lists it.
        listed = CliRunner().invoke(app, ["--db", str(tmp_path / "r.db"), "inbox", "desk", "ana"])
        assert listed.exit_code == 0, listed.output
        assert '"content": "@ana is my parcel on its way?"' in listed.output
        assert replies(world) == []
        down["yes"] = False  # the model is back: the runner's next try answers it
        wait_for(lambda: replies(world) == ["Back, sorry for the wait."], process, "the message was never retried")
    finally:
        lines = stop(process)
    assert ana.inbox() == []
    assert [m.parent_id for m in world.messages() if m.sender == "ana"] == [asked.id]
    failures = [line for line in lines if "model failed" in line]
    assert len(failures) >= 1 and all("left unanswered (unread; tried again in" in line for line in failures)
    assert len(failures) == len([c for c in ana.calls() if c.outcome == "failed"])  # one line per failed call
    assert sum("answered message" in line for line in lines) == 1
    # Built for the model called (Ollama's default context length), not the server's default model.
    assert {(c.model, c.settings["budget"]) for c in ana.calls()} == {("ollama/llama3.2", 4_096 - 1024)}

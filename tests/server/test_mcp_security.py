"""MCP's share of issue 12: non-finite numbers, shared memories, DNS rebinding (spec §8)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.types import LATEST_PROTOCOL_VERSION

from recall import Recall
from recall.server.config import ServerConfig
from recall.server.inbox import Notifier
from recall.server.mcp import build_mcp_server
from recall.settings import Settings
from tests.server.test_mcp import RECALL, Served, make_world, mcp_session, ok, serve, text

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[Served]:
    for served in serve(tmp_path, ServerConfig(rate_limit=0)):
        # No indexer thread of its own: it would outlive the store the server closes.
        make_world(Recall(served.state.service.store, Settings(index_interval=0)))
        yield served


def start_session(http: httpx.Client) -> dict[str, str]:
    """A raw MCP session over HTTP (the official client cannot send NaN); its headers."""
    started = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert started.status_code == 200, started.text
    headers = {**MCP_HEADERS, "mcp-session-id": started.headers["mcp-session-id"]}
    initialized = http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert initialized.status_code == 202, initialized.text
    return headers


def test_nan_in_tool_arguments_is_refused_over_http(open_server: Served) -> None:
    with httpx.Client(base_url=open_server.url, timeout=10) as http:
        headers = start_session(http)
        call = (
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", '
            '"arguments": {"world": "w", "agent": "agent-a", "key": "k", "value": NaN}}}'
        )
        answer = http.post("/mcp", content=call.encode(), headers=headers)
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["field"] == "params.arguments.value"
    assert open_server.state.service.agent_state.notes("w", "agent-a") == []


def test_nan_in_tool_arguments_is_refused_over_stdio(tmp_path: Path) -> None:
    # Over stdio no HTTP layer sees the JSON: the SDK hands the NaN to the tool, the service refuses it.
    db = tmp_path / "recall.db"
    with Recall(db, Settings()) as mem:
        make_world(mem)
    command = [RECALL, "--db", str(db), "mcp", "--world", "w", "--agent", "agent-a"]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout
        lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()

        def send(line: str) -> None:
            stdin.write(line.encode() + b"\n")
            stdin.flush()

        def answer(request_id: int) -> dict[str, Any]:
            while True:
                message = json.loads(lines.get(timeout=60))  # queue.Empty: the server never answered
                if message.get("id") == request_id:
                    return dict(message)

        send(json.dumps(INITIALIZE))
        answer(1)
        send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        send(
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", '
            '"arguments": {"key": "k", "value": {"score": NaN}}}}'
        )
        result = answer(2)["result"]
        assert result["isError"] and "value.score: must be a finite number" in result["content"][0]["text"]
        stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:  # a failed step: never leave the server running
            proc.kill()
            proc.wait()
    with Recall(db, Settings()) as mem:
        assert mem.service.agent_state.notes("w", "agent-a") == []


@pytest.mark.anyio
async def test_tools_refuse_nul_arguments_in_process(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings()) as mem:
        make_world(mem)
        async with Client(build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")) as client:
            nul = await client.call_tool("remember", {"key": "k\x00", "value": 1})
            assert nul.is_error and "key: must not contain NUL" in text(nul)
            session = await client.call_tool("messages", {"action": "check", "session": "s\x00"})
            assert session.is_error and "session: must not contain NUL" in text(session)
            key = await client.call_tool("messages", {"action": "send", "content": "hi", "idempotency_key": "\x00"})
            assert key.is_error and "idempotency_key: must not contain NUL" in text(key)
        assert mem.service.agent_state.notes("w", "agent-a") == []
        assert mem.world("w").messages() == []


@pytest.mark.anyio
async def test_tools_refuse_a_lone_surrogate_in_process(tmp_path: Path) -> None:
    """Issue 43, point 2: text UTF-8 cannot encode is refused naming the field, nothing stored."""
    with Recall(tmp_path / "recall.db", Settings()) as mem:
        make_world(mem)
        async with Client(build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")) as client:
            note = await client.call_tool("remember", {"key": "k", "value": {"x": "\ud800"}})
            assert note.is_error and "value.x: must be valid Unicode text" in text(note)
            sent = await client.call_tool("messages", {"action": "send", "content": "@maria \ud800"})
            assert sent.is_error and "content: must be valid Unicode text" in text(sent)
            memory = await client.call_tool("memories", {"action": "add", "content": "green tea \udfff"})
            assert memory.is_error and "content" in text(memory)  # pydantic refuses it first
        assert mem.service.agent_state.notes("w", "agent-a") == []
        assert mem.world("w").messages() == [] and mem.world("w").memories() == []


@pytest.mark.anyio
async def test_a_context_budget_past_the_cap_is_refused_everywhere(tmp_path: Path) -> None:
    """Issue 43, point 9: one cap (MAX_CONTEXT_TOKENS), enforced in the service, so MCP, REST
    and the Python API refuse the same budget."""
    from recall.app.validation import MAX_CONTEXT_TOKENS
    from recall.errors import InvalidInputError

    with Recall(tmp_path / "recall.db", Settings()) as mem:
        make_world(mem)
        async with Client(build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")) as client:
            huge = await client.call_tool("context", {"max_tokens": 10**15})
            assert huge.is_error and "max_tokens" in text(huge)
            capped = await client.call_tool("context", {"max_tokens": MAX_CONTEXT_TOKENS})
            assert not capped.is_error
        with pytest.raises(InvalidInputError, match="max_tokens"):
            mem.world("w").agent("agent-a").context(max_tokens=MAX_CONTEXT_TOKENS + 1)
        with pytest.raises(InvalidInputError, match="max_tokens"):
            mem.service.contexts.build_context("w", "agent-a", max_tokens=10**15)
        with pytest.raises(InvalidInputError, match="max_tokens"):
            mem.world("w").add_agent("agent-c", max_tokens=10**15)


@pytest.mark.anyio
async def test_an_agent_cannot_delete_a_shared_memory_over_mcp(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings()) as mem:
        make_world(mem)
        shared = mem.world("w").add_memory("Deliveries on Monday")
        async with Client(build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")) as client:
            own = ok(await client.call_tool("memories", {"action": "add", "content": "Maria tips well"}))
            denied = await client.call_tool("memories", {"action": "delete", "memory_id": shared.id})
            assert denied.is_error and "shared" in text(denied)
            assert ok(await client.call_tool("memories", {"action": "delete", "memory_id": own["id"]}))["deleted"]
        assert [n.id for n in mem.world("w").memories()] == [shared.id]


# -- DNS rebinding -----------------------------------------------------------------------------


def test_a_keyless_mcp_endpoint_refuses_rebinding(open_server: Served) -> None:
    with httpx.Client(base_url=open_server.url, timeout=10) as http:
        rebound = http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "rebind.attacker.example"})
        assert rebound.status_code == 421
        # The SDK's own protection is on too: a page of another origin is refused by it.
        foreign = http.post(
            "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://rebind.attacker.example"}
        )
        assert foreign.status_code == 403 and "Origin" in foreign.text
        local = http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": open_server.url})
        assert local.status_code == 200, local.text


@pytest.mark.anyio
async def test_the_keyless_mcp_client_still_works(open_server: Served) -> None:
    async with mcp_session(open_server.url) as session:
        ok(await session.call_tool("remember", {"world": "w", "agent": "agent-a", "key": "k", "value": 1}))


def test_an_mcp_endpoint_with_keys_answers_any_host(tmp_path: Path) -> None:
    from recall.server.config import ApiKey

    for served in serve(tmp_path, ServerConfig(keys=(ApiKey("k", "acme"),), rate_limit=0)):
        with httpx.Client(base_url=served.url, timeout=10) as http:
            headers = {**MCP_HEADERS, "Host": "recall.example.com", "Authorization": "Bearer k"}
            assert http.post("/mcp", json=INITIALIZE, headers=headers).status_code == 200

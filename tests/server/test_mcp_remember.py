"""Issue 44, point 8: what a model is told to `remember` over MCP reaches its context.

The tools remember/recall/forget kept key-value notes that no context shows; they now keep the
agent's long-term memories, which its contexts show. Through the official `mcp` client, over
stdio (the `recall mcp` command) and in process; the older key form keeps working, notes stored
before included."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from recall import Recall
from recall.server.inbox import Notifier
from recall.server.mcp import build_mcp_server
from recall.settings import Settings
from tests.server.test_mcp import RECALL, make_world, ok, text


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def context_text(context: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in context["messages"])


@pytest.mark.anyio
async def test_remembered_over_stdio_reaches_the_agents_context(tmp_path: Path) -> None:
    db = tmp_path / "recall.db"
    with Recall(db, Settings()) as mem:
        make_world(mem)
    # The command imports the code under test (PYTHONPATH included), as the user's client starts it.
    params = StdioServerParameters(
        command=RECALL, args=["--db", str(db), "mcp", "--world", "w", "--agent", "agent-a"], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name in ("remember", "recall", "forget", "memories"):
            assert "context" in (tools[name].description or ""), name  # each says what reaches the context

        kept = ok(await session.call_tool("remember", {"content": "Maria is a VIP customer: answer her first"}))
        assert kept["owner"] == "agent-a" and kept["importance"] == 5

        with Recall(db, Settings()) as other:  # a new message, from another process
            other.world("w").post("maria", "@agent-a hello, where is my parcel?")

        seen = context_text(ok(await session.call_tool("context", {})))
        assert "Maria is a VIP customer: answer her first" in seen
        assert "@agent-a hello, where is my parcel?" in seen
        # The agent's own: another agent's context does not show it.
        assert "VIP" not in context_text(ok(await session.call_tool("context", {"agent": "agent-b"})))

        found = ok(await session.call_tool("recall", {"query": "which customers are VIPs?"}))["results"]
        assert [(r["kind"], r["source_id"]) for r in found] == [("memory", kept["id"])]

        assert ok(await session.call_tool("forget", {"memory_id": kept["id"]})) == {"forgotten": True}
        assert ok(await session.call_tool("forget", {"memory_id": kept["id"]})) == {"forgotten": False}
        assert "VIP" not in context_text(ok(await session.call_tool("context", {})))

        refused = await session.call_tool("recall", {})
        assert refused.is_error and "query: say what to look for" in text(refused)


@pytest.mark.anyio
async def test_the_key_form_keeps_a_memory_under_a_key_and_reads_older_notes(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings()) as mem:
        make_world(mem)
        # A note an older recall kept through `remember`: still readable, and forgettable.
        mem.service.agent_state.remember("w", "agent-a", "old", {"tier": "gold"})
        async with Client(build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")) as client:
            assert ok(await client.call_tool("recall", {"key": "old"}))["value"] == {"tier": "gold"}

            first = ok(await client.call_tool("remember", {"key": "maria", "value": "VIP, answer first"}))
            assert (first["key"], first["value"], first["content"]) == (
                "maria",
                "VIP, answer first",
                "maria: VIP, answer first",
            )
            again = ok(await client.call_tool("remember", {"key": "maria", "value": {"tier": "VIP"}}))
            assert again["id"] == first["id"] and again["content"] == 'maria: {"tier": "VIP"}'  # written over
            assert [m.content for m in mem.world("w").agent("agent-a").memories()] == ['maria: {"tier": "VIP"}']
            assert ok(await client.call_tool("recall", {"key": "maria"}))["value"] == {"tier": "VIP"}

            mem.world("w").post("maria", "@agent-a hi")
            assert 'maria: {"tier": "VIP"}' in context_text(
                {"messages": mem.world("w").agent("agent-a").context().openai()}
            )

            assert ok(await client.call_tool("forget", {"key": "maria"})) == {"forgotten": True}
            assert ok(await client.call_tool("forget", {"key": "old"})) == {"forgotten": True}
            for key in ("maria", "old"):
                gone = await client.call_tool("recall", {"key": key})
                assert gone.is_error and f"no memory under {key!r}" in text(gone)
            assert mem.world("w").agent("agent-a").memories() == []
            assert mem.service.agent_state.notes("w", "agent-a") == []

            shared = await client.call_tool("remember", {"key": "k", "value": 1, "shared": True})
            assert shared.is_error and "shared" in text(shared)
            keyless = await client.call_tool("remember", {"content": "x", "value": 1})
            assert keyless.is_error and "key: a value is kept under a key" in text(keyless)
            nothing = await client.call_tool("remember", {})
            assert nothing.is_error and "content: say what to remember" in text(nothing)

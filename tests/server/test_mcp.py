"""MCP tools through the official `mcp` client: over stdio (`recall mcp`) and streamable HTTP at /mcp."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from recall import Recall, World
from recall.server.app import create_app
from recall.server.config import ApiKey, ServerConfig
from recall.server.deps import ServerState
from recall.server.inbox import Notifier
from recall.server.mcp import build_mcp_server
from recall.server.mcp_http import mount_mcp
from recall.server.ratelimit import RateLimiter
from recall.settings import Settings
from tests.server.conftest import running

RECALL = str(Path(sys.executable).with_name("recall"))
TOOLS = {"messages", "context", "remember", "recall", "forget", "facts", "memories", "search"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_world(mem: Recall) -> None:
    add_people(mem.world("w", create=True))


def add_people(world: World) -> None:
    world.add_agent("agent-a", system_prompt="You are A.")
    world.add_agent("agent-b", system_prompt="You are B.")
    world.add_human("maria")


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return result.structured_content


# -- stdio -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_stdio_tools(tmp_path: Path) -> None:
    db = tmp_path / "recall.db"
    with Recall(db, Settings()) as mem:
        make_world(mem)
        old = mem.world("w").post("maria", "The invoice went to my office address in Lyon.", chat="spring")
        mem.world("w").agent("agent-a").ack([old])  # answered back then
        first = mem.world("w").post("maria", "@agent-a where is my invoice?")

    params = StdioServerParameters(command=RECALL, args=["--db", str(db), "mcp", "--world", "w", "--agent", "agent-a"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        assert "default 'w'" in json.dumps(tools["messages"].input_schema)

        checked = ok(
            await session.call_tool("messages", {"action": "check", "mark_read": True, "include_context": True})
        )
        assert [m["id"] for m in checked["new_mentions"]] == [first.id]
        # The recalled past comes with the context: the passage from another chat, with its rank.
        assert "maria: The invoice went to my office address in Lyon." in checked["recalled"]["content"]
        assert [p["rank"] for p in checked["recalled"]["passages"] if p["id"] == old.id][0] >= 1

        sent = ok(
            await session.call_tool(
                "messages", {"action": "send", "content": "@maria on its way", "parent_id": first.id}
            )
        )
        assert sent["mentions"] == ["maria"] and sent["thread_id"] == first.id

        ctx = ok(await session.call_tool("context", {"agent": "agent-a"}))
        assert ctx["messages"][0] == {"role": "system", "content": "You are A."}
        assert {"role": "user", "content": "@agent-a where is my invoice?", "name": "maria"} in ctx["messages"]
        assert "report" in ctx
        anthropic = ok(await session.call_tool("context", {"format": "anthropic"}))
        # The recalled past is a system message: in the anthropic format, part of `system`.
        assert anthropic["system"].startswith("You are A.\n\nSimilar past interactions that may be relevant:")

        item = ok(await session.call_tool("remember", {"key": "k", "value": {"n": [1, 2]}, "ttl": 60}))
        assert item["value"] == {"n": [1, 2]} and item["expires_at"] is not None
        assert ok(await session.call_tool("recall", {"key": "k"}))["value"] == {"n": [1, 2]}
        assert ok(await session.call_tool("forget", {"key": "k"})) == {"forgotten": True}
        gone = await session.call_tool("recall", {"key": "k"})
        assert gone.is_error and "no memory under 'k'" in text(gone)

        # Invalid calls come back as tool errors that say what was wrong; the server lives on.
        bad = await session.call_tool("messages", {"action": "check", "limit": 0})
        assert bad.is_error and "limit" in text(bad)
        unknown = await session.call_tool("messages", {"action": "check", "agent": "nobody"})
        assert unknown.is_error and "unknown agent 'nobody' in world 'w'" in text(unknown)
        empty = await session.call_tool("messages", {"action": "send"})
        assert empty.is_error and "content: must be non-empty text" in text(empty)

        # A waiting check over stdio also sees posts by other processes (it looks every second).
        results: list[CallToolResult] = []
        async with anyio.create_task_group() as tg:

            async def waiter() -> None:
                args = {"action": "check", "wait": True, "timeout": 20}
                results.append(await session.call_tool("messages", args))

            tg.start_soon(waiter)
            await anyio.sleep(0.2)
            started = time.monotonic()
            with Recall(db, Settings()) as other:
                other.world("w").post("maria", "@agent-a still there?")
        assert time.monotonic() - started < 5
        assert [m["content"] for m in ok(results[0])["new_mentions"]] == ["@agent-a still there?"]

    with Recall(db, Settings()) as mem:
        stored = [m for m in mem.world("w").messages() if m.sender == "agent-a"]
        assert stored[-1].id == sent["message_id"]
        assert (stored[-1].sender, stored[-1].content) == ("agent-a", "@maria on its way")


def test_stdio_refuses_an_unknown_default_agent(tmp_path: Path) -> None:
    import subprocess

    db = tmp_path / "recall.db"
    with Recall(db, Settings()) as mem:
        make_world(mem)
    done = subprocess.run(
        [RECALL, "--db", str(db), "mcp", "--world", "w", "--agent", "nobody"],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "unknown agent 'nobody'" in done.stderr


@pytest.mark.anyio
async def test_rate_limit_and_defaults_in_process(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings()) as mem:
        make_world(mem)
        server = build_mcp_server(mem.service, Notifier(), limiter=RateLimiter(2), world="w")
        async with Client(server) as client:
            missing = await client.call_tool("recall", {"key": "k"})
            assert missing.is_error and "agent: name the agent" in text(missing)
            assert not (await client.call_tool("forget", {"key": "k", "agent": "agent-a"})).is_error
            assert not (await client.call_tool("forget", {"key": "k", "agent": "agent-a"})).is_error
            limited = await client.call_tool("forget", {"key": "k", "agent": "agent-a"})
            assert limited.is_error and "rate limit reached" in text(limited)


# -- streamable HTTP ---------------------------------------------------------------------------


@dataclass
class Served:
    url: str
    app: FastAPI

    @property
    def state(self) -> ServerState:
        state: ServerState = self.app.state.recall
        return state


@asynccontextmanager
async def mcp_session(url: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10, read=60)) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def serve(tmp_path: Path, config: ServerConfig) -> Iterator[Served]:
    with Recall(tmp_path / "server.db", Settings()) as mem:
        app = create_app(mem.service, config)
        mount_mcp(app)
        with running(app) as url:
            yield Served(url, app)


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[Served]:
    for served in serve(tmp_path, ServerConfig(rate_limit=0)):
        # Through the server's own service: a second Recall on its store would start an indexer
        # nobody closes, which outlives the store.
        add_people(World(served.state.service, served.state.service.worlds.create_world("w")))
        yield served


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Served]:
    keys = (ApiKey("k-a", "acme", "agent-a"), ApiKey("k-admin", "acme"), ApiKey("k-globex", "globex"))
    for served in serve(tmp_path, ServerConfig(keys=keys, rate_limit=0)):
        with httpx.Client(base_url=served.url, headers={"Authorization": "Bearer k-admin"}) as c:
            c.post("/v1/worlds", json={"id": "w"}).raise_for_status()
            for agent in ("agent-a", "agent-b"):
                c.post("/v1/worlds/w/agents", json={"id": agent}).raise_for_status()
            c.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
        yield served


@pytest.mark.anyio
async def test_http_waiting_check_wakes_on_a_rest_post(open_server: Served) -> None:
    results: list[CallToolResult] = []
    async with mcp_session(open_server.url) as session:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        args = {"action": "check", "world": "w", "agent": "agent-b", "wait": True, "timeout": 20}
        started = time.monotonic()
        async with anyio.create_task_group() as tg:

            async def waiter() -> None:
                results.append(await session.call_tool("messages", args))

            tg.start_soon(waiter)
            with anyio.fail_after(5):
                while open_server.state.notifier.waiting() == 0:
                    await anyio.sleep(0.01)
            async with httpx.AsyncClient(base_url=open_server.url) as http:
                posted = await http.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-b hi"})
                assert posted.status_code == 201, posted.text
    assert time.monotonic() - started < 10
    assert [m["content"] for m in ok(results[0])["new_mentions"]] == ["@agent-b hi"]


@pytest.mark.anyio
async def test_http_send_wakes_another_agents_check(open_server: Served) -> None:
    results: list[CallToolResult] = []
    async with (
        mcp_session(open_server.url) as a,
        mcp_session(open_server.url) as b,
        anyio.create_task_group() as tg,
    ):

        async def waiter() -> None:
            args = {"action": "check", "world": "w", "agent": "agent-b", "wait": True, "timeout": 20}
            results.append(await b.call_tool("messages", args))

        tg.start_soon(waiter)
        with anyio.fail_after(5):
            while open_server.state.notifier.waiting() == 0:
                await anyio.sleep(0.01)
        args = {"action": "send", "world": "w", "agent": "agent-a", "content": "@agent-b your turn"}
        ok(await a.call_tool("messages", args))
    assert [m["sender"] for m in ok(results[0])["new_mentions"]] == ["agent-a"]


def test_http_routes_stay_rest_shaped(open_server: Served) -> None:
    # /mcp is one route, not a catch-all: unknown REST paths keep recall's JSON errors.
    with httpx.Client(base_url=open_server.url) as c:
        missing = c.get("/v1/nope")
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"
        assert c.get("/healthz").json() == {"status": "ok"}


@pytest.mark.anyio
async def test_http_requires_keys_like_rest(secured: Served) -> None:
    async with httpx.AsyncClient(base_url=secured.url) as http:
        refused = await http.post("/mcp", json={}, headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert refused.json()["error"]["message"].startswith("missing API key")
        wrong = await http.post("/mcp", json={}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "unknown API key"
    # The official client fails at connect, before any session exists.
    with pytest.raises(BaseExceptionGroup) as failed:
        async with mcp_session(secured.url):
            pass
    assert failed.group_contains(MCPError)

    async with mcp_session(secured.url, "k-a") as session:
        mine = await session.call_tool("remember", {"world": "w", "agent": "agent-a", "key": "k", "value": 1})
        assert ok(mine)["value"] == 1
        other = await session.call_tool("remember", {"world": "w", "agent": "agent-b", "key": "k", "value": 1})
        assert other.is_error and "acts only as agent 'agent-a', not 'agent-b'" in text(other)

    async with mcp_session(secured.url, "k-globex") as session:
        foreign = await session.call_tool("context", {"world": "w", "agent": "agent-a"})
        assert foreign.is_error and "unknown world 'w'" in text(foreign)

    async with mcp_session(secured.url, "k-admin") as session:
        # A tenant key may act as any agent of its tenant's worlds.
        ctx = ok(await session.call_tool("context", {"world": "w", "agent": "agent-b"}))
        assert ctx["report"]["total_tokens"] >= 0


# -- facts, memories, search -------------------------------------------------------------------


@pytest.mark.anyio
async def test_facts_and_memories_tools_in_process(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings()) as mem:
        make_world(mem)
        server = build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")
        async with Client(server) as client:
            added = ok(
                await client.call_tool("facts", {"action": "add", "scope": "user:maria", "content": "Likes tea"})
            )
            assert added["scope"] == "user:maria" and added["category"] == "knowledge"
            updated = ok(
                await client.call_tool(
                    "facts", {"action": "update", "scope": "user:maria", "fact_id": added["id"], "confidence": 0.8}
                )
            )
            assert updated["confidence"] == 0.8
            ok(await client.call_tool("facts", {"action": "set_sections", "scope": "user:maria",
                                                 "sections": {"top_of_mind": "A cake"}}))  # fmt: skip
            listed = ok(await client.call_tool("facts", {"action": "list", "scope": "user:maria"}))
            assert [f["content"] for f in listed["facts"]] == ["Likes tea"]
            assert listed["sections"] == {"top_of_mind": "A cake"}
            exported = ok(await client.call_tool("facts", {"action": "export", "scope": "user:maria"}))
            imported = ok(await client.call_tool("facts", {"action": "import", "scope": "user:bob", "data": exported}))
            assert imported["added"] == 1
            other = await client.call_tool("facts", {"action": "list", "scope": "agent:w/agent-b"})
            assert other.is_error and "another agent's facts" in text(other)
            bad = await client.call_tool("facts", {"action": "delete", "scope": "user:maria"})
            assert bad.is_error and "fact_id" in text(bad)

            note = ok(
                await client.call_tool("memories", {"action": "add", "content": "Maria tips well", "importance": 8})
            )
            assert note["owner"] == "agent-a"
            ok(await client.call_tool("memories", {"action": "add", "content": "Shared rule", "shared": True}))
            b_view = ok(await client.call_tool("memories", {"action": "list", "agent": "agent-b"}))
            assert [m["content"] for m in b_view["memories"]] == ["Shared rule"]
            stolen = await client.call_tool(
                "memories", {"action": "delete", "agent": "agent-b", "memory_id": note["id"]}
            )
            assert stolen.is_error and "unknown memory" in text(stolen)
            found = ok(await client.call_tool("search", {"query": "shared rule", "kinds": ["memory"]}))
            top = found["results"][0]
            assert top["text"] == "Shared rule"
            # The same explained hit as over REST: what ran, each method's rank, the similarity.
            assert {"method", "keyword_rank", "vector_rank", "similarity", "score"} <= set(top)
            assert top["keyword_rank"] == 1


@pytest.mark.anyio
async def test_the_memories_tool_updates_in_place_and_sets_expiry(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0, embeddings="none")) as mem:
        make_world(mem)
        server = build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "update" in json.dumps(tools["memories"].input_schema)
            added = ok(await client.call_tool("memories", {"action": "add", "content": "Maria tips well", "ttl": 600}))
            assert added["owner"] == "agent-a" and added["expires_at"] is not None
            assert (added["type"], added["importance"]) == ("note", 5)  # the defaults of add
            changed = ok(
                await client.call_tool(
                    "memories",
                    {"action": "update", "memory_id": added["id"], "content": "Maria tips very well", "importance": 7},
                )
            )
            assert (changed["id"], changed["created_at"], changed["expires_at"]) == (
                added["id"],
                added["created_at"],
                added["expires_at"],
            )
            assert (changed["content"], changed["importance"], changed["type"]) == ("Maria tips very well", 7, "note")
            found = ok(await client.call_tool("search", {"query": "very well", "kinds": ["memory"], "method": "bm25"}))
            assert [r["text"] for r in found["results"]] == ["Maria tips very well"]
            args = {"action": "update", "memory_id": added["id"]}
            cleared = ok(await client.call_tool("memories", {**args, "clear_expiry": True}))
            assert cleared["expires_at"] is None
            moved = ok(await client.call_tool("memories", {**args, "expires_at": "2099-01-01T00:00:00Z"}))
            assert moved["expires_at"] == "2099-01-01T00:00:00+00:00"

            both = await client.call_tool("memories", {**args, "ttl": 60, "clear_expiry": True})
            assert both.is_error and "clear_expiry" in text(both)
            past = await client.call_tool("memories", {**args, "expires_at": "2001-01-01T00:00:00Z"})
            assert past.is_error and "expires_at" in text(past) and "future" in text(past)
            nothing = await client.call_tool("memories", args)
            assert nothing.is_error and "changes" in text(nothing)
            unnamed = await client.call_tool("memories", {"action": "update", "content": "x"})
            assert unnamed.is_error and "memory_id: update needs the id" in text(unnamed)
            stolen = await client.call_tool("memories", {**args, "agent": "agent-b", "content": "Maria never tips"})
            assert stolen.is_error and "unknown memory" in text(stolen)
            shared = ok(await client.call_tool("memories", {"action": "add", "content": "Be kind", "shared": True}))
            refused = await client.call_tool(
                "memories", {"action": "update", "memory_id": shared["id"], "content": "Be rude"}
            )
            assert refused.is_error and "an agent updates only its own memories" in text(refused)
            listed = ok(await client.call_tool("memories", {"action": "list"}))
            assert [(m["content"], m["expires_at"]) for m in listed["memories"]] == [
                ("Maria tips very well", "2099-01-01T00:00:00+00:00"),
                ("Be kind", None),
            ]


@pytest.mark.anyio
async def test_http_agent_key_cannot_reach_another_agents_facts(secured: Served) -> None:
    async with mcp_session(secured.url, "k-a") as session:
        denied = await session.call_tool("facts", {"action": "list", "scope": "agent:w/agent-b", "world": "w"})
        assert denied.is_error and "another agent's facts" in text(denied)
        as_b = await session.call_tool(
            "facts", {"action": "list", "scope": "user:maria", "world": "w", "agent": "agent-b"}
        )
        assert as_b.is_error and "acts only as agent 'agent-a'" in text(as_b)
        mine = ok(await session.call_tool("facts", {"action": "list", "scope": "agent:w/agent-a", "world": "w",
                                                     "agent": "agent-a"}))  # fmt: skip
        assert mine == {"facts": [], "sections": {}}


@pytest.mark.anyio
async def test_http_tools_act_in_the_callers_own_world_of_an_id(secured: Served) -> None:
    """World ids are per tenant (spec §8): globex creates a `w` of its own beside acme's, and each
    key's tools reach only its tenant's `w` (messages, sends, agent facts)."""
    with httpx.Client(base_url=secured.url, headers={"Authorization": "Bearer k-globex"}) as c:
        assert c.post("/v1/worlds", json={"id": "w"}).status_code == 201
        c.post("/v1/worlds/w/agents", json={"id": "agent-a"}).raise_for_status()
        c.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
        c.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-a globex task"}).raise_for_status()
    mine = {"world": "w", "agent": "agent-a"}
    async with mcp_session(secured.url, "k-globex") as session:
        checked = ok(await session.call_tool("messages", {"action": "check", **mine}))
        assert [(m["content"], m["world_id"]) for m in checked["new_mentions"]] == [("@agent-a globex task", "w")]
        ok(await session.call_tool("messages", {"action": "send", "content": "on it", **mine}))
        added = {"action": "add", "scope": "agent:w/agent-a", "content": "globex fact", **mine}
        assert ok(await session.call_tool("facts", added))["content"] == "globex fact"
    async with mcp_session(secured.url, "k-a") as session:  # acme's agent-a, in acme's `w`
        assert ok(await session.call_tool("messages", {"action": "check", **mine}))["new_mentions"] == []
        listed = ok(await session.call_tool("facts", {"action": "list", "scope": "agent:w/agent-a", **mine}))
        assert listed == {"facts": [], "sections": {}}
    with httpx.Client(base_url=secured.url, headers={"Authorization": "Bearer k-admin"}) as c:
        assert c.get("/v1/worlds/w/messages").json()["messages"] == []

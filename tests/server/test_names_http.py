"""Issue 44, point 9 over REST, MCP and the CLI: a world's search finds its people's facts, and a
misspelt world or agent id is a 404 (exit 1) naming the close ids of the caller's own."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from recall import Recall, Settings
from recall.cli import app
from recall.server.inbox import Notifier
from recall.server.mcp import build_mcp_server
from tests.server.conftest import LiveServer
from tests.server.test_mcp import make_world, ok, text


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_rest_world_search_finds_the_facts_of_its_people(client: httpx.Client) -> None:
    added = client.post("/v1/scopes/user:maria/facts", json={"content": "Drinks only green tea"})
    assert added.status_code in (200, 201), added.text
    client.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "coffee beans, please"})
    for path in ("/v1/worlds/w/search", "/v1/worlds/w/agents/agent-a/search"):
        found = client.post(path, json={"query": "green tea"})
        assert found.status_code == 200, found.text
        facts = [(h["kind"], h["scope"], h["text"]) for h in found.json()["results"] if h["kind"] == "fact"]
        assert facts == [("fact", "user:maria", "Drinks only green tea")], path


def test_rest_404s_name_the_close_ids(client: httpx.Client) -> None:
    world = client.get("/v1/worlds/ww/memories")
    assert world.status_code == 404 and "unknown world 'ww' (did you mean 'w'?)" in world.text
    agent = client.get("/v1/worlds/w/agents/agent-c/inbox")
    assert agent.status_code == 404
    message = agent.json()["error"]["message"]
    assert message.startswith("unknown agent 'agent-c' in world 'w' (did you mean ") and "'agent-a'" in message


def test_a_tenant_is_never_told_another_tenants_world_ids(secured: LiveServer) -> None:
    with secured.client("globex-admin") as globex:
        globex.post("/v1/worlds", json={"id": "globex-w"}).raise_for_status()
    with secured.client("acme-admin") as acme:
        near = acme.get("/v1/worlds/globex-ww/memories")
        assert near.status_code == 404 and "globex-w'" not in near.text and "did you mean" not in near.text
        own = acme.get("/v1/worlds/w2/memories")
        assert own.status_code == 404 and "(did you mean 'w'?)" in own.text


def test_cli_names_the_close_ids(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    with Recall(db, Settings()) as mem:
        mem.world("support", create=True).add_agent("triage")
    runner = CliRunner()
    world = runner.invoke(app, ["--db", str(db), "search", "suport", "invoice"])
    assert world.exit_code == 1 and "did you mean 'support'?" in world.output, world.output
    agent = runner.invoke(app, ["--db", str(db), "agent", "show", "support", "triag"])
    assert agent.exit_code == 1 and "did you mean 'triage'?" in agent.output, agent.output


@pytest.mark.anyio
async def test_mcp_search_finds_people_facts_and_names_close_agents(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings()) as mem:
        make_world(mem)
        mem.scope("user:maria").add("Drinks only green tea")
        async with Client(build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")) as client:
            found = ok(await client.call_tool("search", {"query": "green tea", "kinds": ["fact"]}))["results"]
            assert [(h["scope"], h["text"]) for h in found] == [("user:maria", "Drinks only green tea")]
            misspelt = await client.call_tool("context", {"agent": "agent-aa"})
            assert misspelt.is_error and "unknown agent 'agent-aa' in world 'w' (did you mean 'agent-a'" in text(
                misspelt
            )

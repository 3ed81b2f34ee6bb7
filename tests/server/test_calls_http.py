"""Recorded model calls over REST and MCP (issue 25): a context fetched with `record`, an inbox
check with context, listing, replay, compare, and who may read them."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp import Client

from recall import Recall, Settings
from recall.server.inbox import Notifier
from recall.server.mcp import build_mcp_server
from tests.server.conftest import LiveServer
from tests.server.test_mcp import make_world, ok


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_record_list_read_replay_and_compare_over_rest(client: httpx.Client) -> None:
    for i in range(3):
        client.post("/v1/worlds/w/messages", json={"sender": "maria", "content": f"@agent-a note {i}"})
        client.post("/v1/worlds/w/agents/agent-a/send", json={"content": f"noted {i}"})
    asked = client.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-a and now?"}).json()
    plain = client.post("/v1/worlds/w/agents/agent-a/context", json={"message_id": asked["id"]}).json()
    assert "call_id" not in plain
    built = client.post("/v1/worlds/w/agents/agent-a/context", json={"message_id": asked["id"], "record": True})
    call_id = built.json()["call_id"]
    assert built.json()["messages"] == plain["messages"]

    listed = client.get("/v1/worlds/w/agents/agent-a/calls").json()["calls"]
    assert [c["id"] for c in listed] == [call_id] and listed[0]["source"] == "rest"
    call = client.get(f"/v1/worlds/w/agents/agent-a/calls/{call_id}").json()
    assert call["trigger_id"] == asked["id"] and call["total_tokens"] == built.json()["report"]["total_tokens"]
    assert {i["section"] for i in call["items"] if i["included"]} >= {"history", "incoming"}

    replay = client.get(f"/v1/worlds/w/agents/agent-a/calls/{call_id}/replay").json()
    assert replay["identical"] is True and replay["messages"] == built.json()["messages"]
    shallow = client.post(f"/v1/worlds/w/agents/agent-a/calls/{call_id}/compare", json={"history_limit": 1}).json()
    assert shallow["identical"] is False
    assert shallow["diff"]["settings"]["history_limit"] == {"a": 25, "b": 1}
    # What the shorter history leaves out goes, or moves into the recalled past.
    changes = shallow["diff"]["items"]
    assert {c["change"] for c in changes} == {"removed", "moved"}
    assert all(c["b"]["reason"] == "over-depth" for c in changes if c["change"] == "removed")
    assert all(
        (c["a"]["section"], c["b"]["section"]) == ("history", "recalled") for c in changes if c["change"] == "moved"
    )

    assert client.get("/v1/worlds/w/agents/agent-a/calls/c_nothing").status_code == 404
    bad = client.post(f"/v1/worlds/w/agents/agent-a/calls/{call_id}/compare", json={"history_limit": -1})
    assert bad.status_code == 422
    assert client.get("/v1/worlds/w/agents/agent-a/calls", params={"limit": 0}).status_code == 422


def test_an_inbox_check_with_context_records_the_call(client: httpx.Client) -> None:
    asked = client.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-b hello"}).json()
    checked = client.get("/v1/worlds/w/agents/agent-b/inbox", params={"include_context": "true"}).json()
    call = client.get(f"/v1/worlds/w/agents/agent-b/calls/{checked['call_id']}").json()
    assert (call["source"], call["trigger_id"]) == ("inbox", asked["id"])
    quiet = client.get("/v1/worlds/w/agents/agent-b/inbox", params={"include_context": "true", "record": "false"})
    assert "call_id" not in quiet.json()
    assert "call_id" not in client.get("/v1/worlds/w/agents/agent-b/inbox").json()


def test_an_agent_key_reads_only_its_own_calls(secured: LiveServer) -> None:
    with secured.client("acme-a") as a, secured.client("acme-b") as b:
        call_id = a.post("/v1/worlds/w/agents/agent-a/context", json={"record": True}).json()["call_id"]
        assert a.get(f"/v1/worlds/w/agents/agent-a/calls/{call_id}").status_code == 200
        assert b.get(f"/v1/worlds/w/agents/agent-a/calls/{call_id}").status_code == 403
        assert b.get("/v1/worlds/w/agents/agent-a/calls").status_code == 403
        # Under its own name the other agent finds no such call either.
        assert b.get(f"/v1/worlds/w/agents/agent-b/calls/{call_id}").status_code == 404


@pytest.mark.anyio
async def test_mcp_context_records_a_call(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings(index_interval=0)) as mem:
        make_world(mem)
        mem.world("w").post("maria", "@agent-a hello")
        server = build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")
        async with Client(server) as client:
            built = ok(await client.call_tool("context", {"record": True}))
            plain = ok(await client.call_tool("context", {}))
        assert "call_id" not in plain
        call = mem.world("w").agent("agent-a").call(built["call_id"])
        assert call.source == "mcp" and mem.world("w").agent("agent-a").replay(call.id).identical


def test_an_outcome_is_reported_on_the_agents_own_calls_only(secured: LiveServer) -> None:
    with secured.client("acme-a") as a, secured.client("acme-b") as b:
        call_id = a.post("/v1/worlds/w/agents/agent-a/context", json={"record": True}).json()["call_id"]
        url = f"/v1/worlds/w/agents/agent-a/calls/{call_id}/outcome"
        assert b.post(url, json={"error": "down"}).status_code == 403
        assert b.post(f"/v1/worlds/w/agents/agent-b/calls/{call_id}/outcome", json={}).status_code == 404
        empty = a.post(url, json={"error": ""})
        assert empty.status_code == 422 and "error" in empty.text
        assert a.post(url, json={"error": "x" * 2001}).status_code == 422
        assert a.get(f"/v1/worlds/w/agents/agent-a/calls/{call_id}").json()["outcome"] is None  # nothing changed
        failed = a.post(url, json={"error": "the model server timed out"}).json()
        assert failed == {"id": call_id, "outcome": "failed", "error": "the model server timed out"}
        answered = a.post(url, json={}).json()  # reported again: the last report stands
        assert (answered["outcome"], answered["error"]) == ("answered", None)
        listed = a.get("/v1/worlds/w/agents/agent-a/calls").json()["calls"]
        assert [(c["id"], c["outcome"]) for c in listed] == [(call_id, "answered")]


def test_calls_before_a_time_take_a_naive_time_as_utc_and_refuse_one_out_of_range(client: httpx.Client) -> None:
    call_id = client.post("/v1/worlds/w/agents/agent-a/context", json={"record": True}).json()["call_id"]
    later = client.get("/v1/worlds/w/agents/agent-a/calls", params={"before": "9000-01-01T00:00:00"})
    assert [c["id"] for c in later.json()["calls"]] == [call_id]
    assert client.get("/v1/worlds/w/agents/agent-a/calls", params={"before": "2001-01-01T00:00:00"}).json() == {
        "calls": []
    }
    far = client.get("/v1/worlds/w/agents/agent-a/calls", params={"before": "0001-01-01T00:00:00"})
    assert far.status_code == 422 and "before" in far.text

"""Metadata filters in search over REST (a real server, on both stores) and MCP (the real client)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp import Client

from recall import Recall, Settings
from recall.server.inbox import Notifier
from recall.server.mcp import build_mcp_server
from tests.server.test_mcp import make_world, ok, text

#: (content, metadata) of what maria says, all about a parcel.
SAID = (
    ("my parcel was lost in Lyon", {"channel": "sms", "priority": 2}),
    ("my parcel is late again", {"channel": "email", "priority": 5}),
    ("where is my parcel", {}),
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def texts(results: list[dict[str, object]]) -> set[object]:
    return {hit["text"] for hit in results}


def test_rest_search_takes_a_metadata_filter(client: httpx.Client) -> None:
    for content, metadata in SAID:
        sent = {"sender": "maria", "content": content, "metadata": metadata}
        client.post("/v1/worlds/w/messages", json=sent).raise_for_status()
    memory = {"content": "parcels go through the Paris depot", "metadata": {"channel": "sms"}}
    client.post("/v1/worlds/w/agents/agent-a/memories", json=memory).raise_for_status()

    def search(path: str, metadata: object, **more: object) -> httpx.Response:
        return client.post(path, json={"query": "parcel", "metadata": metadata, **more})

    sms = search("/v1/worlds/w/search", {"channel": "sms"})
    assert sms.status_code == 200, sms.text
    assert texts(sms.json()["results"]) == {"maria: my parcel was lost in Lyon", "parcels go through the Paris depot"}
    numbers = search("/v1/worlds/w/search", {"priority": {"$gte": 3}}, method="bm25")
    assert texts(numbers.json()["results"]) == {"maria: my parcel is late again"}
    either = search("/v1/worlds/w/search", {"channel": {"$in": ["sms", "email"]}}, kinds=["message"])
    assert len(either.json()["results"]) == 2
    # Agent b does not see agent a's private memory; agent a does.
    assert texts(search("/v1/worlds/w/agents/agent-b/search", {"channel": "sms"}).json()["results"]) == {
        "maria: my parcel was lost in Lyon"
    }
    assert len(search("/v1/worlds/w/agents/agent-a/search", {"channel": "sms"}).json()["results"]) == 2

    refused = search("/v1/worlds/w/search", {"channel": {"$regex": "s"}})
    assert refused.status_code == 422 and "metadata.channel" in refused.text and "$regex" in refused.text
    assert search("/v1/worlds/w/search", ["channel"]).status_code == 422
    too_many = search("/v1/worlds/w/search", {"channel": {"$in": []}})
    assert too_many.status_code == 422 and "metadata.channel.$in" in too_many.text


@pytest.mark.anyio
async def test_mcp_search_takes_a_metadata_filter(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings(index_interval=0)) as mem:
        make_world(mem)
        for content, metadata in SAID:
            mem.world("w").post("maria", content, metadata=metadata)
        server = build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")
        async with Client(server) as client:
            sms = ok(await client.call_tool("search", {"query": "parcel", "metadata": {"channel": "sms"}}))
            assert texts(sms["results"]) == {"maria: my parcel was lost in Lyon"}
            late = {"query": "parcel", "metadata": {"priority": {"$gt": 2}}, "method": "bm25"}
            assert texts(ok(await client.call_tool("search", late))["results"]) == {"maria: my parcel is late again"}
            refused = await client.call_tool("search", {"query": "parcel", "metadata": {"channel": {"$near": 1}}})
            assert refused.is_error and "metadata.channel" in text(refused) and "$near" in text(refused)

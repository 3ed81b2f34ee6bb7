"""Search scores (relevance, 0..1) and `min_score` over REST and MCP (issue 24, point 5)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp import Client

from recall import Recall, Settings
from recall.server.inbox import Notifier
from recall.server.mcp import build_mcp_server
from tests.server.test_mcp import make_world, ok, text

CLEAR = "when does the shop open?"
ANSWER = "The shop opens at nine every morning and closes at six."
OTHERS = ("My parcel never arrived, can you check the courier?", "Do you sell green tea?")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_rest_search_scores_and_min_score(client: httpx.Client) -> None:
    for content in (ANSWER, *OTHERS):
        client.post("/v1/worlds/w/messages", json={"sender": "maria", "content": content}).raise_for_status()
    every = client.post("/v1/worlds/w/search", json={"query": CLEAR}).json()["results"]
    assert every[0]["text"].endswith(ANSWER) and len(every) >= 2
    assert all(0 <= hit["score"] <= 1 for hit in every)
    strong = client.post("/v1/worlds/w/search", json={"query": CLEAR, "min_score": 0.7}).json()["results"]
    assert [hit["text"] for hit in strong] == [every[0]["text"]]
    mine = client.post("/v1/worlds/w/agents/agent-a/search", json={"query": CLEAR, "min_score": 0.7})
    assert [hit["text"] for hit in mine.json()["results"]] == [every[0]["text"]]
    refused = client.post("/v1/worlds/w/search", json={"query": CLEAR, "min_score": 1.5})
    assert refused.status_code == 422 and "min_score" in refused.text


@pytest.mark.anyio
async def test_mcp_search_takes_min_score(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings(index_interval=0)) as mem:
        make_world(mem)
        for content in (ANSWER, *OTHERS):
            mem.world("w").post("maria", content)
        server = build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")
        async with Client(server) as client:
            every = ok(await client.call_tool("search", {"query": CLEAR}))["results"]
            assert len(every) >= 2 and all(0 <= hit["score"] <= 1 for hit in every)
            strong = ok(await client.call_tool("search", {"query": CLEAR, "min_score": 0.7}))["results"]
            assert [hit["text"] for hit in strong] == [every[0]["text"]] and every[0]["text"].endswith(ANSWER)
            refused = await client.call_tool("search", {"query": CLEAR, "min_score": -1})
            assert refused.is_error and "min_score" in text(refused)

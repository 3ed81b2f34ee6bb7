"""Over REST and MCP, a memory or fact is found by its meaning as soon as the request that
writes it is answered, and a clear match scores above the documented `min_score=0.3` while
unrelated ones score under it (issue 44, points 5 and 6; the Python API and the LangGraph
store: tests/test_found_by_meaning.py). No background indexer runs: the vector is stored
before the write answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from recall import Recall, Settings
from recall.server.config import ServerConfig
from recall.server.inbox import Notifier
from recall.server.mcp import build_mcp_server
from tests.server.conftest import LiveServer, create_world_w, start_server, stop_server
from tests.server.test_mcp import make_world, ok
from tests.test_found_by_meaning import DOCUMENTED, OTHERS, PAIRS, UNRELATED


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def unindexed(store_location: str) -> Iterator[LiveServer]:
    """A server without the background indexer, with world `w`."""
    server = start_server(store_location, ServerConfig(rate_limit=0), Settings(index_interval=0))
    with server.client() as c:
        create_world_w(c)
    yield server
    stop_server(server)


def test_rest_memories_and_facts_are_found_by_meaning_at_once(unindexed: LiveServer) -> None:
    with unindexed.client() as c:
        ids = []
        for text, _ in PAIRS:
            created = c.post("/v1/worlds/w/memories", json={"content": text})
            assert created.status_code == 201, created.text
            ids.append(created.json()["id"])
        for text in OTHERS:
            c.post("/v1/worlds/w/memories", json={"content": text}).raise_for_status()
        for (_, question), memory_id in zip(PAIRS, ids, strict=True):
            hits = c.post("/v1/worlds/w/search", json={"query": question, "min_score": DOCUMENTED}).json()["results"]
            assert [(h["kind"], h["source_id"]) for h in hits] == [("memory", memory_id)], question
            assert DOCUMENTED <= hits[0]["score"] <= 1
        unrelated = c.post("/v1/worlds/w/search", json={"query": UNRELATED, "min_score": DOCUMENTED})
        assert unrelated.json()["results"] == []
        # A world's fact, added over REST, likewise (searched with the world's other kinds).
        fact = c.post("/v1/scopes/world:w/facts", json={"content": "The shop opens at nine every morning"})
        assert fact.status_code == 201, fact.text
        found = c.post(
            "/v1/worlds/w/search", json={"query": "what time can customers come in?", "min_score": DOCUMENTED}
        ).json()["results"]
        # (Parking "after six in the evening" is about a time too: it may clear the threshold, below.)
        assert (found[0]["kind"], found[0]["source_id"]) == ("fact", fact.json()["id"])


@pytest.mark.anyio
async def test_mcp_memories_are_found_by_meaning_at_once(tmp_path: Path) -> None:
    with Recall(tmp_path / "recall.db", Settings(index_interval=0)) as mem:
        make_world(mem)
        server = build_mcp_server(mem.service, Notifier(), world="w", agent="agent-a")
        async with Client(server) as client:
            ids = []
            for text, _ in PAIRS:
                ids.append(ok(await client.call_tool("memories", {"action": "add", "content": text}))["id"])
            for text in OTHERS:
                ok(await client.call_tool("memories", {"action": "add", "content": text, "shared": True}))
            for (_, question), memory_id in zip(PAIRS, ids, strict=True):
                found = ok(await client.call_tool("search", {"query": question, "min_score": DOCUMENTED}))
                assert [(h["kind"], h["source_id"]) for h in found["results"]] == [("memory", memory_id)], question
            unrelated = ok(await client.call_tool("search", {"query": UNRELATED, "min_score": DOCUMENTED}))
            assert unrelated["results"] == []

"""Facts (`/v1/scopes/{scope}/facts…`) and long-term memories over real HTTP, with their denials."""

from __future__ import annotations

from pathlib import Path

import httpx

from recall.server.config import ServerConfig
from recall.settings import Settings
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.server.conftest import KEYS, LiveServer, post, start_server, stop_server


def test_fact_lifecycle_over_http(client: httpx.Client) -> None:
    created = client.post("/v1/scopes/user:maria/facts", json={"content": "Likes tea", "category": "preference"})
    assert created.status_code == 201, created.text
    fact = created.json()
    assert fact["scope"] == "user:maria" and fact["confidence"] == 1.0
    path = f"/v1/scopes/user:maria/facts/{fact['id']}"
    assert client.get(path).json()["content"] == "Likes tea"
    patched = client.patch(path, json={"confidence": 0.7})
    assert patched.json()["confidence"] == 0.7 and patched.json()["content"] == "Likes tea"
    assert client.put("/v1/scopes/user:maria/sections", json={"work_context": "Bakery"}).json() == {
        "work_context": "Bakery"
    }
    listing = client.get("/v1/scopes/user:maria/facts").json()
    assert [f["id"] for f in listing["facts"]] == [fact["id"]] and listing["sections"] == {"work_context": "Bakery"}

    exported = client.get("/v1/scopes/user:maria/facts/export").json()
    imported = client.post("/v1/scopes/user:mary/facts/import", json=exported)
    assert imported.json() == {"added": 1, "skipped": 0, "removed": 0}
    assert client.get("/v1/scopes/user:mary/sections").json() == {"work_context": "Bakery"}

    assert client.delete(path).json() == {"deleted": True}
    assert client.get(path).status_code == 404
    assert client.delete("/v1/scopes/user:mary/facts").json() == {"removed": 1}
    assert client.get("/v1/scopes").json()["scopes"] == []


def test_agent_scope_with_a_slash_and_world_scope(client: httpx.Client) -> None:
    for scope in ("agent:w/agent-a", "agent:w%2Fagent-a", "world:w"):
        response = client.post(f"/v1/scopes/{scope}/facts", json={"content": f"about {scope}"})
        assert response.status_code == 201, response.text
    assert len(client.get("/v1/scopes/agent:w/agent-a/facts").json()["facts"]) == 2
    assert client.get("/v1/scopes/world:nowhere/facts").status_code == 404
    assert client.get("/v1/scopes/agent:w/ghost/facts").status_code == 404


def test_invalid_fact_requests_name_the_field(client: httpx.Client) -> None:
    cases = [
        ("/v1/scopes/user:maria/facts", {"content": "x", "confidence": 3}, "confidence"),
        ("/v1/scopes/user:maria/facts", {"content": "x", "category": "gossip"}, "category"),
        ("/v1/scopes/user:maria/facts", {"content": ""}, "content"),
        ("/v1/scopes/user:maria/facts", {"content": "x", "extra": 1}, "extra"),
        ("/v1/scopes/team:x/facts", {"content": "x"}, "scope"),
        ("/v1/scopes/user:maria/facts/import", {"facts": [{"content": "x", "confidence": -1}]}, "facts.0.confidence"),
    ]
    for path, body, field in cases:
        response = client.post(path, json=body)
        assert response.status_code == 422, (path, body, response.text)
        assert response.json()["error"]["field"] == field
    assert client.get("/v1/scopes/user:maria/facts").json()["facts"] == []  # nothing was stored


def test_memories_shared_and_private_over_http(client: httpx.Client) -> None:
    shared = client.post("/v1/worlds/w/memories", json={"content": "Deliveries on Monday", "importance": 7})
    assert shared.status_code == 201, shared.text
    private = client.post("/v1/worlds/w/agents/agent-a/memories", json={"content": "Maria tips well", "type": "hunch"})
    assert private.status_code == 201 and private.json()["owner"] == "agent-a"
    a = client.get("/v1/worlds/w/agents/agent-a/memories").json()["memories"]
    b = client.get("/v1/worlds/w/agents/agent-b/memories").json()["memories"]
    assert [m["content"] for m in a] == ["Deliveries on Monday", "Maria tips well"]
    assert [m["content"] for m in b] == ["Deliveries on Monday"]
    note = private.json()["id"]
    assert client.delete(f"/v1/worlds/w/agents/agent-b/memories/{note}").status_code == 404
    assert client.delete(f"/v1/worlds/w/agents/agent-a/memories/{note}").json() == {"deleted": True}
    bad = client.post("/v1/worlds/w/memories", json={"content": "x", "importance": 0})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "importance"


def test_context_over_http_carries_the_memory_block_and_fact_scores(client: httpx.Client) -> None:
    client.post("/v1/scopes/user:maria/facts", json={"content": "Maria is vegan", "confidence": 0.9})
    post(client, "maria", "@agent-a what can I eat here?")
    body = client.post("/v1/worlds/w/agents/agent-a/context", json={"format": "openai"}).json()
    assert body["messages"][1]["content"].startswith("<memory>\nFacts:\n- [knowledge | 0.90] Maria is vegan")
    facts = [i for i in body["report"]["items"] if i["kind"] == "fact"]
    assert facts and facts[0]["included"] is True and "score" in facts[0]


def test_agent_keys_reach_their_own_scope_only(secured: LiveServer) -> None:
    with secured.client("acme-admin") as admin:
        assert admin.post("/v1/scopes/agent:w/agent-b/facts", json={"content": "b's secret"}).status_code == 201
        assert admin.post("/v1/worlds/w/agents/agent-b/memories", json={"content": "b's note"}).status_code == 201
    with secured.client("acme-a") as a:
        assert a.get("/v1/scopes/agent:w/agent-b/facts").status_code == 403
        assert a.post("/v1/scopes/agent:w/agent-b/facts", json={"content": "x"}).status_code == 403
        assert a.get("/v1/worlds/w/agents/agent-b/memories").status_code == 403
        assert a.post("/v1/worlds/w/search", json={"query": "secret"}).status_code == 403
        assert a.get("/v1/scopes").status_code == 403
        assert a.post("/v1/scopes/agent:w/agent-a/facts", json={"content": "mine"}).status_code == 201
        assert a.post("/v1/scopes/user:maria/facts", json={"content": "likes tea"}).status_code == 201
        notes = a.get("/v1/worlds/w/agents/agent-a/memories").json()["memories"]
        assert notes == []


def test_search_over_http_finds_and_filters_and_keeps_private_memories_private(secured: LiveServer) -> None:
    with secured.client("acme-admin") as admin:
        post(admin, "maria", "My parcel to Lyon never arrived", chat_id="t1")
        post(admin, "maria", "The weather in Lisbon is lovely", chat_id="t2")
        admin.post("/v1/worlds/w/memories", json={"content": "Lyon parcels go via Paris", "importance": 6})
        admin.post("/v1/worlds/w/agents/agent-b/memories", json={"content": "Lyon depot code is 4411"})
        admin.post("/v1/scopes/world:w/facts", json={"content": "Lyon deliveries take three days"})
        secured.mem.refresh_index()  # embed now rather than within the indexer's next seconds

        found = admin.post("/v1/worlds/w/search", json={"query": "parcel Lyon", "k": 10}).json()["results"]
        assert {r["kind"] for r in found} == {"message", "memory", "fact"}
        message = next(r for r in found if r["kind"] == "message")
        assert message["text"] == "maria: My parcel to Lyon never arrived" and message["chat_id"] == "t1"
        # Each hit says why it ranks where it does: its place in each method's list, its similarity.
        assert message["method"] == "hybrid"
        assert message["keyword_rank"] >= 1 and message["vector_rank"] >= 1 and 0 < message["similarity"] <= 1
        assert found == sorted(found, key=lambda r: -r["score"])
        assert "weather" not in " ".join(r["text"] for r in found[:4])
        only = admin.post(
            "/v1/worlds/w/search", json={"query": "Lyon", "kinds": ["message"], "chat_id": "t2", "method": "bm25"}
        ).json()["results"]
        assert only == []  # the Lyon message is in chat t1
        keyword = admin.post("/v1/worlds/w/search", json={"query": "Lyon", "method": "bm25"}).json()["results"]
        assert [(r["method"], r["vector_rank"], r["similarity"]) for r in keyword] == [("bm25", None, None)] * len(
            keyword
        )
        assert [r["keyword_rank"] for r in keyword] == list(range(1, len(keyword) + 1))
        bad = admin.post("/v1/worlds/w/search", json={"query": "x", "k": 0})
        assert bad.status_code == 422 and "k" in bad.text

    with secured.client("acme-a") as a:
        mine = a.post("/v1/worlds/w/agents/agent-a/search", json={"query": "Lyon depot code"}).json()["results"]
        assert "4411" not in " ".join(r["text"] for r in mine)  # agent-b's private memory
        assert a.post("/v1/worlds/w/agents/agent-b/search", json={"query": "Lyon"}).status_code == 403
    with secured.client("acme-b") as b:
        theirs = b.post("/v1/worlds/w/agents/agent-b/search", json={"query": "Lyon depot code"}).json()["results"]
        assert theirs[0]["text"] == "Lyon depot code is 4411"


def test_search_over_http_reads_the_time_its_query_names(secured: LiveServer) -> None:
    with secured.client("acme-admin") as admin:
        for day in ("2024-03-01", "2024-03-12", "2024-02-20"):
            post(admin, "maria", "Dinner was a mushroom risotto", chat_id="t9", created_at=f"{day}T19:00:00Z")
        secured.mem.refresh_index()
        query = {"query": "what was maria's dinner last Tuesday?", "kinds": ["message"], "chat_id": "t9"}
        found = admin.post("/v1/worlds/w/search", json={**query, "now": "2024-03-13T15:00:00Z"}).json()["results"]
        assert found[0]["created_at"].startswith("2024-03-12")
        bad = admin.post("/v1/worlds/w/search", json={**query, "now": "next tuesday"})
        assert bad.status_code == 422 and "now" in bad.text


def test_tenants_never_share_facts(secured: LiveServer) -> None:
    with secured.client("acme-admin") as acme:
        assert acme.post("/v1/scopes/user:maria/facts", json={"content": "acme's maria"}).status_code == 201
        assert acme.post("/v1/scopes/world:w/facts", json={"content": "acme world"}).status_code == 201
    with secured.client("globex-admin") as globex:
        assert globex.get("/v1/scopes/user:maria/facts").json()["facts"] == []
        assert globex.get("/v1/scopes/world:w/facts").status_code == 404
        assert globex.get("/v1/worlds/w/memories").status_code == 404
        assert globex.post("/v1/worlds/w/search", json={"query": "acme"}).status_code == 404
        assert globex.get("/v1/scopes").json() == {"scopes": []}


def test_extraction_over_http_with_a_real_model_server(tmp_path: Path, model_server: ModelServer) -> None:
    settings = Settings(
        llm_model="test-model", llm_base_url=model_server.openai_url, extraction_debounce=3600.0, index_interval=0
    )
    server = start_server(tmp_path / "x.db", ServerConfig(keys=KEYS, rate_limit=0), settings)
    try:
        with server.client("acme-admin") as admin, server.client("acme-a") as agent_a:
            admin.post("/v1/worlds", json={"id": "w"}).raise_for_status()
            admin.post("/v1/worlds/w/agents", json={"id": "agent-a"}).raise_for_status()
            admin.post("/v1/worlds/w/agents", json={"id": "agent-b"}).raise_for_status()
            admin.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
            post(admin, "maria", "@agent-a I run a bakery in Porto.")

            queued = agent_a.post("/v1/worlds/w/agents/agent-a/extract", json={})
            assert queued.status_code == 202, queued.text
            assert queued.json()["queued"] is True and queued.json()["scope"] == "user:maria"
            with server.client("ops") as ops:
                assert "recall_extraction_queue_depth 1" in ops.get("/metrics").text
            # An agent key extracts only as itself, and never into another agent's facts.
            assert agent_a.post("/v1/worlds/w/agents/agent-b/extract", json={}).status_code == 403
            assert agent_a.post(
                "/v1/worlds/w/agents/agent-a/extract", json={"scope": "agent:w/agent-b"}
            ).status_code == 403  # fmt: skip
            assert agent_a.post("/v1/extraction/flush").status_code == 403

            model_server.script('{"new_facts": [{"content": "Runs a bakery in Porto", "category": "knowledge", '
                                '"confidence": 0.95}]}')  # fmt: skip
            assert admin.post("/v1/extraction/flush").json() == {"extractions": 1}
            facts = admin.get("/v1/scopes/user:maria/facts").json()["facts"]
            assert [f["content"] for f in facts] == ["Runs a bakery in Porto"]
            bad = admin.post("/v1/worlds/w/agents/agent-a/extract", json={"chat_id": 5})
            assert bad.status_code == 422 and "chat_id" in bad.text
    finally:
        stop_server(server)

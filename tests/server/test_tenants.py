"""World ids are unique per tenant (spec §8): two tenants may each have a world `alpha`, each
reaches only its own, and nothing one receives (status codes included) reveals the other's.
Over real HTTP, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from recall.errors import AmbiguousWorldError, UnknownWorldError
from recall.server.config import ServerConfig
from recall.settings import Settings
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.server.conftest import KEYS, LiveServer, start_server, stop_server

TENANTS = {"acme": "acme-admin", "globex": "globex-admin"}


def make_alpha(c: httpx.Client, tenant: str) -> None:
    """`alpha` of one tenant: agent bot, human maria, one message to bot, a fact, a memory."""
    created = c.post("/v1/worlds", json={"id": "alpha", "name": f"{tenant} alpha"})
    assert created.status_code == 201, created.text
    assert created.json()["id"] == "alpha"
    assert c.post("/v1/worlds/alpha/agents", json={"id": "bot"}).status_code == 201
    assert c.post("/v1/worlds/alpha/humans", json={"id": "maria"}).status_code == 201
    posted = c.post("/v1/worlds/alpha/messages", json={"sender": "maria", "content": f"@bot {tenant} secret plan"})
    assert posted.status_code == 201, posted.text
    assert posted.json()["world_id"] == "alpha"
    assert posted.json()["delivered_to"] == ["bot"]
    for scope in ("world:alpha", "agent:alpha/bot"):
        added = c.post(f"/v1/scopes/{scope}/facts", json={"content": f"{tenant} fact"})
        assert added.status_code == 201, added.text
    noted = c.post("/v1/worlds/alpha/memories", json={"content": f"{tenant} memory"})
    assert noted.status_code == 201, noted.text
    assert noted.json()["world_id"] == "alpha"


def contents(items: list[dict[str, Any]], field: str = "content") -> list[str]:
    return [str(item[field]) for item in items]


def test_two_tenants_each_have_their_own_alpha(secured: LiveServer) -> None:
    for tenant, key in TENANTS.items():
        with secured.client(key) as c:
            make_alpha(c, tenant)

    for tenant, key in TENANTS.items():
        other = next(t for t in TENANTS if t != tenant)
        with secured.client(key) as c:
            world = c.get("/v1/worlds/alpha").json()
            assert (world["id"], world["name"], world["agents"], world["humans"]) == (
                "alpha",
                f"{tenant} alpha",
                ["bot"],
                ["maria"],
            )
            messages = c.get("/v1/worlds/alpha/messages").json()["messages"]
            assert contents(messages) == [f"@bot {tenant} secret plan"]
            assert {m["world_id"] for m in messages} == {"alpha"}

            inbox = c.get("/v1/worlds/alpha/agents/bot/inbox", params={"include_context": True}).json()
            assert contents(inbox["new_mentions"]) == [f"@bot {tenant} secret plan"]
            assert {m["world_id"] for m in inbox["new_mentions"]} == {"alpha"}

            context = c.post("/v1/worlds/alpha/agents/bot/context", json={}).json()
            said = " ".join(str(m["content"]) for m in context["messages"])
            assert f"{tenant} secret plan" in said and f"{tenant} fact" in said and f"{tenant} memory" in said
            assert other not in said

            for scope in ("world:alpha", "agent:alpha/bot"):
                facts = c.get(f"/v1/scopes/{scope}/facts").json()
                assert (facts["scope"], contents(facts["facts"])) == (scope, [f"{tenant} fact"])
            memories = c.get("/v1/worlds/alpha/memories").json()["memories"]
            assert contents(memories) == [f"{tenant} memory"]
            assert {m["world_id"] for m in memories} == {"alpha"}

            found = c.post("/v1/worlds/alpha/search", json={"query": "secret plan fact memory", "k": 20}).json()
            texts = " ".join(contents(found["results"], "text"))
            assert f"{tenant} secret plan" in texts and f"{tenant} fact" in texts and f"{tenant} memory" in texts
            assert other not in texts
            assert {r["space"] for r in found["results"]} == {"alpha"}

            # The tenant's own id is taken (in any case); the other tenant's is no concern of its.
            again = c.post("/v1/worlds", json={"id": "ALPHA"})
            assert again.status_code == 409 and "already exists" in again.json()["error"]["message"]


def test_a_tenant_may_create_an_id_another_tenant_has(secured: LiveServer) -> None:
    """acme owns `w` (the fixture): globex creating `w` is an ordinary 201, and each `w` is
    its owner's alone."""
    with secured.client("globex-admin") as g:
        created = g.post("/v1/worlds", json={"id": "w"})
        assert created.status_code == 201, created.text
        assert [w["id"] for w in g.get("/v1/worlds").json()["worlds"]] == ["w"]
        assert g.get("/v1/worlds/w").json()["agents"] == []
        assert g.post("/v1/worlds/w/agents", json={"id": "agent-a"}).status_code == 201
        g.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
        g.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-a globex"}).raise_for_status()
    with secured.client("acme-admin") as a:
        assert a.get("/v1/worlds/w").json()["agents"] == ["agent-a", "agent-b"]
        assert a.get("/v1/worlds/w/messages").json()["messages"] == []
        assert a.get("/v1/worlds/w/agents/agent-a/inbox").json()["new_mentions"] == []
    with secured.client("acme-a") as agent:
        assert agent.get("/v1/worlds/w/agents/agent-a/inbox").json()["new_mentions"] == []


def test_a_waiting_check_wakes_for_a_post_in_its_own_tenants_world(secured: LiveServer) -> None:
    """Long polls are keyed by the world, not its id: globex's `w` wakes globex's waiter."""
    with secured.client("globex-admin") as g:
        g.post("/v1/worlds", json={"id": "w"}).raise_for_status()
        g.post("/v1/worlds/w/agents", json={"id": "agent-a"}).raise_for_status()
        g.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
    results: list[dict[str, Any]] = []

    def wait() -> None:
        with secured.client("globex-admin", timeout=30) as c:
            params = {"wait": True, "timeout": 20}
            results.append(c.get("/v1/worlds/w/agents/agent-a/inbox", params=params).json())

    waiter = threading.Thread(target=wait)
    started = time.monotonic()
    waiter.start()
    deadline = time.monotonic() + 10
    while _waiting(secured) == 0:
        assert time.monotonic() < deadline, "the waiting check never started"
        time.sleep(0.01)
    with secured.client("globex-admin") as g:
        g.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-a wake up"}).raise_for_status()
    waiter.join(timeout=30)
    assert time.monotonic() - started < 15
    assert contents(results[0]["new_mentions"]) == ["@agent-a wake up"]


def _waiting(live: LiveServer) -> int:
    app = live.server.config.app
    return int(app.state.recall.notifier.waiting())  # type: ignore[union-attr]


# -- the Python API on worlds tenants created through the server ------------------------------


@pytest.fixture
def with_model(store_location: str, model_server: ModelServer) -> Iterator[LiveServer]:
    """A keyed server whose service has a chat model (the scripted local server): extraction on."""
    settings = Settings(
        llm_provider="openai",
        llm_model="test-model",
        llm_base_url=model_server.openai_url,
        extraction_debounce=3600.0,  # nothing runs until flushed
        index_interval=0,
    )
    server = start_server(store_location, ServerConfig(keys=KEYS, rate_limit=0), settings)
    yield server
    stop_server(server)


def test_the_python_api_reaches_every_method_of_a_tenants_world(
    with_model: LiveServer, model_server: ModelServer
) -> None:
    for tenant, key in TENANTS.items():
        with with_model.client(key) as c:
            make_alpha(c, tenant)
            c.post("/v1/worlds/alpha/messages", json={"sender": "bot", "content": f"Noted, {tenant}."})
    mem = with_model.mem

    with pytest.raises(AmbiguousWorldError, match="world 'alpha' exists in 2 tenants.*tenant="):
        mem.world("alpha")
    with pytest.raises(UnknownWorldError):
        mem.world("alpha", tenant="initech")
    world = mem.world("alpha", tenant="acme")
    assert (world.id, world.tenant, world.name) == ("alpha", "acme", "acme alpha")
    assert [w.tenant for w in mem.worlds() if w.id == "alpha"] == ["acme", "globex"]

    assert [(m.content, m.world_id) for m in world.messages()] == [
        ("@bot acme secret plan", "alpha"),
        ("Noted, acme.", "alpha"),
    ]
    assert [f.content for f in world.facts.list()] == ["acme fact"]
    assert [n.content for n in world.memories()] == ["acme memory"]
    texts = [r.text for r in world.search("secret plan fact memory", k=20)]
    assert any("acme secret plan" in t for t in texts) and not any("globex" in t for t in texts)
    assert {r.space for r in mem.search("alpha", "secret", tenant="globex")} == {"alpha"}
    assert [f.content for f in mem.scope("world:alpha", tenant="globex").list()] == ["globex fact"]

    bot = world.agent("bot")
    assert [f.content for f in bot.facts.list()] == ["acme fact"]
    assert [m.content for m in bot.inbox()] == ["@bot acme secret plan"]
    assert "acme secret plan" in json.dumps(bot.context().openai())
    assert [r.text for r in bot.search("secret", kinds=["message"])][0] == "maria: @bot acme secret plan"

    queued = bot.extract()
    assert queued == {"queued": True, "scope": "user:maria", "thread": "alpha/bot/", "messages": 2}
    model_server.script(json.dumps({"new_facts": [{"content": "Plans in secret", "confidence": 0.9}]}))
    assert mem.flush_extraction() == 1
    # The facts went to acme's maria: its key sees them, globex's and the keyless tenant's do not.
    assert [f.content for f in mem.scope("user:maria", tenant="acme").list()] == ["Plans in secret"]
    assert mem.scope("user:maria", tenant="globex").list() == []
    assert mem.scope("user:maria").list() == []
    with with_model.client("acme-admin") as c:
        assert contents(c.get("/v1/scopes/user:maria/facts").json()["facts"]) == ["Plans in secret"]

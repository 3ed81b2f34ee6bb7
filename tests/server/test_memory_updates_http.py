"""Long-term memories changed in place (`PATCH …/memories/{id}`) and expiring (`ttl`,
`expires_at`) over real HTTP, on SQLite and PostgreSQL, with the same rules as the Python API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

import recall.app.memories as memories_module
from tests.server.conftest import LiveServer, post


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """The time memories expire by, in the server's process (its first item; move it)."""
    now = [datetime.now(UTC).replace(microsecond=0)]
    monkeypatch.setattr(memories_module, "clock", lambda: now[0])
    return now


def search(client: httpx.Client, query: str, path: str = "/v1/worlds/w") -> list[int]:
    response = client.post(f"{path}/search", json={"query": query, "kinds": ["memory"], "method": "bm25"})
    assert response.status_code == 200, response.text
    return [hit["source_id"] for hit in response.json()["results"]]


def test_a_shared_memory_changes_in_place_over_http(client: httpx.Client, clock: list[datetime]) -> None:
    created = client.post("/v1/worlds/w/memories", json={"content": "Pistachio croissants sell out", "ttl": 600})
    assert created.status_code == 201, created.text
    note = created.json()
    assert note["expires_at"] == (clock[0] + timedelta(seconds=600)).isoformat()
    assert note["updated_at"] == note["created_at"]
    path = f"/v1/worlds/w/memories/{note['id']}"

    clock[0] += timedelta(seconds=30)
    patched = client.patch(path, json={"content": "Walnut bread sells out", "importance": 8})
    assert patched.status_code == 200, patched.text
    changed = patched.json()
    assert {k: changed[k] for k in ("id", "created_at", "expires_at", "type")} == {
        k: note[k] for k in ("id", "created_at", "expires_at", "type")
    }
    assert (changed["content"], changed["importance"]) == ("Walnut bread sells out", 8)
    assert changed["updated_at"] == clock[0].isoformat()
    assert search(client, "walnut") == [note["id"]] and search(client, "pistachio") == []

    # null clears the expiry; a time or a ttl sets it again.
    assert client.patch(path, json={"expires_at": None}).json()["expires_at"] is None
    later = clock[0] + timedelta(hours=2)
    assert client.patch(path, json={"expires_at": later.isoformat()}).json()["expires_at"] == later.isoformat()
    assert client.patch(path, json={"ttl": 60}).json()["expires_at"] == (clock[0] + timedelta(seconds=60)).isoformat()
    assert [m["id"] for m in client.get("/v1/worlds/w/memories").json()["memories"]] == [note["id"]]


def test_an_agent_changes_only_its_own_memories_over_http(client: httpx.Client) -> None:
    shared = client.post("/v1/worlds/w/memories", json={"content": "Flour comes on Mondays"}).json()
    own = client.post("/v1/worlds/w/agents/agent-a/memories", json={"content": "Maria tips well"}).json()
    mine = f"/v1/worlds/w/agents/agent-a/memories/{own['id']}"
    changed = client.patch(mine, json={"content": "Maria tips very well", "type": "hunch"})
    assert changed.status_code == 200 and changed.json()["owner"] == "agent-a"
    # agent-b does not see agent-a's memory; an agent changes no shared memory; the world's
    # route reaches only shared ones.
    assert client.patch(f"/v1/worlds/w/agents/agent-b/memories/{own['id']}", json={"importance": 1}).status_code == 404
    denied = client.patch(f"/v1/worlds/w/agents/agent-a/memories/{shared['id']}", json={"importance": 1})
    assert denied.status_code == 403 and "an agent updates only its own memories" in denied.json()["error"]["message"]
    assert client.patch(f"/v1/worlds/w/memories/{own['id']}", json={"importance": 1}).status_code == 404
    assert client.patch("/v1/worlds/w/memories/999999", json={"importance": 1}).status_code == 404
    listed = client.get("/v1/worlds/w/agents/agent-a/memories").json()["memories"]
    assert [(m["content"], m["importance"]) for m in listed] == [
        ("Maria tips very well", 5),
        ("Flour comes on Mondays", 5),
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": None}, "content"),
        ({"importance": 11}, "importance"),
        ({"type": "Not A Type"}, "type"),
        ({"type": "langgraph"}, "type"),
        ({"ttl": 0}, "ttl"),
        ({"ttl": 10 * 366 * 24 * 3600}, "ttl"),
        ({"expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"expires_at": "9999-12-31T23:00:00-05:00"}, "expires_at"),
        ({"expires_at": "next week"}, "expires_at"),
        ({"ttl": 60, "expires_at": "2099-01-01T00:00:00Z"}, "ttl"),
        ({"colour": "red"}, "colour"),
        ({}, "changes"),
    ],
)
def test_a_bad_patch_is_a_422_naming_its_field(client: httpx.Client, body: dict[str, Any], field: str) -> None:
    note = client.post("/v1/worlds/w/memories", json={"content": "Oven 2 runs hot", "ttl": 600}).json()
    response = client.patch(f"/v1/worlds/w/memories/{note['id']}", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field
    assert client.get("/v1/worlds/w/memories").json()["memories"] == [note]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "ttl": -1}, "ttl"),
        ({"content": "x", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"content": "x", "ttl": 60, "expires_at": "2099-01-01T00:00:00Z"}, "ttl"),
    ],
)
def test_a_bad_expiry_on_adding_is_a_422(client: httpx.Client, body: dict[str, Any], field: str) -> None:
    response = client.post("/v1/worlds/w/memories", json=body)
    assert response.status_code == 422 and response.json()["error"]["field"] == field, response.text
    assert client.get("/v1/worlds/w/memories").json()["memories"] == []


def test_an_expired_memory_is_gone_from_every_answer(client: httpx.Client, clock: list[datetime]) -> None:
    post(client, "maria", "@agent-a where do Lyon parcels go?")
    soon = (clock[0] + timedelta(minutes=5)).isoformat()
    shared = client.post("/v1/worlds/w/memories", json={"content": "Lyon parcels go via Paris", "expires_at": soon})
    own = client.post("/v1/worlds/w/agents/agent-a/memories", json={"content": "Lyon parcels are late", "ttl": 300})
    assert shared.status_code == own.status_code == 201

    def context() -> str:
        body = client.post("/v1/worlds/w/agents/agent-a/context", json={}).json()
        return " ".join(str(m["content"]) for m in body["messages"])

    assert "Lyon parcels go via Paris" in context() and "Lyon parcels are late" in context()
    clock[0] += timedelta(minutes=5)
    assert "Lyon parcels go via Paris" not in context() and "Lyon parcels are late" not in context()
    assert client.get("/v1/worlds/w/agents/agent-a/memories").json()["memories"] == []
    assert search(client, "Lyon parcels") == search(client, "Lyon parcels", "/v1/worlds/w/agents/agent-a") == []
    gone = client.patch(f"/v1/worlds/w/memories/{shared.json()['id']}", json={"ttl": 600})
    assert gone.status_code == 404


def test_agent_keys_change_only_their_agents_memories(secured: LiveServer) -> None:
    with secured.client("acme-admin") as admin:
        shared = admin.post("/v1/worlds/w/memories", json={"content": "Be kind"}).json()
        own = admin.post("/v1/worlds/w/agents/agent-a/memories", json={"content": "a's note"}).json()
        assert admin.patch(f"/v1/worlds/w/memories/{shared['id']}", json={"content": "Be very kind"}).status_code == 200
    with secured.client("acme-a") as a:
        assert a.patch(f"/v1/worlds/w/agents/agent-a/memories/{own['id']}", json={"ttl": 60}).status_code == 200
        assert a.patch(f"/v1/worlds/w/memories/{shared['id']}", json={"content": "x"}).status_code == 403
        assert a.patch(f"/v1/worlds/w/agents/agent-b/memories/{own['id']}", json={"content": "x"}).status_code == 403
    with secured.client("globex-admin") as globex:
        assert globex.patch(f"/v1/worlds/w/memories/{shared['id']}", json={"content": "x"}).status_code == 404
    with secured.client() as anonymous:
        assert anonymous.patch(f"/v1/worlds/w/memories/{shared['id']}", json={"content": "x"}).status_code == 401

"""Participants over HTTP: list, read and change an agent's settings, register again with
`?exist_ok=true`; keys and tenants checked as everywhere (both stores)."""

from __future__ import annotations

from tests.server.conftest import LiveServer


def test_agents_and_humans_over_http(secured: LiveServer) -> None:
    with secured.client("acme-admin") as admin:
        created = admin.post("/v1/worlds/w/agents", json={"id": "scribe", "system_prompt": "Take notes."})
        assert created.status_code == 201 and created.json()["system_prompt"] == "Take notes."
        again = admin.post("/v1/worlds/w/agents?exist_ok=true", json={"id": "scribe", "system_prompt": "Other"})
        assert again.status_code == 200 and again.json()["system_prompt"] == "Take notes."
        assert admin.post("/v1/worlds/w/agents", json={"id": "scribe"}).status_code == 409
        assert admin.post("/v1/worlds/w/humans?exist_ok=true", json={"id": "maria"}).status_code == 200
        assert admin.post("/v1/worlds/w/humans?exist_ok=true", json={"id": "scribe"}).status_code == 409

        agents = admin.get("/v1/worlds/w/agents").json()["agents"]
        assert [a["id"] for a in agents] == ["agent-a", "agent-b", "scribe"]
        assert agents[2]["system_prompt"] == "Take notes." and agents[2]["context_filter"] == "addressed"
        humans = admin.get("/v1/worlds/w/humans").json()["humans"]
        assert [h["id"] for h in humans] == ["maria"] and humans[0]["created_at"]

        changed = admin.patch("/v1/worlds/w/agents/scribe", json={"system_prompt": "Take minutes.", "goals": ["x"]})
        assert changed.status_code == 200, changed.text
        assert changed.json()["system_prompt"] == "Take minutes." and changed.json()["goals"] == ["x"]
        assert admin.get("/v1/worlds/w/agents/scribe").json()["system_prompt"] == "Take minutes."
        reset = admin.patch("/v1/worlds/w/agents/scribe", json={"goals": None}).json()
        assert reset["goals"] == [] and reset["system_prompt"] == "Take minutes."

        bad = admin.patch("/v1/worlds/w/agents/scribe", json={"history_limit": -3})
        assert bad.status_code == 422 and "history_limit" in bad.text
        assert admin.patch("/v1/worlds/w/agents/scribe", json={"colour": "blue"}).status_code == 422
        assert admin.patch("/v1/worlds/w/agents/ghost", json={"model": "m"}).status_code == 404
        assert admin.get("/v1/worlds/w/agents/scribe").json()["system_prompt"] == "Take minutes."


def test_agent_keys_read_their_own_profile_and_change_nothing(secured: LiveServer) -> None:
    with secured.client("acme-a") as a:
        assert a.get("/v1/worlds/w/agents/agent-a").json()["id"] == "agent-a"
        assert a.get("/v1/worlds/w/agents/agent-b").status_code == 403
        assert a.patch("/v1/worlds/w/agents/agent-a", json={"system_prompt": "I am free"}).status_code == 403
        assert a.get("/v1/worlds/w/agents").status_code == 403  # every agent's prompt: admins only
        assert [h["id"] for h in a.get("/v1/worlds/w/humans").json()["humans"]] == ["maria"]
    with secured.client("globex-admin") as globex:
        assert globex.get("/v1/worlds/w/agents").status_code == 404
        assert globex.patch("/v1/worlds/w/agents/agent-a", json={"model": "m"}).status_code == 404
        assert globex.get("/v1/worlds/w/humans").status_code == 404
    with secured.client("acme-admin") as admin:
        assert admin.get("/v1/worlds/w/agents/agent-a").json()["system_prompt"] == ""

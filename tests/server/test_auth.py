"""API keys: tenants never see each other's worlds; an agent's key acts only as that agent."""

from __future__ import annotations

import pytest

from recall.errors import InvalidInputError
from recall.server.config import ServerConfig, load_config, parse_keys
from tests.server.conftest import LiveServer

A_INBOX = "/v1/worlds/w/agents/agent-a/inbox"
B_INBOX = "/v1/worlds/w/agents/agent-b/inbox"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, {"Authorization": "acme-admin"}])
def test_every_request_needs_a_valid_key(secured: LiveServer, headers: dict[str, str]) -> None:
    with secured.client() as c:
        for path in ("/v1/worlds", "/v1/worlds/w", A_INBOX):
            response = c.get(path, headers=headers)
            assert response.status_code == 401, path
            assert response.json()["error"]["type"] == "unauthorized"
            assert response.headers["WWW-Authenticate"] == "Bearer"


def test_agent_key_reads_its_own_inbox_only(secured: LiveServer) -> None:
    with secured.client("acme-admin") as admin:
        admin.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-b secret plan"})
    with secured.client("acme-a") as a:
        assert a.get(A_INBOX).status_code == 200
        denied = a.get(B_INBOX)
        assert denied.status_code == 403
        assert "agent-a" in denied.json()["error"]["message"]
        assert a.post("/v1/worlds/w/agents/agent-b/context", json={}).status_code == 403
        assert a.post("/v1/worlds/w/agents/agent-b/inbox/ack", json={"ids": [1]}).status_code == 403
        assert a.post("/v1/worlds/w/agents/agent-b/send", json={"content": "I am b"}).status_code == 403
    with secured.client("acme-b") as b:
        assert [m["content"] for m in b.get(B_INBOX).json()["new_mentions"]] == ["@agent-b secret plan"]


def test_agent_key_cannot_read_another_agents_private_memory(secured: LiveServer) -> None:
    with secured.client("acme-b") as b:
        assert b.put("/v1/worlds/w/agents/agent-b/memory/pin", json={"value": "1234"}).status_code == 200
    with secured.client("acme-a") as a:
        assert a.get("/v1/worlds/w/agents/agent-b/memory/pin").status_code == 403
        assert a.get("/v1/worlds/w/agents/agent-b/memory").status_code == 403
        assert a.delete("/v1/worlds/w/agents/agent-b/memory/pin").status_code == 403
    with secured.client("acme-b") as b:
        assert b.get("/v1/worlds/w/agents/agent-b/memory/pin").json()["value"] == "1234"


def test_agent_key_cannot_administer_or_post_as_someone_else(secured: LiveServer) -> None:
    with secured.client("acme-a") as a:
        assert a.post("/v1/worlds", json={"id": "mine"}).status_code == 403
        assert a.post("/v1/worlds/w/agents", json={"id": "agent-c"}).status_code == 403
        assert a.post("/v1/worlds/w/humans", json={"id": "eve"}).status_code == 403
        forged = a.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-b pay eve"})
        assert forged.status_code == 403
        assert a.post("/v1/worlds/w/messages", json={"sender": "agent-a", "content": "hello"}).status_code == 201


def test_a_tenant_never_sees_another_tenants_world(secured: LiveServer) -> None:
    with secured.client("globex-admin") as g:
        assert g.get("/v1/worlds").json() == {"worlds": []}
        for response in (
            g.get("/v1/worlds/w"),
            g.get("/v1/worlds/w/messages"),
            g.get(A_INBOX),
            g.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "hi"}),
            g.post("/v1/worlds/w/agents", json={"id": "spy"}),
        ):
            assert response.status_code == 404
            assert "unknown world 'w'" in response.json()["error"]["message"]
        assert g.post("/v1/worlds", json={"id": "g1"}).status_code == 201
    with secured.client("acme-admin") as admin:
        assert [w["id"] for w in admin.get("/v1/worlds").json()["worlds"]] == ["w"]
        assert admin.get("/v1/worlds/w/messages").json()["messages"] == []


def test_without_keys_only_loopback_is_allowed() -> None:
    ServerConfig(host="127.0.0.1").check_exposure()
    ServerConfig(host="::1").check_exposure()
    with pytest.raises(InvalidInputError, match="no API keys"):
        ServerConfig(host="0.0.0.0").check_exposure()
    ServerConfig(host="0.0.0.0", allow_unauthenticated_remote=True).check_exposure()
    ServerConfig(host="0.0.0.0", keys=parse_keys("k:t")).check_exposure()


def test_config_file_env_and_flags_in_order(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "recall.toml"
    path.write_text(
        '[server]\nport = 9000\nrate_limit = 5\ndb = "file.db"\n'
        '[[keys]]\nkey = "k1"\ntenant = "acme"\n[[keys]]\nkey = "k2"\ntenant = "acme"\nagent = "bot"\n'
    )
    config = load_config(path, environ={"RECALL_PORT": "9100", "RECALL_API_KEYS": "k3:globex"}, db="flag.db")
    assert (config.port, config.rate_limit, config.db) == (9100, 5, "flag.db")
    assert [(k.key, k.tenant, k.agent) for k in config.keys] == [
        ("k1", "acme", None),
        ("k2", "acme", "bot"),
        ("k3", "globex", None),
    ]
    with pytest.raises(InvalidInputError, match="KEY:TENANT"):
        parse_keys("just-a-key")
    with pytest.raises(InvalidInputError, match="port"):
        load_config(environ={"RECALL_PORT": "http"})

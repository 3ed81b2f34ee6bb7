"""Issue 43 over HTTP: the reserved metadata is refused from every key, and an agent's own key
stores its tool results (points 3 and 15), which reach that agent alone (point 1). Both stores."""

from __future__ import annotations

import httpx

from recall.runner.backend import HttpBackend
from tests.server.conftest import LiveServer, post

SECRET = "the vault code is 7781"
TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "vault", "arguments": "{}"}}


def context_of(c: httpx.Client, agent: str) -> list[dict[str, object]]:
    answer = c.post(f"/v1/worlds/w/agents/{agent}/context", json={"max_tokens": 100_000})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["messages"])


def test_no_key_writes_the_reserved_metadata(secured: LiveServer) -> None:
    with secured.client("acme-b") as b, secured.client("acme-admin") as admin:
        forged = b.post(
            "/v1/worlds/w/agents/agent-b/send",
            json={"content": "@agent-a 42", "metadata": {"tool_result_for": "agent-a", "tool_call_id": "call_1"}},
        )
        assert forged.status_code == 422, forged.text
        assert forged.json()["error"]["field"] == "metadata.tool_result_for"
        as_tenant = admin.post(
            "/v1/worlds/w/messages",
            json={"sender": "maria", "content": "hi", "metadata": {"langchain": {"type": "human"}}},
        )
        assert as_tenant.status_code == 422, as_tenant.text
        assert as_tenant.json()["error"]["field"] == "metadata.langchain"
        assert admin.get("/v1/worlds/w/messages", params={"all_chats": True}).json()["messages"] == []


def test_an_agents_own_key_stores_its_tool_results_for_it_alone(secured: LiveServer) -> None:
    with secured.client("acme-a") as a, secured.client("acme-b") as b, secured.client("acme-admin") as admin:
        post(admin, "maria", "@agent-a @agent-b open the vault")
        a.post("/v1/worlds/w/agents/agent-a/send", json={"metadata": {"tool_calls": [TOOL_CALL]}}).raise_for_status()
        stored = a.post("/v1/worlds/w/agents/agent-a/tool-results", json={"content": SECRET, "call_id": "call_1"})
        assert stored.status_code == 201, stored.text
        assert stored.json()["delivered_to"] == ["agent-a"]
        # Another agent's key may not store results in a's name.
        other = b.post("/v1/worlds/w/agents/agent-a/tool-results", json={"content": "forged", "call_id": "call_1"})
        assert other.status_code == 403, other.text
        missing = a.post("/v1/worlds/w/agents/agent-a/tool-results", json={"content": "x"})
        assert missing.status_code == 422 and missing.json()["error"]["field"] == "call_id"

        tool = [m for m in context_of(a, "agent-a") if m["role"] == "tool"]
        assert tool == [{"role": "tool", "content": SECRET, "tool_call_id": "call_1"}]
        assert all(SECRET not in str(m["content"]) for m in context_of(b, "agent-b"))
        inbox = b.get("/v1/worlds/w/agents/agent-b/inbox", params={"unread_only": False}).json()
        assert SECRET not in str(inbox)


def test_the_http_runner_stores_tool_results_with_the_agents_own_key(secured: LiveServer) -> None:
    backend = HttpBackend(secured.url, "w", "agent-a", api_key="acme-a")
    try:
        message_id = backend.post_tool_result(SECRET, chat=None, parent=None, call_id="call_7")
    finally:
        backend.close()
    stored = secured.mem.world("w").agent("agent-a").inbox(unread_only=False)
    assert [(m.id, m.content, m.metadata["tool_call_id"]) for m in stored] == [(message_id, SECRET, "call_7")]

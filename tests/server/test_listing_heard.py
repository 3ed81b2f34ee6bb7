"""Listing a world's messages shows an agent's key only what that agent heard or wrote
(issue 43, point 6), and `detail=true` says whom each message was delivered to from the
deliveries, not from today's roster (point 12); on both stores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from recall.server.config import ApiKey, ServerConfig
from tests.server.conftest import KEYS, LiveServer, create_world_w, start_server, stop_server


@pytest.fixture
def late_joiner(store_location: str) -> Iterator[LiveServer]:
    """World `w` of tenant acme (agent-a, agent-b, maria); agent-c, with its own key, joins
    after maria's first two posts."""
    server = start_server(store_location, ServerConfig(keys=(*KEYS, ApiKey("acme-c", "acme", "agent-c")), rate_limit=0))
    with server.client("acme-admin") as admin:
        create_world_w(admin)
        for n, text in enumerate(("@agent-a the door code is 4711", "lunch is at noon")):
            admin.post("/v1/worlds/w/messages", json={"sender": "maria", "content": text, "chat_id": f"c{n}"})
        admin.post("/v1/worlds/w/agents", json={"id": "agent-c"}).raise_for_status()
        admin.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-c welcome", "chat_id": "c0"})
        admin.post("/v1/worlds/w/messages", json={"sender": "agent-c", "content": "@maria thanks", "chat_id": "c1"})
    yield server
    stop_server(server)


def listed(c: httpx.Client, **params: Any) -> list[str]:
    response = c.get("/v1/worlds/w/messages", params=params)
    assert response.status_code == 200, response.text
    return [m["content"] for m in response.json()["messages"]]


def test_an_agent_key_lists_only_what_its_agent_heard_or_wrote(late_joiner: LiveServer) -> None:
    with late_joiner.client("acme-c") as c:
        assert listed(c, all_chats=True) == ["@agent-c welcome", "@maria thanks"]
        assert listed(c, chat_id="c0") == ["@agent-c welcome"]
        # Paging goes on past messages it may not see: the cursor is the last one read.
        first = c.get("/v1/worlds/w/messages", params={"all_chats": True, "limit": 2}).json()
        assert first == {"messages": [], "next_after": 2}
        rest = listed(c, all_chats=True, after=first["next_after"])
        assert rest == ["@agent-c welcome", "@maria thanks"]
    with late_joiner.client("acme-a") as a:
        assert len(listed(a, all_chats=True)) == 4
    with late_joiner.client("acme-admin") as admin:
        assert len(listed(admin, all_chats=True)) == 4


def test_delivered_to_is_read_from_the_deliveries(late_joiner: LiveServer) -> None:
    with late_joiner.client("acme-admin") as admin:
        detailed = admin.get("/v1/worlds/w/messages", params={"all_chats": True, "detail": True}).json()["messages"]
    delivered = {m["content"]: m["delivered_to"] for m in detailed}
    assert delivered == {
        "@agent-a the door code is 4711": ["agent-a", "agent-b"],
        "lunch is at noon": ["agent-a", "agent-b"],
        "@agent-c welcome": ["agent-a", "agent-b", "agent-c"],
        "@maria thanks": ["agent-a", "agent-b"],
    }
    responds = {m["content"]: m["would_respond"] for m in detailed}
    assert responds["@agent-a the door code is 4711"] == ["agent-a"]
    assert responds["@agent-c welcome"] == ["agent-c"]

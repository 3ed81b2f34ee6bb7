"""A NUL (`%00`) in an id of a request's path is answered as any unknown id is, on both stores
(issue 43, point 16: PostgreSQL answered a bare 500, its text cannot hold NUL): every path id is
checked before it reaches the database."""

from __future__ import annotations

import httpx
import pytest

from tests.server.conftest import LiveServer

NOT_FOUND = [
    ("GET", "/v1/worlds/w%00x"),
    ("GET", "/v1/worlds/w%00x/messages"),
    ("DELETE", "/v1/worlds/w%00x"),
    ("GET", "/v1/worlds/w/agents/agent%00a"),
    ("GET", "/v1/worlds/w/agents/agent%00a/inbox"),
    ("DELETE", "/v1/worlds/w/humans/maria%00"),
    ("DELETE", "/v1/worlds/w/agents/agent-a%00"),
    ("GET", "/v1/worlds/w/agents/agent-a/calls/c%00x"),
    ("GET", "/v1/worlds/w/agents/agent-a/calls/c%00x/replay"),
    ("POST", "/v1/worlds/w/agents/agent-a/calls/c%00x/outcome"),
    ("GET", "/v1/worlds/w/agents/agent-a/notes/k%00"),
    ("GET", "/v1/scopes/user:w%00/maria/facts"),
]


@pytest.mark.parametrize(("method", "path"), NOT_FOUND)
def test_a_nul_in_a_path_id_is_an_unknown_id(live: LiveServer, method: str, path: str) -> None:
    with live.client() as c:
        answer = c.request(method, path, json={} if method == "POST" else None)
    assert answer.status_code in (404, 422), answer.text
    assert "error" in answer.json()


def test_a_nul_in_a_note_key_names_the_key(client: httpx.Client) -> None:
    answer = client.put("/v1/worlds/w/agents/agent-a/notes/a%00b", json={"value": 1})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "key"
    # The world is unharmed: its agents still answer.
    assert client.get("/v1/worlds/w/agents/agent-a").status_code == 200

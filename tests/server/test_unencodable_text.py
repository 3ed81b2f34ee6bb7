"""Text UTF-8 cannot encode (a lone surrogate, "\\ud800") is refused wherever it enters, naming
the field or the import line, and nothing is stored (issue 43, point 2). JSON may carry one
("\\ud800" is a valid escape), so a client can send it; no store could keep it and no answer
could carry it, so one accepted would break every later read that renders it."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from recall.errors import InvalidInputError
from tests.server.conftest import LiveServer, post
from tests.server.test_security import raw, refused, write_raw

LONE = "\ud800"

UNENCODABLE: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": f"hi {LONE}"}, "content"),
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "metadata": {"a": LONE}}, "metadata.a"),
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "metadata": {"a": {"b": [1, LONE]}}},
     "metadata.a.b[1]"),
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "metadata": {LONE: 1}}, "metadata"),
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "idempotency_key": LONE}, "idempotency_key"),
    ("POST", "/v1/worlds/w/agents/agent-b/send", {"content": f"@agent-a {LONE}"}, "content"),
    ("POST", "/v1/worlds/w/agents/agent-b/send", {"content": "@agent-a hi", "metadata": {"x": LONE}}, "metadata.x"),
    ("PUT", "/v1/worlds/w/agents/agent-a/memory/k", {"value": {"x": LONE}}, "value.x"),
    ("POST", "/v1/worlds/w/memories", {"content": f"rule {LONE}"}, "content"),
    ("POST", "/v1/worlds/w/memories", {"content": "rule", "metadata": {"a": LONE}}, "metadata.a"),
    ("POST", "/v1/worlds/w/agents/agent-a/memories", {"content": "rule", "metadata": {"a": [LONE]}}, "metadata.a[0]"),
    ("POST", "/v1/worlds/w/agents", {"id": "agent-c", "system_prompt": LONE}, "system_prompt"),
    ("POST", "/v1/worlds/w/agents/agent-a/observations", {"time": 1, "note": LONE}, "note"),
    ("POST", "/v1/scopes/user:maria/facts", {"content": f"Likes tea {LONE}"}, "content"),
    ("PUT", "/v1/scopes/user:maria/sections", {"top_of_mind": LONE}, "top_of_mind"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "field"), UNENCODABLE)
def test_a_lone_surrogate_is_refused_naming_the_field(
    live: LiveServer, client: httpx.Client, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    response = raw(client, method, path, json.dumps(body))  # the surrogate as the escape "\\ud800"
    refused(response, field)
    # Nothing was stored, and every read that would render it still answers.
    assert client.get("/v1/worlds/w/messages", params={"all_chats": True}).json()["messages"] == []
    assert client.get("/v1/worlds/w/agents/agent-a/memory").json()["items"] == []
    assert client.get("/v1/worlds/w/memories").json()["memories"] == []
    assert client.get("/v1/scopes/user:maria/facts").json()["facts"] == []
    assert client.get("/v1/worlds/w").json()["agents"] == ["agent-a", "agent-b"]
    assert live.mem.service.store.recent_observations("w", "agent-a", "observation", 10) == []


def test_an_import_line_with_a_lone_surrogate_is_refused_and_nothing_is_written(client: httpx.Client) -> None:
    post(client, "maria", "@agent-a the invoice is wrong")
    exported = client.get("/v1/worlds/w/export").text.splitlines()
    assert client.delete("/v1/worlds/w").status_code == 200
    spoilt = [json.loads(line) for line in exported]
    number = next(n for n, line in enumerate(spoilt) if line.get("record") == "message")
    spoilt[number]["metadata"] = {"note": LONE}
    body = "\n".join(json.dumps(line) for line in spoilt)  # ensure_ascii: the surrogate as "\ud800"
    response = client.post("/v1/worlds/import", content=body.encode(), headers={"content-type": "application/x-ndjson"})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == f"line {number + 1}: message.metadata.note" and "surrogate" in error["message"], error
    assert client.get("/v1/worlds/w").status_code == 404
    # The same lines without the surrogate import: only that line was wrong.
    clean = client.post(
        "/v1/worlds/import", content="\n".join(exported).encode(), headers={"content-type": "application/x-ndjson"}
    )
    assert clean.status_code == 201, clean.text


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
def test_the_python_api_refuses_a_lone_surrogate_naming_the_field(live: LiveServer) -> None:
    world = live.mem.world("w")
    with pytest.raises(InvalidInputError, match="surrogate") as refused_post:
        world.post("maria", f"@agent-a {LONE}")
    assert refused_post.value.field == "content"
    with pytest.raises(InvalidInputError, match="surrogate") as refused_memory:
        world.add_memory(f"green tea {LONE}")
    assert refused_memory.value.field == "content"
    with pytest.raises(InvalidInputError, match="surrogate") as refused_private:
        world.agent("agent-a").add_memory("green tea", source=[LONE])
    assert refused_private.value.field == "metadata.source[0]"
    assert world.messages(all_chats=True) == [] and world.memories() == []


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
def test_text_an_older_recall_stored_is_still_read(client: httpx.Client, store_location: str) -> None:
    """A lone surrogate already stored (SQLite keeps metadata as JSON text, where "\\ud800" is a
    valid escape; PostgreSQL's jsonb never held one) is sent as that escape, not a 500."""
    posted = post(client, "maria", "@agent-a the invoice is wrong")
    write_raw(store_location, f"""UPDATE messages SET metadata = '{{"note": "\\ud800"}}' WHERE id = {posted["id"]}""")
    listed = client.get("/v1/worlds/w/messages")
    assert listed.status_code == 200 and b'"note":"\\ud800"' in listed.content
    assert listed.json()["messages"][0]["metadata"] == {"note": LONE}
    inbox = client.get("/v1/worlds/w/agents/agent-a/inbox", params={"include_context": True, "mark_read": True})
    assert inbox.status_code == 200 and [m["id"] for m in inbox.json()["new_mentions"]] == [posted["id"]]
    exported = client.get("/v1/worlds/w/export")
    assert exported.status_code == 200 and exported.text.rstrip().endswith("}")
    assert any(json.loads(line).get("metadata") == {"note": LONE} for line in exported.text.splitlines())

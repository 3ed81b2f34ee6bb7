"""The REST API over real HTTP: routes, errors, inbox, context once, memory (spec §6)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from fastapi import Path as FastAPIPath
from fastapi import Query
from fastapi.testclient import TestClient

from recall.api import Recall
from recall.errors import InvalidInputError
from recall.server import schemas
from recall.server.app import create_app
from recall.server.config import ServerConfig
from recall.settings import Settings
from tests.server.conftest import LiveServer, post, start_server, stop_server

# -- worlds, participants, messages -------------------------------------------------------------


def test_worlds_are_created_listed_and_shown(client: httpx.Client) -> None:
    created = client.post("/v1/worlds", json={"id": "team", "name": "The team", "turn_limit": 3})
    assert created.status_code == 201
    assert created.json()["turn_limit"] == 3
    assert [w["id"] for w in client.get("/v1/worlds").json()["worlds"]] == ["team", "w"]
    world = client.get("/v1/worlds/w").json()
    assert world["agents"] == ["agent-a", "agent-b"]
    assert world["humans"] == ["maria"]


def test_post_returns_id_mentions_and_recipients(client: httpx.Client) -> None:
    first = post(client, "maria", "@agent-b please help")
    assert first["mentions"] == ["agent-b"]
    assert first["delivered_to"] == ["agent-a", "agent-b"]
    reply = post(client, "agent-b", "on it", parent_id=first["id"])
    assert reply["delivered_to"] == ["agent-a"]
    assert reply["id"] > first["id"]
    assert reply["metadata"]["thread_id"] == first["id"]


def test_messages_are_paged_with_a_cursor(client: httpx.Client) -> None:
    ids = [post(client, "maria", f"message {i}")["id"] for i in range(5)]
    page = client.get("/v1/worlds/w/messages", params={"limit": 2}).json()
    assert [m["id"] for m in page["messages"]] == ids[:2]
    rest = client.get("/v1/worlds/w/messages", params={"after": page["next_after"], "limit": 10}).json()
    assert [m["id"] for m in rest["messages"]] == ids[2:]
    assert rest["next_after"] is None


def test_caller_supplied_timestamp_is_kept(client: httpx.Client) -> None:
    message = post(client, "maria", "imported", created_at="2023-05-08T13:56:00Z")
    assert message["created_at"] == "2023-05-08T13:56:00+00:00"


def test_post_with_the_same_idempotency_key_stores_one_message(client: httpx.Client) -> None:
    first = post(client, "maria", "hello", idempotency_key="k1")
    again = post(client, "maria", "hello", idempotency_key="k1")
    assert again["id"] == first["id"]
    assert len(client.get("/v1/worlds/w/messages").json()["messages"]) == 1


# -- context --------------------------------------------------------------------------------


def test_seed_000_context_over_http(client: httpx.Client) -> None:
    post(client, "maria", "hi")
    post(client, "agent-a", "how can I help you?")
    post(client, "maria", "@agent-b please help")
    body = client.post("/v1/worlds/w/agents/agent-b/context", json={}).json()
    assert body["messages"] == [
        {"role": "system", "content": "You are agent-b."},
        {"role": "user", "content": "hi", "name": "maria"},
        {"role": "user", "content": "@agent-b please help", "name": "maria"},
    ]
    assert body["report"]["excluded"] == {"not-addressed": 1}
    anthropic = client.post("/v1/worlds/w/agents/agent-b/context", json={"format": "anthropic"}).json()
    assert anthropic["system"] == "You are agent-b."
    assert anthropic["messages"] == [{"role": "user", "content": "maria: hi\n\nmaria: @agent-b please help"}]


def test_context_budget_too_small_is_a_422_naming_max_tokens(client: httpx.Client) -> None:
    post(client, "maria", "@agent-b please help")
    response = client.post("/v1/worlds/w/agents/agent-b/context", json={"max_tokens": 3})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "max_tokens"


# -- inbox ----------------------------------------------------------------------------------


def inbox(client: httpx.Client, agent: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/v1/worlds/w/agents/{agent}/inbox", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def ids(messages: list[dict[str, Any]]) -> list[int]:
    return [m["id"] for m in messages]


def test_check_returns_what_the_agent_would_answer_fifo_and_unread_until_acked(client: httpx.Client) -> None:
    hi = post(client, "maria", "hi all")
    to_a = post(client, "maria", "@agent-a first")
    post(client, "maria", "@agent-b not for a")
    to_a2 = post(client, "maria", "@agent-a second")
    first = inbox(client, "agent-a")
    assert ids(first["new_mentions"]) == [hi["id"], to_a["id"], to_a2["id"]]
    # At-least-once: nothing was marked read, so they come again.
    assert ids(inbox(client, "agent-a")["new_mentions"]) == ids(first["new_mentions"])
    acked = client.post("/v1/worlds/w/agents/agent-a/inbox/ack", json={"ids": [hi["id"], to_a["id"]]})
    assert acked.json() == {"acknowledged": 2}
    assert ids(inbox(client, "agent-a", mark_read=True)["new_mentions"]) == [to_a2["id"]]
    assert inbox(client, "agent-a")["new_mentions"] == []


def test_check_limit_keeps_the_rest_for_later(client: httpx.Client) -> None:
    sent = [post(client, "maria", f"@agent-a task {i}")["id"] for i in range(5)]
    assert ids(inbox(client, "agent-a", limit=2, mark_read=True)["new_mentions"]) == sent[:2]
    assert ids(inbox(client, "agent-a", limit=10, mark_read=True)["new_mentions"]) == sent[2:]


def test_waiting_check_wakes_when_a_message_arrives(live: LiveServer, client: httpx.Client) -> None:
    result: dict[str, Any] = {}

    def wait() -> None:
        with live.client(timeout=60) as c:
            result["body"] = inbox(c, "agent-a", wait=True, timeout=30)

    waiter = threading.Thread(target=wait)
    waiter.start()
    wait_until(lambda: waiting(client) == 1)
    post(client, "maria", "@agent-b not you")  # wakes agent-a's check, which goes back to sleep
    wait_until(lambda: waiting(client) == 1)
    message = post(client, "maria", "@agent-a now you")
    waiter.join(timeout=30)
    assert not waiter.is_alive()
    assert ids(result["body"]["new_mentions"]) == [message["id"]]
    assert waiting(client) == 0


def test_waiting_check_times_out_with_an_empty_result(client: httpx.Client) -> None:
    body = inbox(client, "agent-a", wait=True, timeout=0.2, include_context=True)
    assert body["new_mentions"] == [] and body["context"] == []
    assert waiting(client) == 0


def test_a_client_that_disconnects_is_cleaned_up(live: LiveServer, client: httpx.Client) -> None:
    def wait_then_vanish() -> None:
        with live.client(timeout=0.5) as c, pytest.raises(httpx.ReadTimeout):
            c.get("/v1/worlds/w/agents/agent-a/inbox", params={"wait": True, "timeout": 60})

    thread = threading.Thread(target=wait_then_vanish)
    thread.start()
    thread.join(timeout=10)
    # The client closed its socket after 0.5 s; the server drops its waiter without a post.
    wait_until(lambda: waiting(client) == 0)
    assert "recall_inbox_waiting 0" in client.get("/metrics").text


def test_context_once_sends_linear_not_quadratic_context(client: httpx.Client) -> None:
    """100 messages: agent-a is asked 50 times and answers 50 times, checking with context each time."""
    sent_context = 0
    for turn in range(50):
        post(client, "maria", f"@agent-a question {turn}")
        body = inbox(client, "agent-a", include_context=True, mark_read=True, session="s1")
        assert len(body["new_mentions"]) == 1
        sent_context += len(body["context"])
        if turn:
            assert body["context_metadata"]["delta"] is True
        reply = client.post("/v1/worlds/w/agents/agent-a/send", json={"content": f"answer {turn}"})
        assert reply.status_code == 201
    # Each message went out once, as a mention or as context: about n, not n²/2 (~2,500).
    assert sent_context <= 100
    assert sent_context >= 49  # the agent's own answers, each sent once
    fresh = inbox(client, "agent-a", include_context=True, session="s1", refresh=True, context_limit=100)
    assert fresh["context_metadata"]["delta"] is False
    assert len(fresh["context"]) == 100


def test_context_is_the_filtered_history_of_the_chat(client: httpx.Client) -> None:
    hi = post(client, "maria", "hi")
    post(client, "agent-a", "how can I help you?")
    ask = post(client, "maria", "@agent-b please help")
    body = inbox(client, "agent-b", include_context=True)
    assert ids(body["new_mentions"]) == [hi["id"], ask["id"]]
    assert body["context"] == []  # agent-a's reply was not for agent-b
    meta = body["context_metadata"]
    assert meta["total_messages"] == 0 and meta["delta"] is False


def test_a_check_with_context_carries_the_recalled_past(client: httpx.Client) -> None:
    old = post(client, "maria", "The spare key is under the blue flowerpot.", chat_id="house")
    post(client, "maria", "@agent-a where is the spare key?", chat_id="now")
    body = inbox(client, "agent-a", include_context=True, session="s1")
    recalled = body["recalled"]
    assert "maria: The spare key is under the blue flowerpot." in recalled["content"]
    passage = next(p for p in recalled["passages"] if p["id"] == old["id"])
    assert passage["chat_id"] == "house" and passage["rank"] >= 1 and passage["tokens"] > 0
    again = inbox(client, "agent-a", include_context=True, session="s1")
    assert again["recalled"]["unchanged"] is True and again["recalled"]["content"] is None
    assert "recalled" not in inbox(client, "agent-a")


def test_send_returns_id_time_mentions_and_thread(client: httpx.Client) -> None:
    ask = post(client, "maria", "@agent-a ping")
    sent = client.post(
        "/v1/worlds/w/agents/agent-a/send",
        json={"content": "@agent-b can you check?", "parent_id": ask["id"], "idempotency_key": "r1"},
    ).json()
    assert sent["mentions"] == ["agent-b"]
    assert sent["thread_id"] == ask["id"]
    assert sent["delivered_to"] == ["agent-b"]
    again = client.post(
        "/v1/worlds/w/agents/agent-a/send",
        json={"content": "@agent-b can you check?", "parent_id": ask["id"], "idempotency_key": "r1"},
    ).json()
    assert again["message_id"] == sent["message_id"]


# -- private memory, observations -----------------------------------------------------------


def test_remember_recall_forget_with_ttl(client: httpx.Client) -> None:
    base = "/v1/worlds/w/agents/agent-a/memory"
    assert client.put(f"{base}/favourite", json={"value": {"colour": "green"}}).status_code == 200
    assert client.get(f"{base}/favourite").json()["value"] == {"colour": "green"}
    assert client.put(f"{base}/brief", json={"value": "gone soon", "ttl": 0.05}).status_code == 200
    time.sleep(0.1)
    assert client.get(f"{base}/brief").status_code == 404
    assert [i["key"] for i in client.get(base).json()["items"]] == ["favourite"]
    assert client.get("/v1/worlds/w/agents/agent-b/memory/favourite").status_code == 404
    assert client.delete(f"{base}/favourite").json() == {"forgotten": True}
    assert client.delete(f"{base}/favourite").json() == {"forgotten": False}


def test_notes_are_the_names_and_memory_a_deprecated_alias(client: httpx.Client) -> None:
    notes, memory = "/v1/worlds/w/agents/agent-a/notes", "/v1/worlds/w/agents/agent-a/memory"
    kept = client.put(f"{notes}/favourite", json={"value": {"colour": "green"}})
    assert kept.status_code == 200 and kept.json()["key"] == "favourite"
    # One store, two names: what one route keeps, the other reads, lists and forgets.
    assert client.get(f"{memory}/favourite").json() == client.get(f"{notes}/favourite").json() == kept.json()
    assert client.put(f"{memory}/colour", json={"value": "red"}).status_code == 200
    assert [i["key"] for i in client.get(notes).json()["items"]] == ["colour", "favourite"]
    assert client.get(notes).json() == client.get(memory).json()
    assert client.delete(f"{notes}/colour").json() == {"forgotten": True}
    assert client.delete(f"{memory}/colour").json() == {"forgotten": False}
    assert client.get(f"{notes}/colour").status_code == 404
    paths = client.get("/openapi.json").json()["paths"]
    for method in ("put", "get", "delete"):
        assert paths["/v1/worlds/{world}/agents/{agent}/memory/{key}"][method]["deprecated"] is True
        assert "deprecated" not in paths["/v1/worlds/{world}/agents/{agent}/notes/{key}"][method]
    assert paths["/v1/worlds/{world}/agents/{agent}/memory"]["get"]["deprecated"] is True


def test_observations_show_in_the_context(client: httpx.Client) -> None:
    response = client.post(
        "/v1/worlds/w/agents/agent-a/observations", json={"time": 0, "position": [2, 1], "collected": 1}
    )
    assert response.status_code == 201
    post(client, "maria", "@agent-a where are you?")
    messages = client.post("/v1/worlds/w/agents/agent-a/context", json={}).json()["messages"]
    assert any("At time 0s I was at position (2, 1)" in m["content"] for m in messages)


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("post", "/v1/worlds", {"id": "bad id!"}, 422, "id"),
        ("post", "/v1/worlds", {"id": "w"}, 409, None),
        ("post", "/v1/worlds", {"id": "x", "colour": "red"}, 422, "colour"),
        ("post", "/v1/worlds/w/messages", {"sender": "maria"}, 422, "content"),
        ("post", "/v1/worlds/w/messages", {"sender": "stranger", "content": "hi"}, 422, "sender"),
        ("post", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "parent_id": 999}, 422, "parent_id"),
        ("post", "/v1/worlds/nowhere/messages", {"sender": "maria", "content": "hi"}, 404, None),
        ("get", "/v1/worlds/w/agents/nobody/inbox", None, 404, None),
        ("get", "/v1/worlds/w/agents/agent-a/inbox?timeout=301", None, 422, "query.timeout"),
        ("post", "/v1/worlds/w/agents/agent-a/context", {"format": "xml"}, 422, "format"),
        ("post", "/v1/worlds/w/agents/agent-a/inbox/ack", {"ids": []}, 422, "ids"),
    ],
)
def test_invalid_requests_get_a_4xx_naming_the_problem(
    client: httpx.Client, method: str, path: str, body: Any, status: int, field: str | None
) -> None:
    response = client.request(method, path, json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["message"]
    if field is not None:
        assert error["field"] == field
    # Nothing was stored by a rejected request.
    assert client.get("/v1/worlds/w/messages").json()["messages"] == []


def test_a_malformed_id_or_type_is_refused_in_words_not_as_a_regex(live: LiveServer, client: httpx.Client) -> None:
    """Issue 24, point 12: a 422 quoted pydantic's `String should match pattern '^[A-Za-z0-9_]+…$'`.
    It says what the field takes, in the Python API's words."""
    with pytest.raises(InvalidInputError) as python_api:
        live.mem.world("bad id!", create=True)
    cases = [
        ("/v1/worlds", {"id": "bad id!"}, "id", python_api.value.problem),
        ("/v1/worlds/w/agents", {"id": "-x"}, "id", "'-x' is not a valid id: use up to 64 ASCII letters, digits"),
        ("/v1/worlds/w/humans", {"id": "maria@home"}, "id", "'maria@home' is not a valid id"),
        ("/v1/worlds/w/memories", {"content": "rule", "type": "Bad Type"}, "type", "a lowercase word of at most 40"),
    ]
    for path, body, field, words in cases:
        response = client.post(path, json=body)
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert (error["type"], error["field"]) == ("invalid_input", field)
        assert error["message"].startswith(words), error
        assert error["problems"] == [{"field": field, "message": error["message"]}]
        assert "pattern" not in response.text and "$" not in response.text, response.text
    assert [w["id"] for w in client.get("/v1/worlds").json()["worlds"]] == ["w"]


def _patterns(node: Any) -> Iterator[str]:
    """Every `pattern` an OpenAPI schema holds, wherever it is."""
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_every_pattern_of_the_api_is_said_in_words_in_paths_queries_and_bodies(tmp_path: Path) -> None:
    """Each pattern /openapi.json holds has its words, and the words are used wherever the
    pattern is checked: a path or query parameter as much as a body field."""
    with Recall(tmp_path / "recall.db", Settings()) as mem:
        app = create_app(mem.service, ServerConfig(rate_limit=0))
        assert set(_patterns(app.openapi())) == set(schemas.PATTERN_WORDS)

        @app.get("/probe/{name}")
        def probe(
            name: Annotated[str, FastAPIPath(pattern=schemas.ID_REGEX)],
            kind: Annotated[str, Query(pattern=schemas.NOTE_TYPE_REGEX)] = "note",
        ) -> dict[str, str]:
            return {"name": name, "kind": kind}

        client = TestClient(app, base_url="http://127.0.0.1")
        assert client.get("/probe/ok").json() == {"name": "ok", "kind": "note"}
        errors = [
            client.get("/probe/bad%20id!").json()["error"],
            client.get("/probe/ok", params={"kind": "Episode"}).json()["error"],
        ]
    assert [(e["field"], e["message"]) for e in errors] == [
        ("path.name", schemas.pattern_in_words(schemas.ID_REGEX, "bad id!")),
        ("query.kind", "a lowercase word of at most 40 characters (e.g. note, episode), got 'Episode'"),
    ]
    assert errors[0]["message"].startswith("'bad id!' is not a valid id: use up to 64 ASCII letters")


def test_rate_limit_answers_429_with_retry_after(tmp_path: Any) -> None:
    server = start_server(tmp_path / "limited.db", ServerConfig(rate_limit=3))
    try:
        with server.client() as c:
            c.post("/v1/worlds", json={"id": "w"})
            c.post("/v1/worlds/w/agents", json={"id": "agent-a"})
            statuses = [c.get("/v1/worlds/w/agents/agent-a/inbox").status_code for _ in range(4)]
            assert statuses == [200, 200, 200, 429]
            refused = c.get("/v1/worlds/w/agents/agent-a/inbox")
            assert int(refused.headers["Retry-After"]) >= 1
            assert refused.json()["error"]["type"] == "rate_limited"
            assert "recall_rate_limited_total 2" in c.get("/metrics").text
    finally:
        stop_server(server)


def test_health_and_readiness(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready"}
    assert client.get("/openapi.json").json()["info"]["title"] == "recall"


# -- helpers --------------------------------------------------------------------------------


def waiting(client: httpx.Client) -> int:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("recall_inbox_waiting "):
            return int(float(line.split()[1]))
    raise AssertionError("no recall_inbox_waiting gauge")


def wait_until(condition: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def test_message_details_and_deliveries_only_read(client: httpx.Client) -> None:
    post(client, "maria", "@agent-a hello")
    post(client, "agent-a", "hi maria")  # addresses nobody
    listed = client.get("/v1/worlds/w/messages", params={"detail": "true"}).json()["messages"]
    assert [(m["delivered_to"], m["would_respond"]) for m in listed] == [
        (["agent-a", "agent-b"], ["agent-a"]),
        (["agent-b"], []),
    ]
    assert "delivered_to" not in client.get("/v1/worlds/w/messages").json()["messages"][0]
    for _ in range(2):  # reading deliveries marks nothing read
        seen = client.get("/v1/worlds/w/agents/agent-b/deliveries").json()["messages"]
        assert [(m["content"], m["read"]) for m in seen] == [("@agent-a hello", False), ("hi maria", False)]
    client.post("/v1/worlds/w/agents/agent-b/inbox/ack", json={"ids": [seen[0]["id"]]}).raise_for_status()
    unread = client.get("/v1/worlds/w/agents/agent-b/deliveries", params={"unread_only": "true"}).json()
    assert [m["content"] for m in unread["messages"]] == ["hi maria"]

"""The answers /openapi.json documents are the answers the server sends.

One walk through the whole HTTP API with valid requests (and a few refused ones), against a real
server: every JSON answer, an error's too, is checked against the schema /openapi.json gives for
its route and status, strictly (a field the schema names is sent, with its type; a field sent is
named by the schema, unless the schema allows more), and the walk must have a success of every
route that documents a JSON answer. The TypeScript client's types are generated from these
schemas, so they are as true as this test.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import jsonschema
import pytest

from recall.api import Recall
from recall.server.app import create_app
from tests.server.conftest import LiveServer, running

JSON = "application/json"

#: `format: date-time` checked as recall writes its times: ISO 8601 with the offset (jsonschema's
#: own check needs a package the suite does not install, and passes anything without it).
TIMES = jsonschema.FormatChecker(formats=())


@TIMES.checks("date-time", raises=ValueError)
def _is_time(value: object) -> bool:
    return not isinstance(value, str) or datetime.fromisoformat(value).tzinfo is not None


def strict(node: Any) -> Any:
    """The schema with every object that names its properties closed to others (where it does
    not say otherwise): an undocumented field fails the check instead of passing unseen."""
    if isinstance(node, dict):
        out = {name: strict(value) for name, value in node.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [strict(value) for value in node]
    return node


class AnswerChecker:
    """Checks answers against an OpenAPI document; remembers the routes it checked a success of."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.components = strict(spec["components"])
        self.routes: list[tuple[re.Pattern[str], str, str, dict[str, Any]]] = []
        for path, operations in spec["paths"].items():
            pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")
            for method, operation in operations.items():
                self.routes.append((pattern, method.upper(), path, operation))
        # A literal segment wins over a parameter (`/facts/export` over `/facts/{fact_id}`).
        self.routes.sort(key=lambda route: route[2].count("{"))
        self.checked: set[tuple[str, str]] = set()

    def documented(self) -> set[tuple[str, str]]:
        """Every route that documents a JSON answer for success."""
        return {
            (method, path)
            for _, method, path, operation in self.routes
            if any(
                code.startswith("2") and JSON in (r.get("content") or {}) for code, r in operation["responses"].items()
            )
        }

    def check(self, method: str, path: str, status: int, body: Any) -> None:
        """Raise jsonschema's ValidationError when `body` is not what the route documents."""
        route = next(((t, op) for p, m, t, op in self.routes if m == method and p.match(path)), None)
        assert route is not None, f"{method} {path} is not in the OpenAPI schema"
        template, operation = route
        responses = operation["responses"]
        documented = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX")
        assert documented is not None, f"{method} {template} answered {status}, which it does not document"
        schema = documented["content"][JSON]["schema"]
        try:
            jsonschema.validate(body, {**strict(schema), "components": self.components}, format_checker=TIMES)
        except jsonschema.ValidationError as wrong:
            wrong.message = f"{method} {template} answered {status}: {wrong.message}"
            raise
        if status < 300:
            self.checked.add((method, template))

    def hook(self, response: httpx.Response) -> None:
        """An httpx response hook: check each JSON answer, an error's too."""
        if not response.headers.get("content-type", "").startswith(JSON) or response.url.path == "/openapi.json":
            return
        response.read()
        self.check(response.request.method, response.request.url.path, response.status_code, response.json())


@pytest.fixture
def checked(live: LiveServer) -> Iterator[tuple[httpx.Client, AnswerChecker]]:
    with live.client() as plain:
        checker = AnswerChecker(plain.get("/openapi.json").json())
    with httpx.Client(base_url=live.url, timeout=10, event_hooks={"response": [checker.hook]}) as client:
        yield client, checker


def ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json() if response.headers.get("content-type", "").startswith(JSON) else response.text


def test_every_json_answer_is_the_one_documented(checked: tuple[httpx.Client, AnswerChecker]) -> None:
    c, checker = checked
    world, agent = "/v1/worlds/w", "/v1/worlds/w/agents/agent-a"
    ok(c.get("/healthz"))
    ok(c.get("/readyz"))
    ok(c.get("/v1/worlds"))
    ok(c.post("/v1/worlds", json={"id": "spare", "name": "Spare", "turn_limit": 5}))
    ok(c.post(f"{world}/agents", json={"id": "agent-c", "goals": ["help"]}))
    ok(c.post(f"{world}/agents", params={"exist_ok": "true"}, json={"id": "agent-c", "goals": ["help"]}))
    ok(c.post(f"{world}/humans", json={"id": "bob"}))
    ok(c.patch(f"{world}/agents/agent-c", json={"max_tokens": 4000, "recalled_cutoff": 0.5}))
    ok(c.get(f"{world}/agents/agent-c"))
    ok(c.get(f"{world}/agents"))
    ok(c.get(f"{world}/humans"))

    # Messages, a thread and a tool call answered by its result.
    first = ok(c.post(f"{world}/messages", json={"sender": "maria", "content": "@agent-a what is on today?"}))
    ok(c.post(f"{world}/messages", json={"sender": "bob", "content": "@agent-a and for me?", "chat_id": "side"}))
    ok(c.post(f"{agent}/send", json={"content": "Checking.", "parent_id": first["id"]}))
    tool_call = {"id": "call_1", "type": "function", "function": {"name": "calendar", "arguments": "{}"}}
    ok(c.post(f"{agent}/send", json={"content": "", "metadata": {"tool_calls": [tool_call]}}))
    ok(c.post(f"{agent}/tool-results", json={"call_id": "call_1", "content": "a meeting at 10"}))
    ok(c.get(f"{world}/messages", params={"detail": "true", "limit": 2}))
    ok(c.get(f"{world}/messages", params={"all_chats": "true"}))
    ok(c.get(world))

    # The agent's inbox, decisions and turns.
    ok(c.get(f"{agent}/deliveries"))
    ok(c.get(f"{agent}/inbox", params={"include_context": "true", "limit": 1}))
    ok(c.get(f"{agent}/inbox", params={"mark_read": "true", "session": "other"}))
    ok(c.post(f"{agent}/inbox/ack", json={"ids": [first["id"]]}))
    ok(c.post(f"{agent}/decide", json={"message_id": first["id"]}))
    ok(c.post(f"{agent}/llm-calls"))
    ok(c.post(f"{agent}/observations", json={"time": 1.0, "position": [0, 1], "note": "rain"}))
    ok(c.post(f"{agent}/actions", json={"time": 2.0, "kind": "say", "utterance": "hello"}))

    # Memories, notes and facts, so that contexts and searches have them to show.
    memory = ok(c.post(f"{world}/memories", json={"content": "The office opens at 9.", "importance": 8}))
    ok(c.patch(f"{world}/memories/{memory['id']}", json={"importance": 9}))
    own = ok(c.post(f"{agent}/memories", json={"content": "Maria likes short answers.", "metadata": {"k": 1}}))
    ok(c.patch(f"{agent}/memories/{own['id']}", json={"content": "Maria likes very short answers."}))
    ok(c.get(f"{world}/memories"))
    ok(c.get(f"{agent}/memories"))
    for notes in (f"{agent}/notes", f"{agent}/memory"):
        ok(c.put(f"{notes}/plan", json={"value": {"step": 1}, "ttl": 60}))
        ok(c.get(f"{notes}/plan"))
        ok(c.get(notes))
        ok(c.delete(f"{notes}/plan"))
    facts = "/v1/scopes/user:maria/facts"
    fact = ok(c.post(facts, json={"content": "Maria works mornings.", "category": "preference"}))
    ok(c.post(facts, json={"content": "Never call before 8.", "category": "correction", "avoid": "early calls"}))
    ok(c.patch(f"{facts}/{fact['id']}", json={"confidence": 0.8}))
    ok(c.get(f"{facts}/{fact['id']}"))
    ok(c.put("/v1/scopes/user:maria/sections", json={"work_context": "Runs the front desk."}))
    ok(c.get("/v1/scopes/user:maria/sections"))
    ok(c.get(facts))
    ok(c.get("/v1/scopes"))
    export = ok(c.get(f"{facts}/export"))
    ok(c.post("/v1/scopes/user:bob/facts/import", json=export))

    # Contexts in both formats, recorded, then read back, replayed and compared.
    ok(c.post(f"{agent}/context", json={"format": "anthropic"}))
    made = ok(c.post(f"{agent}/context", json={"record": True, "message_id": first["id"]}))
    other = ok(c.post(f"{agent}/context", json={"record": True, "max_tokens": 300}))
    ok(c.post(f"{agent}/calls/{made['call_id']}/outcome", json={"error": "the model timed out"}))
    ok(c.get(f"{agent}/calls"))
    ok(c.get(f"{agent}/calls/{made['call_id']}"))
    ok(c.get(f"{agent}/calls/{made['call_id']}/replay"))
    ok(c.post(f"{agent}/calls/{made['call_id']}/compare", json={"other": other["call_id"]}))
    ok(c.post(f"{agent}/calls/{made['call_id']}/compare", json={"max_tokens": 200}))

    ok(c.post(f"{world}/search", json={"query": "office hours", "kinds": ["message", "memory", "fact"]}))
    ok(c.post(f"{agent}/search", json={"query": "short answers"}))
    ok(c.post(f"{agent}/extract", json={}))
    ok(c.post(f"{agent}/extract", json={"scope": "user:maria"}))
    ok(c.post("/v1/extraction/flush"))

    # Deleting, one thing at a time, then a world exported and imported under another id.
    ok(c.delete(f"{facts}/{fact['id']}"))
    ok(c.delete(facts))
    ok(c.delete(f"{world}/memories/{memory['id']}"))
    ok(c.delete(f"{agent}/memories/{own['id']}"))
    ok(c.delete(f"{world}/messages/{first['id']}"))
    ok(c.delete(f"{world}/humans/bob", params={"erase": "true"}))
    ok(c.delete(f"{world}/agents/agent-c"))
    lines = ok(c.get(f"{world}/export"))
    ok(c.delete(world))
    ok(c.post("/v1/worlds/import", content=lines, headers={"Content-Type": "application/x-ndjson"}))

    # Refusals answer recall's error body, as every route documents it.
    assert c.get("/v1/worlds/nowhere").status_code == 404
    assert c.post("/v1/worlds", json={"id": "spare"}).status_code == 409
    refused = c.post(f"{world}/agents", json={"id": "not an id", "max_tokens": -1})
    assert refused.status_code == 422 and len(refused.json()["error"]["problems"]) == 2, refused.text

    assert checker.documented() - checker.checked == set(), "routes whose answers this walk did not check"


def test_the_check_fails_on_a_wrong_type_a_missing_field_or_an_undocumented_one(mem: Recall) -> None:
    mem.world("w", create=True).add_human("maria")
    with running(create_app(mem.service)) as url, httpx.Client(base_url=url, timeout=10) as c:
        spec = c.get("/openapi.json").json()
        world = c.get("/v1/worlds/w").json()
    path, status = "/v1/worlds/w", 200

    wrong_type = copy.deepcopy(spec)
    wrong_type["components"]["schemas"]["WorldInfo"]["properties"]["created_at"] = {"type": "integer"}
    # WorldDetail repeats WorldInfo's fields (a TypedDict's schema is flat).
    wrong_type["components"]["schemas"]["WorldDetail"]["properties"]["created_at"] = {"type": "integer"}
    with pytest.raises(jsonschema.ValidationError, match="is not of type 'integer'"):
        AnswerChecker(wrong_type).check("GET", path, status, world)

    with pytest.raises(jsonschema.ValidationError, match="'humans' is a required property"):
        AnswerChecker(spec).check("GET", path, status, {k: v for k, v in world.items() if k != "humans"})

    with pytest.raises(jsonschema.ValidationError, match="is not a 'date-time'"):
        AnswerChecker(spec).check("GET", path, status, {**world, "created_at": "yesterday"})

    with pytest.raises(jsonschema.ValidationError, match="'owner' was unexpected"):
        AnswerChecker(spec).check("GET", path, status, {**world, "owner": "acme"})

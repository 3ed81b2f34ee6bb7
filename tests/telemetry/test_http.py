"""A real server over real HTTP: a request's `traceparent` is the parent of the server span, and
recall's spans (the post, the context build, the inbox wait) are children of it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from recall import Recall, World, telemetry
from recall.server.config import ServerConfig
from recall.server.inbox import CheckAnswer, CheckRequest, InboxChecks, InboxQuery
from recall.server.tracing import TraceRequests
from tests.server.conftest import LiveServer, create_world_w, start_server, stop_server
from tests.server.test_http_api import wait_until, waiting
from tests.telemetry.conftest import Recorded, all_attribute_values

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PARENT_ID = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{PARENT_ID:016x}-01"
MARKER = "kumquat-nebula-5519"


@pytest.fixture
def server(tmp_path: Path, otel: Recorded) -> Iterator[LiveServer]:
    live = start_server(tmp_path / "recall.db", ServerConfig(rate_limit=0))
    with live.client() as c:
        create_world_w(c)
    otel.exporter.clear()
    yield live
    stop_server(live)


def children(otel: Recorded, parent: Any) -> list[str]:
    return sorted(s.name for s in otel.spans() if s.parent is not None and s.parent.span_id == parent.context.span_id)


def test_a_traceparent_is_the_parent_of_the_request_and_of_recalls_spans(server: LiveServer, otel: Recorded) -> None:
    with server.client() as c:
        posted = c.post(
            "/v1/worlds/w/messages",
            json={"sender": "maria", "content": f"@agent-a my code is {MARKER}"},
            headers={"traceparent": TRACEPARENT},
        )
        assert posted.status_code == 201
        built = c.post("/v1/worlds/w/agents/agent-a/context", json={"max_tokens": 500})
        assert built.status_code == 200 and MARKER in built.text

    request = otel.one("POST /v1/worlds/{world}/messages")
    assert request.kind.name == "SERVER" and request.parent is not None
    assert (request.context.trace_id, request.parent.span_id, request.parent.is_remote) == (TRACE_ID, PARENT_ID, True)
    attributes = dict(request.attributes or {})
    assert attributes == {
        "http.request.method": "POST",
        "http.route": "/v1/worlds/{world}/messages",
        "http.response.status_code": 201,
    }
    assert children(otel, request) == ["recall.post"]
    post = otel.one("recall.post")
    assert post.context.trace_id == TRACE_ID
    assert dict(post.attributes or {})["recall.post.recipients"] == 2

    # Without a traceparent, a trace of its own; the context build (in a worker thread) is the
    # request's child all the same.
    context_request = otel.one("POST /v1/worlds/{world}/agents/{agent}/context")
    assert context_request.parent is None and context_request.context.trace_id != TRACE_ID
    assert children(otel, context_request) == ["recall.context"]
    assert not [v for v in all_attribute_values(otel) if MARKER in v]


def test_an_inbox_wait_says_whether_a_post_woke_it_or_it_timed_out(server: LiveServer, otel: Recorded) -> None:
    answered: dict[str, Any] = {}

    def wait() -> None:
        with server.client(timeout=60) as c:
            answered["body"] = c.get(
                "/v1/worlds/w/agents/agent-a/inbox",
                params={"wait": True, "timeout": 30},
                headers={"traceparent": TRACEPARENT},
            ).json()

    waiter = threading.Thread(target=wait)
    waiter.start()
    with server.client() as c:
        wait_until(lambda: waiting(c) == 1)
        c.post("/v1/worlds/w/messages", json={"sender": "maria", "content": f"@agent-a {MARKER}"}).raise_for_status()
        waiter.join(timeout=30)
        assert not waiter.is_alive() and len(answered["body"]["new_mentions"]) == 1
        timed_out = c.get("/v1/worlds/w/agents/agent-b/inbox", params={"wait": True, "timeout": 0.2})
        assert timed_out.json()["new_mentions"] == []

    woken, expired = sorted(otel.spans("recall.inbox.wait"), key=lambda s: s.start_time or 0)
    assert woken.context.trace_id == TRACE_ID
    assert dict(woken.attributes or {}) == {
        "recall.world.id": "w",
        "recall.agent.id": "agent-a",
        "recall.inbox.timeout": 30.0,
        "recall.inbox.ended": "mentions",
        "recall.inbox.woken": True,
    }
    assert dict(expired.attributes or {})["recall.inbox.ended"] == "timeout"
    assert dict(expired.attributes or {})["recall.inbox.woken"] is False
    wakes = [dict(s.attributes or {}) for s in otel.spans("recall.inbox.wake")]
    assert {"recall.world.id": "w", "recall.inbox.woken": 1} in wakes
    labels = sorted(
        (p.attributes["recall.inbox.ended"], p.attributes["recall.inbox.woken"], p.count)
        for p in otel.points()["recall.inbox.wait.duration"]
    )
    assert labels == [("mentions", True, 1), ("timeout", False, 1)]
    assert not [v for v in all_attribute_values(otel) if MARKER in v]


def test_a_5xx_answer_marks_the_request_span_failed_and_a_4xx_does_not(otel: Recorded) -> None:
    # An answer a handler chose (recall's 503 store_busy, /readyz's 503): no exception reaches the
    # middleware, so the status it sends is what marks the span.
    async def answering(scope: Scope, receive: Receive, send: Send) -> None:
        status = int(scope["path"].rsplit("/", 1)[1])
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    c = TestClient(TraceRequests(answering))  # not entered: no lifespan, requests only
    assert c.get("/answer/503").status_code == 503
    assert c.get("/answer/404").status_code == 404

    failed, refused = sorted(otel.spans("GET"), key=lambda s: s.start_time or 0)
    assert failed.status.status_code is StatusCode.ERROR
    assert dict(failed.attributes or {})["error.type"] == "503"
    assert refused.status.status_code is StatusCode.UNSET and "error.type" not in dict(refused.attributes or {})


def test_checks_batched_together_build_each_context_in_its_own_requests_trace(
    mem: Recall, world: World, otel: Recorded
) -> None:
    # Checks that arrive together run in one worker-thread call, started from the first one's
    # context: each context built there must still be the child of its own request.
    world.post("maria", "@agent-a hello")
    world.post("maria", "@agent-b hello")
    checks = InboxChecks(mem.service)

    async def check_in(request: str, agent: str) -> CheckAnswer:
        with telemetry.span(request):
            return await checks.check(CheckRequest("w", agent, InboxQuery(include_context=True)))

    async def both() -> list[CheckAnswer]:
        # gather starts both before the batch runs: one batch holds the two checks.
        return await asyncio.gather(check_in("first", "agent-a"), check_in("second", "agent-b"))

    answers = asyncio.run(both())
    assert [len(a.result.new_mentions) for a in answers] == [1, 1]
    contexts = otel.spans("recall.context")
    assert len(contexts) == 2
    by_agent = {dict(s.attributes or {})["recall.agent.id"]: s for s in contexts}
    assert children(otel, otel.one("first")) == ["recall.context"]
    assert children(otel, otel.one("second")) == ["recall.context"]
    assert by_agent["agent-b"].context.trace_id == otel.one("second").context.trace_id

"""Slow work never holds the event loop: while a context build waits on a slow model (its history
summary), posts, long polls and /metrics are still answered at once, over REST and over MCP."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import pytest

from recall.api import Recall
from recall.server.app import create_app
from recall.server.config import ServerConfig
from recall.server.inbox import Notifier
from recall.server.mcp_http import mount_mcp
from recall.settings import Settings
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.server.conftest import post, start_uvicorn
from tests.server.test_mcp import mcp_session, ok

SUMMARY = "Maria listed parcel numbers 1000 to 1014."
#: Client timeout of the requests made while the model is blocked: far below the model's wait.
PROMPT = 5.0


@dataclass
class BlockedModel:
    """A model reply that waits until the test releases it; `called` says it is waiting."""

    called: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def __call__(self, path: str, body: dict[str, Any]) -> str:
        self.called.set()
        self.release.wait(60)
        return SUMMARY


@dataclass
class Served:
    url: str
    mem: Recall

    def client(self, timeout: float = 10) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout)


@pytest.fixture
def blocked(model_server: ModelServer) -> Iterator[BlockedModel]:
    model = BlockedModel()
    model_server.responder = model
    try:
        yield model
    finally:
        model.release.set()  # a failing test must not leave the server's worker waiting


@pytest.fixture
def served(store_location: str, model_server: ModelServer, blocked: BlockedModel) -> Iterator[Served]:
    """A server (REST and MCP) whose chat model is the blocking one, with world `w`: human maria,
    agents agent-a and agent-b, and 31 messages between maria and agent-a (more than the
    20 the context builder keeps before it summarises)."""
    settings = Settings(
        llm_provider="openai",
        llm_model="test-model",
        llm_base_url=model_server.openai_url,
        embeddings="none",
        index_interval=0,
        extraction_debounce=3600.0,
    )
    mem = Recall(store_location, settings)
    app = create_app(mem.service, ServerConfig(rate_limit=0))
    mount_mcp(app)
    url, server, thread = start_uvicorn(app)
    live = Served(url, mem)
    try:
        with live.client() as c:
            c.post("/v1/worlds", json={"id": "w"}).raise_for_status()
            for agent in ("agent-a", "agent-b"):
                c.post("/v1/worlds/w/agents", json={"id": agent, "system_prompt": "You help."}).raise_for_status()
            c.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
            for i in range(15):
                post(c, "maria", f"@agent-a Note {i}: the parcel number is {1000 + i}, please keep it in mind.")
                post(c, "agent-a", f"Noted parcel {1000 + i}.")
        yield live
    finally:
        blocked.release.set()
        server.should_exit = True
        thread.join(timeout=10)
        mem.close()


def _rest_context(live: Served, trigger: int) -> dict[str, Any]:
    with live.client(timeout=60) as c:
        body = {"message_id": trigger, "max_tokens": 400, "history_limit": 100}
        response = c.post("/v1/worlds/w/agents/agent-a/context", json=body)
        assert response.status_code == 200, response.text
        return dict(response.json())


def _mcp_context(live: Served, trigger: int) -> dict[str, Any]:
    async def call() -> dict[str, Any]:
        async with mcp_session(live.url) as session:
            args = {"world": "w", "agent": "agent-a", "message_id": trigger, "max_tokens": 400, "history_limit": 100}
            return ok(await session.call_tool("context", args))

    return anyio.run(call)


def _waiting(c: httpx.Client) -> int:
    line = next(x for x in c.get("/metrics").text.splitlines() if x.startswith("recall_inbox_waiting "))
    return int(float(line.split()[1]))


@pytest.mark.parametrize("build", [_rest_context, _mcp_context], ids=["rest", "mcp"])
def test_a_context_waiting_on_the_model_does_not_hold_long_polls(
    served: Served, blocked: BlockedModel, model_server: ModelServer, build: Callable[[Served, int], dict[str, Any]]
) -> None:
    with served.client(timeout=PROMPT) as c:
        trigger = post(c, "maria", "@agent-a What was the first parcel number?")["id"]
        waiting_for_b = post(c, "maria", "@agent-b are you there?")["id"]

        built: list[dict[str, Any]] = []
        builder = threading.Thread(target=lambda: built.append(build(served, trigger)), daemon=True)
        builder.start()
        assert blocked.called.wait(20), "the context build never called the model"

        # The model is blocked: a long poll with a message waiting answers at once…
        first = c.get("/v1/worlds/w/agents/agent-b/inbox", params={"wait": True, "timeout": 20, "mark_read": True})
        assert first.status_code == 200, first.text
        assert [m["id"] for m in first.json()["new_mentions"]] == [waiting_for_b]

        # …and one with nothing waiting is woken by a post, all while the model still waits.
        woken: list[httpx.Response] = []

        def long_poll() -> None:
            with served.client(timeout=PROMPT * 3) as poller:
                params = {"wait": True, "timeout": 20, "mark_read": True}
                woken.append(poller.get("/v1/worlds/w/agents/agent-b/inbox", params=params))

        poller = threading.Thread(target=long_poll, daemon=True)
        poller.start()
        deadline = time.monotonic() + PROMPT
        while _waiting(c) == 0:
            assert time.monotonic() < deadline, "the long poll never started waiting"
        later = post(c, "maria", "@agent-b one more thing")["id"]
        poller.join(PROMPT)
        assert not poller.is_alive(), "the post did not wake the long poll"
        assert woken[0].status_code == 200, woken[0].text
        assert [m["id"] for m in woken[0].json()["new_mentions"]] == [later]

        assert not blocked.release.is_set() and builder.is_alive() and built == []
        blocked.release.set()
        builder.join(30)
        assert not builder.is_alive()

    messages = built[0]["messages"]
    assert messages[1] == {"role": "system", "content": f"Previous conversation summary:\n{SUMMARY}"}
    assert len(model_server.requests) == 1


def test_a_notify_from_a_worker_thread_wakes_a_waiter_at_once() -> None:
    """Work done in worker threads may announce a post: the waiter's loop is woken, not left
    asleep until its timeout (a future resolved from another thread does not wake its loop)."""

    async def wait() -> float:
        notifier = Notifier()
        future = notifier.subscribe("w", "agent-b").future
        loop = asyncio.get_running_loop()
        sleeping = threading.Event()

        def post_from_a_worker() -> None:
            sleeping.wait(10)  # the loop has gone on to wait for the future
            notifier.notify("w")

        threading.Thread(target=post_from_a_worker).start()
        started = loop.time()
        sleeping.set()
        done, _ = await asyncio.wait({future}, timeout=30)
        assert done == {future}
        return loop.time() - started

    assert asyncio.run(wait()) < 10

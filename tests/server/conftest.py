"""A real recall server on a free loopback port: uvicorn in a thread, a SQLite file per test."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from recall.api import Recall
from recall.server.app import create_app
from recall.server.config import ApiKey, ServerConfig
from recall.server.protocol import timed_http
from recall.settings import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    url: str
    mem: Recall
    server: uvicorn.Server

    def client(self, key: str | None = None, timeout: float = 10) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)


class QuickServer(uvicorn.Server):
    """uvicorn's server, stopping as soon as it may. uvicorn looks at `should_exit` every 0.1 s
    and, stopping, waits 0.1 s before it looks whether connections are still open: 0.2 s per
    stop, idle, in some 700 tests. This one looks every 5 ms. It stops in uvicorn's order:
    no new connections, open ones asked to close and waited for, running tasks waited for, the
    app's lifespan ended."""

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            await asyncio.sleep(0.005)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        while (self.server_state.connections or self.server_state.tasks) and not self.force_exit:
            await asyncio.sleep(0.005)
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()


def start_uvicorn(
    app: FastAPI,
    header_timeout: float | None = None,
    protocol: type[Any] | None = None,
    limit_concurrency: int | None = None,
) -> tuple[str, uvicorn.Server, threading.Thread]:
    """Serve `app` with uvicorn in a thread on a free loopback port, once it accepts requests:
    its URL, the server and the thread (set `server.should_exit` and join to stop it). The HTTP
    protocol is the one `recall serve` runs (`header_timeout`: the config's default), unless
    `protocol` names another; `limit_concurrency` the connection limit `recall serve` sets.
    The socket is bound here and handed to uvicorn, so no other test (or test process) can take
    the port between choosing it and serving on it."""
    if protocol is None:
        protocol = timed_http(ServerConfig().header_timeout if header_timeout is None else header_timeout)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", http=protocol, limit_concurrency=limit_concurrency
    )
    server = QuickServer(config)

    def serve() -> None:
        with sock:
            server.run(sockets=[sock])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    return f"http://127.0.0.1:{port}", server, thread


@contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """`start_uvicorn` for the length of a `with` block: the server's URL."""
    url, server, thread = start_uvicorn(app)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def start_server(db: str | Path, config: ServerConfig, settings: Settings | None = None) -> LiveServer:
    mem = Recall(db, settings or Settings())
    url, server, thread = start_uvicorn(create_app(mem.service, config))
    live = LiveServer(url, mem, server)
    live.thread = thread  # type: ignore[attr-defined]
    return live


def stop_server(live: LiveServer) -> None:
    live.server.should_exit = True
    live.thread.join(timeout=10)  # type: ignore[attr-defined]
    live.mem.close()


@pytest.fixture
def live(store_location: str) -> Iterator[LiveServer]:
    """An open server (no keys) with world `w`: human maria, agents agent-a, agent-b."""
    server = start_server(store_location, ServerConfig(rate_limit=0))
    with server.client() as c:
        c.post("/v1/worlds", json={"id": "w"}).raise_for_status()
        for agent in ("agent-a", "agent-b"):
            c.post("/v1/worlds/w/agents", json={"id": agent, "system_prompt": f"You are {agent}."}).raise_for_status()
        c.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
    yield server
    stop_server(server)


@pytest.fixture
def client(live: LiveServer) -> Iterator[httpx.Client]:
    with live.client() as c:
        yield c


KEYS = (
    ApiKey("acme-admin", "acme"),
    ApiKey("acme-a", "acme", "agent-a"),
    ApiKey("acme-b", "acme", "agent-b"),
    ApiKey("globex-admin", "globex"),
    # The operator's key: it alone reads /metrics (every tenant's counters).
    ApiKey("ops", "ops", admin=True),
)


@pytest.fixture
def secured(store_location: str) -> Iterator[LiveServer]:
    """A server with API keys: tenant acme owns world `w` (agents agent-a, agent-b; human maria)."""
    server = start_server(store_location, ServerConfig(keys=KEYS, rate_limit=0))
    with server.client("acme-admin") as c:
        create_world_w(c)
    yield server
    stop_server(server)


def create_world_w(c: httpx.Client) -> None:
    """World `w` of the client's tenant: agents agent-a and agent-b, human maria."""
    c.post("/v1/worlds", json={"id": "w"}).raise_for_status()
    for agent in ("agent-a", "agent-b"):
        c.post("/v1/worlds/w/agents", json={"id": agent}).raise_for_status()
    c.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()


def post(c: httpx.Client, sender: str, content: str, **more: Any) -> dict[str, Any]:
    response = c.post("/v1/worlds/w/messages", json={"sender": sender, "content": content, **more})
    assert response.status_code == 201, response.text
    return dict(response.json())

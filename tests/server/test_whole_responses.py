"""A response of known length leaves the server in one write (its head and body together): a
broadcast that wakes a thousand long polls made two thousand socket writes, a quarter of the
server's time. A streamed response's head still goes out before its body."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from recall.api import Recall
from recall.server.app import create_app
from recall.server.config import ServerConfig
from recall.server.protocol import timed_http
from recall.settings import Settings
from tests.server.conftest import start_uvicorn


class _Recorded:
    """A connection's real transport, with every write kept."""

    def __init__(self, transport: Any, writes: list[bytes]) -> None:
        self._transport = transport
        self._writes = writes

    def write(self, data: bytes) -> None:
        self._writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


@contextmanager
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, list[bytes]]]:
    """`recall serve`'s HTTP protocol on a real socket, its writes recorded: a client and them."""
    writes: list[bytes] = []

    class Recording(timed_http(ServerConfig().header_timeout)):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(_Recorded(transport, writes))

    mem = Recall(tmp_path / "whole.db", Settings(index_interval=0, embeddings="none"))
    url, server, thread = start_uvicorn(create_app(mem.service, ServerConfig(rate_limit=0)), protocol=Recording)
    try:
        with httpx.Client(base_url=url, timeout=10) as client:
            yield client, writes
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        mem.close()


def test_a_response_of_known_length_is_one_write(tmp_path: Path) -> None:
    with served(tmp_path) as (c, writes):
        for _ in range(2):  # also the second request on the same connection
            writes.clear()
            answer = c.get("/healthz")
            assert answer.status_code == 200
            assert len(writes) == 1
            assert writes[0].startswith(b"HTTP/1.1 200 ") and writes[0].endswith(answer.content)
        writes.clear()
        assert c.get("/v1/worlds/nowhere").status_code == 404  # an error answer too
        assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 404 ")


def test_a_woken_long_poll_is_answered_in_one_write(tmp_path: Path) -> None:
    with served(tmp_path) as (c, writes):
        assert c.post("/v1/worlds", json={"id": "w"}).status_code == 201
        assert c.post("/v1/worlds/w/agents", json={"id": "bob"}).status_code == 201
        answers: list[httpx.Response] = []
        waiting = threading.Thread(
            target=lambda: answers.append(
                c.get("/v1/worlds/w/agents/bob/inbox", params={"wait": "true", "timeout": 30})
            )
        )
        with httpx.Client(base_url=str(c.base_url), timeout=10) as poster:
            waiting.start()
            while poster.get("/metrics").text.count("recall_inbox_waiting 1") == 0:
                pass  # until the check waits
            writes.clear()
            assert (
                poster.post("/v1/worlds/w/messages", json={"sender": "user", "content": "@bob hi"}).status_code == 201
            )
        waiting.join(timeout=30)
        (answer,) = answers
        assert [m["content"] for m in answer.json()["new_mentions"]] == ["@bob hi"]
        poll_writes = [w for w in writes if answer.content in w]
        assert len(poll_writes) == 1 and poll_writes[0].startswith(b"HTTP/1.1 200 ")


def test_a_streamed_response_sends_its_head_first(tmp_path: Path) -> None:
    with served(tmp_path) as (c, writes):
        assert c.post("/v1/worlds", json={"id": "w"}).status_code == 201
        writes.clear()
        export = c.get("/v1/worlds/w/export")
        assert export.status_code == 200 and export.headers["transfer-encoding"] == "chunked"
        assert writes[0].startswith(b"HTTP/1.1 200 ") and writes[0].endswith(b"\r\n\r\n")
        assert len(writes) > 1

"""Issue 23, point 9: connections that trickle a request's head were never timed out (900 held
for 32 s; at a 1,024-descriptor limit /healthz failed). Each request's head must now arrive
within `header_timeout`, and connections are capped below the descriptor limit."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from recall.api import Recall
from recall.errors import InvalidInputError
from recall.server.app import create_app
from recall.server.config import ServerConfig, connection_limit, load_config
from recall.settings import Settings
from tests.server.conftest import start_uvicorn


@contextmanager
def served(tmp_path: Path, header_timeout: float, max_connections: int | None = None) -> Iterator[int]:
    """`recall serve`'s uvicorn settings on a free port: the port."""
    mem = Recall(tmp_path / "slow.db", Settings(index_interval=0, embeddings="none"))
    app = create_app(mem.service, ServerConfig(rate_limit=0))
    url, server, thread = start_uvicorn(app, header_timeout, limit_concurrency=max_connections)
    try:
        yield int(url.rsplit(":", 1)[1])
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        mem.close()


def closed_by_server(s: socket.socket) -> bool:
    """Whether the server closes the connection (recv gives b"") before the socket's timeout."""
    try:
        while True:
            if not s.recv(4096):
                return True
    except TimeoutError:
        return False


def test_a_head_that_never_completes_is_cut_off(tmp_path: Path) -> None:
    with served(tmp_path, header_timeout=0.5) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")  # and never the rest
            assert closed_by_server(s)
        # A client that sends its head in time is served, also a second time on the same connection.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as c:
            assert c.get("/healthz").status_code == 200
            assert c.get("/healthz").status_code == 200


def test_clients_that_hold_every_connection_cannot_keep_others_out(tmp_path: Path) -> None:
    """Issue 43, point 11: a client reconnecting each socket it loses held every connection the
    server allows, and /healthz failed for as long as it liked. At the limit, the connections
    waiting longest for a head make room for new ones; one in the middle of a request never."""
    with served(tmp_path, header_timeout=60, max_connections=8) as port:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            poll = c.build_request("GET", "/v1/worlds", headers={"Connection": "keep-alive"})
            assert c.send(poll).status_code == 200
        slow = []
        try:
            for _ in range(20):  # far more than the limit, each a head that never completes
                s = socket.create_connection(("127.0.0.1", port), timeout=15)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
                slow.append(s)
            for _ in range(3):  # served at once, well before the 60 s head deadline
                with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=15) as c:
                    assert c.get("/healthz").status_code == 200
            assert closed_by_server(slow[0])  # the oldest slow head made room
        finally:
            for s in slow:
                s.close()


def test_bytes_that_trickle_in_do_not_restart_the_clock(tmp_path: Path) -> None:
    with served(tmp_path, header_timeout=1.0) as port, socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        began = time.monotonic()
        s.settimeout(0.2)
        closed = False
        for i in range(60):  # a header line every 0.2 s for up to 12 s
            try:
                s.sendall(f"X-Trickle-{i}: x\r\n".encode())
            except OSError:
                closed = True
                break
            try:
                if s.recv(4096) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
        assert closed and time.monotonic() - began < 6


def test_the_settings(tmp_path: Path) -> None:
    config = load_config(environ={"RECALL_HEADER_TIMEOUT": "2.5", "RECALL_MAX_CONNECTIONS": "300"})
    assert (config.header_timeout, config.max_connections, connection_limit(config)) == (2.5, 300, 300)
    assert connection_limit(load_config(environ={})) >= 64
    with pytest.raises(InvalidInputError, match="header_timeout"):
        load_config(environ={"RECALL_HEADER_TIMEOUT": "0"})

"""Issue 23, point 1: the key is checked before a body is read, and every body has a cap.

A POST with no key and a 300 MB body used to be read and parsed (server memory 116 → 1,017 MB)
and answered 422, never 401. Each test speaks HTTP over a raw socket where it matters: it sends
the headers and a first piece of the body, and the answer must come before the rest is sent.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from recall import InvalidInputError, limits
from recall.app import world_export
from recall.server.config import DEFAULT_MAX_BODY_BYTES, ServerConfig, load_config
from tests.server.conftest import KEYS, LiveServer, create_world_w, start_server, stop_server

SMALL = 64 * 1024  # the caps of the test server
IMPORT_CAP = 256 * 1024


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[LiveServer]:
    config = ServerConfig(keys=KEYS, rate_limit=0, max_body_bytes=SMALL, max_import_bytes=IMPORT_CAP)
    server = start_server(tmp_path / "capped.db", config)
    with server.client("acme-admin") as c:
        create_world_w(c)
    yield server
    stop_server(server)


def early_answer(url: str, head: str, first_piece: bytes) -> str:
    """Send a request's head and the first piece of its body, then read the answer without
    sending the rest: the status line and headers (the server answers or closes; the socket's
    timeout turns a server that waits for the rest into a failure, not a hang)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=20) as s:
        s.sendall(head.encode() + b"\r\n" + first_piece)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer.decode("latin-1")


def test_a_body_without_a_valid_key_is_answered_401_before_it_is_read(capped: LiveServer) -> None:
    for authorization in ("", "Authorization: Bearer not-a-key\r\n"):
        head = (
            "POST /v1/worlds/w/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"{authorization}Content-Length: 300000000\r\n"
        )
        answer = early_answer(capped.url, head, b'{"sender": "maria", "content": "' + b"x" * 4096)
        assert answer.startswith("HTTP/1.1 401"), answer
        assert "www-authenticate: bearer" in answer.lower()


def test_a_declared_body_over_the_cap_is_answered_413_before_it_is_read(capped: LiveServer) -> None:
    head = (
        "POST /v1/worlds/w/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer acme-admin\r\nContent-Length: {SMALL + 1}\r\n"
    )
    answer = early_answer(capped.url, head, b'{"sender": "maria"')
    assert answer.startswith("HTTP/1.1 413"), answer


def test_a_streamed_body_over_the_cap_is_413_and_nothing_is_stored(capped: LiveServer) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap counts what arrives
        yield b'{"sender": "maria", "content": "'
        for _ in range(SMALL // 1024 + 2):
            yield b"y" * 1024
        yield b'"}'

    with capped.client("acme-admin") as c:
        response = c.post("/v1/worlds/w/messages", content=chunks(), headers={"content-type": "application/json"})
        assert response.status_code == 413, response.text
        error = response.json()["error"]
        assert error["type"] == "payload_too_large" and f"{SMALL:,} bytes" in error["message"]
        assert c.get("/v1/worlds/w/messages").json()["messages"] == []
        # At the cap's side of the line a body is taken.
        content = "z" * (SMALL - 200)
        assert c.post("/v1/worlds/w/messages", json={"sender": "maria", "content": content}).status_code == 201


def test_an_import_has_its_own_cap(capped: LiveServer) -> None:
    with capped.client("acme-admin") as c:
        export = c.get("/v1/worlds/w/export").content
        assert len(export) < SMALL
        lines = export.decode().splitlines()
        world = json.loads(lines[1])
        world["id"] = "copy"
        small = "\n".join([lines[0], json.dumps(world), *lines[2:]]).encode()
        assert c.post("/v1/worlds/import", content=small).status_code == 201
        padded = small + b"\n" * (IMPORT_CAP - len(small) + 1)  # blank lines: valid, but over the cap
        response = c.post("/v1/worlds/import", content=padded)
        assert response.status_code == 413, response.text
        # Above the body cap and below the import cap: taken (blank lines are skipped).
        world["id"] = "copy2"
        between = "\n".join([lines[0], json.dumps(world), *lines[2:]]).encode() + b"\n" * (SMALL + 10)
        assert c.post("/v1/worlds/import", content=between).status_code == 201


def test_an_import_line_past_its_cap_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_IMPORT_LINE_BYTES", 1000)
    with pytest.raises(InvalidInputError) as raised:
        world_export._parse(b'{"record": "x", "pad": "' + b"p" * 1000 + b'"}', 7)
    assert raised.value.field == "line 7" and "at most 1,000 bytes" in raised.value.problem


def test_the_caps_are_settings(tmp_path: Path) -> None:
    assert load_config(environ={}).max_body_bytes == DEFAULT_MAX_BODY_BYTES
    config = load_config(environ={"RECALL_MAX_BODY_BYTES": "2048", "RECALL_MAX_IMPORT_BYTES": "4096"})
    assert (config.max_body_bytes, config.max_import_bytes) == (2048, 4096)
    toml = tmp_path / "recall.toml"
    toml.write_text("[server]\nmax_body_bytes = 3000\n")
    assert load_config(toml, environ={}).max_body_bytes == 3000
    assert load_config(toml, environ={}, max_body_bytes=5000).max_body_bytes == 5000
    with pytest.raises(InvalidInputError, match="max_body_bytes"):
        load_config(environ={"RECALL_MAX_BODY_BYTES": "lots"})


def test_a_keyless_server_caps_bodies_too(live: LiveServer) -> None:
    with httpx.Client(base_url=live.url) as c:
        huge = {"sender": "maria", "content": "x" * (DEFAULT_MAX_BODY_BYTES + 1)}
        assert c.post("/v1/worlds/w/messages", json=huge).status_code == 413


def test_a_body_that_stalls_is_answered_408(tmp_path: Path) -> None:
    """A body must keep coming: `header_timeout` seconds without a piece (or a trickle below
    1 KiB/s after that long) is 408, and the connection closes."""
    server = start_server(tmp_path / "slow.db", ServerConfig(rate_limit=0, header_timeout=0.5))
    try:
        head = (
            "POST /v1/worlds HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
        )
        answer = early_answer(server.url, head, b'{"id": "w"')  # and never the rest
        assert answer.startswith("HTTP/1.1 408"), answer
        with server.client() as c:
            assert c.get("/v1/worlds").json()["worlds"] == []
    finally:
        stop_server(server)

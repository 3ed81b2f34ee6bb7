"""Nothing is lost across a crash: a server killed with SIGKILL restarts with every unread message unread."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx

from tests.processes import children, gone, server_process
from tests.server.conftest import free_port


def test_unread_messages_survive_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with server_process(db, port) as proc:
        c = httpx.Client(base_url=url, timeout=10)
        c.post("/v1/worlds", json={"id": "w"}).raise_for_status()
        c.post("/v1/worlds/w/agents", json={"id": "agent-a"}).raise_for_status()
        c.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
        posted = [
            c.post(
                "/v1/worlds/w/messages",
                json={"sender": "maria", "content": f"@agent-a task {i}", "idempotency_key": f"k{i}"},
            ).json()["id"]
            for i in range(20)
        ]
        c.post("/v1/worlds/w/agents/agent-a/inbox/ack", json={"ids": posted[:5]}).raise_for_status()
        workers = children(proc.pid)
        assert len(workers) == 1, "the server runs one search index worker"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        c.close()
        # The worker ends with the killed server, after the batch it is in (its first loads the
        # model, which on a busy 2-core machine, niced, took over 15 s once).
        deadline = time.monotonic() + 60
        while not gone(workers[0]):
            assert time.monotonic() < deadline, "the index worker outlived the server"
            time.sleep(0.05)

    with server_process(db, port):
        c = httpx.Client(base_url=url, timeout=10)
        unread = c.get("/v1/worlds/w/agents/agent-a/inbox", params={"limit": 100}).json()["new_mentions"]
        assert [m["id"] for m in unread] == posted[5:]
        # A client retrying a post it sent before the crash still stores it once.
        again = c.post(
            "/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-a task 19", "idempotency_key": "k19"}
        ).json()
        assert again["id"] == posted[19]
        assert len(c.get("/v1/worlds/w/messages", params={"limit": 100}).json()["messages"]) == 20
        c.close()

"""Nothing is lost across a crash: a server killed with SIGKILL restarts with every unread message unread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.processes import children, gone
from tests.server.conftest import free_port

RECALL = str(Path(sys.executable).with_name("recall"))


@contextmanager
def server_process(db: str | Path, port: int, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [RECALL, "serve", "--db", str(db), "--port", str(port), "--rate-limit", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {proc.stderr.read() if proc.stderr else ''!r}")
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)


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

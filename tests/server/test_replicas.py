"""Two `recall serve` processes on one PostgreSQL: agents long-poll either replica, posts go to
both in turn; no message is lost or stored twice and each agent reads its messages in order.
Then one replica is killed with SIGKILL mid-conversation and the other carries on."""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import ExitStack

import httpx
import pytest

from tests.processes import server_process
from tests.server.conftest import free_port

AGENTS = ("a1", "a2", "a3", "a4")
POSTS = 60
KILL_AFTER = 30


@pytest.mark.starts_first
def test_two_replicas_lose_nothing_and_survive_one_killed(postgres_url: str) -> None:
    env = {**os.environ, "RECALL_EMBEDDINGS": "none"}
    ports = [free_port(), free_port()]
    with ExitStack() as stack:
        procs = [stack.enter_context(server_process(postgres_url, port, env)) for port in ports]
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        with httpx.Client(base_url=urls[0]) as admin:
            admin.post("/v1/worlds", json={"id": "w"}).raise_for_status()
            admin.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
            for agent in AGENTS:
                admin.post("/v1/worlds/w/agents", json={"id": agent}).raise_for_status()

        alive = [True, True]
        received: dict[str, list[int]] = {agent: [] for agent in AGENTS}
        stop = threading.Event()

        def reader(agent: str, home: int) -> None:
            """Long-poll the home replica (the other one when it is gone); ack after reading."""
            while not stop.is_set():
                url = urls[home] if alive[home] else urls[1 - home]
                try:
                    with httpx.Client(base_url=url, timeout=10) as client:
                        got = client.get(f"/v1/worlds/w/agents/{agent}/inbox", params={"wait": "true", "timeout": 2})
                        ids = [m["id"] for m in got.json()["new_mentions"]]
                        received[agent].extend(ids)
                        if ids:
                            client.post(f"/v1/worlds/w/agents/{agent}/inbox/ack", json={"ids": ids})
                except httpx.HTTPError:
                    time.sleep(0.1)  # the replica went away: the next round uses the other one

        threads = [threading.Thread(target=reader, args=(a, i % 2)) for i, a in enumerate(AGENTS)]
        for thread in threads:
            thread.start()
        for n in range(POSTS):
            if n == KILL_AFTER:
                procs[1].send_signal(signal.SIGKILL)
                procs[1].wait(timeout=10)
                alive[1] = False
            body = {"sender": "maria", "content": f"message {n}", "idempotency_key": f"m{n}"}
            for attempt in (n % 2, 0):  # alternate replicas; retry on the live one (same key)
                if not alive[attempt]:
                    continue
                try:
                    httpx.post(f"{urls[attempt]}/v1/worlds/w/messages", json=body, timeout=10).raise_for_status()
                    break
                except httpx.HTTPError:
                    alive[attempt] = False
        deadline = time.monotonic() + 30
        while any(len(set(ids)) < POSTS for ids in received.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        for thread in threads:
            thread.join(timeout=15)

        with httpx.Client(base_url=urls[0]) as client:
            stored = client.get("/v1/worlds/w/messages", params={"limit": 1000}).json()["messages"]
        assert [m["content"] for m in stored] == [f"message {n}" for n in range(POSTS)]  # none lost, none twice
        ids = [m["id"] for m in stored]
        assert ids == sorted(ids)
        for agent, got in received.items():
            unique = list(dict.fromkeys(got))  # a read cut off by the kill may be read again
            assert unique == ids, agent  # every message, in order (FIFO), on either replica

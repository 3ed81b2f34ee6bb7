"""Benchmark: recall's HTTP server under load - posts/s, long-poll wake-up latency, context latency.

What it measures
----------------
The real server runs as a subprocess (`recall serve --db <temp file> --port <free port>
--rate-limit 0`, loopback only, rate limit off so the load is not refused). Everything is done
over HTTP with `httpx.AsyncClient` from this process, on the same machine: client and server
share the CPUs, so the numbers include the client's own cost.

1. **Setup** - `POST /v1/worlds {"id": "bench"}`, `--agents` agents (`agent-0000`, …) and one
   human, `maria`.
2. **Posts per second** - for each concurrency level of `--concurrency` (e.g. 8,16,32), that
   many client tasks, each on its own keep-alive connection (a minimal HTTP/1.1 client: httpx
   would cost the shared CPUs about as much as the server does), post `--posts` messages
   from maria in total (`POST /v1/worlds/bench/messages`), each waiting for its 201 before the next post. Every
   message fans out to all `--agents` agents. Reported as posts/s and per-request latency
   p50/p95/p99. Contents are 5-40 random words, ~30 % opening with an @mention of a random agent.
3. **Context endpoint** - once the world holds those messages (topped up to
   `--context-messages` with untimed concurrent posts), `--builds` sequential
   `POST /v1/worlds/bench/agents/<random agent>/context {"format": "openai"}`, after 20 warm-up
   requests: p50/p95/p99 ms.
4. **Wake-up latency** - `--waiters` more agents (`w0000`, …) are registered, then:
   - *broadcast*: each agent opens one long-poll
     `GET …/agents/<w>/inbox?wait=true&timeout=60&mark_read=true` (all concurrent, one
     connection each); once the server's gauge `recall_inbox_waiting` (`GET /metrics`) shows them
     all waiting, maria posts one public message without @mention, which every agent would
     answer, so every waiter must return it. Latency = arrival of the waiter's response - start
     of the post request, both on this process's clock. Repeated `--rounds` times; percentiles
     over all waiters of all rounds, plus the time until the last waiter had its answer.
   - *targeted* (the target's measure): all waiters wait again; each round maria posts
     `@<random waiter> …`, so only that waiter must return (the server wakes only the checks a
     message is for). The others are checked not to have returned (`--settle` seconds later,
     and the gauge is back to waiters - 1); the target then waits again. `--targeted-rounds`
     times. At the end one broadcast releases the others, which must all return it.
5. **CPU** - for each timed phase, the CPU seconds of this client process and of the server
   process (from /proc), next to the wall time: with 2 cores, a phase whose client + server CPU
   is near 2 x wall is CPU-bound, and the split shows who used it.

Every non-2xx answer is counted; 5xx answers and the server's stderr are kept in the JSON.

Targets (issue 27): with 1,000 waiters, a post @one waiter wakes it with p99 <= 10 ms and a
broadcast reaches the last of them within 150 ms; >= 1,000 posts/s on 2 cores. The server's CPU
per woken waiter (from the broadcast's post to its last answer) is reported beside them.

Run
---
    .venv/bin/python bench/server_bench.py            # full size (~1-2 min on 2 cores)
    .venv/bin/python bench/server_bench.py --quick    # smoke run: 100 waiters, 300 posts (~15 s)

Results are printed as tables and written as JSON to `--json`
(default bench/results/server_bench.json). The store is a temporary file, removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.util
import json
import os
import platform
import random
import resource
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
from bench_postgres import database_bytes, throwaway_postgres
from bench_report import git_revision, percentiles, write_json
from rich.console import Console
from rich.table import Table

if importlib.util.find_spec("sniffio") is None:
    # httpcore runs `import sniffio` on every lock it takes; when the package is missing each of
    # those failed imports searches sys.path again (~0.2 ms, several per request). Caching the
    # miss keeps that client-side cost out of the latencies.
    sys.modules["sniffio"] = None  # type: ignore[assignment]

try:
    import uvloop
except ImportError:  # pragma: no cover - uvicorn[standard] brings it
    uvloop = None

TARGET_WAKE_P99_MS = 10.0
#: A broadcast reaches the last of the waiters within this many ms.
TARGET_BROADCAST_LAST_MS = 150.0
TARGET_POSTS_PER_S = 1_000
TARGET_WAITERS = 1_000
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "server_bench.json"
RECALL_BIN = Path(sys.executable).parent / "recall"
WORLD = "bench"
HUMAN = "maria"
LONG_POLL = {"wait": "true", "timeout": "60", "mark_read": "true"}
#: Per-request client timeout; long polls get more than their 60 s server-side timeout.
REQUEST_TIMEOUT = 30.0
POLL_TIMEOUT = 90.0
#: Upper bounds of the waiting loops.
STARTUP_SECONDS = 30.0
GAUGE_SECONDS = 60.0
ROUND_SECONDS = 60.0
MAX_ERRORS_KEPT = 20
WARMUP_POSTS = 50
WARMUP_BUILDS = 20

_VOCABULARY = (
    "the a invoice order refund customer ticket please check status update account billing shipping "
    "delivery issue error report log server deploy release review merge branch test failing passing "
    "latency cache query index database schema migration backup restore user login password reset "
    "email phone call meeting tomorrow today yesterday urgent priority low high summary plan next "
    "step done pending blocked waiting approve reject escalate forward reply thanks sorry maybe sure "
    "ok yes no why how when where what which who could would should can will 42 2025 v1.2 api "
    "endpoint timeout retry quota limit budget token context memory agent human chat world"
)
WORDS = tuple(_VOCABULARY.split())


class BenchError(RuntimeError):
    """The benchmark cannot go on (the server failed, a waiter never woke, …)."""


def make_content(rng: random.Random, agents: Sequence[str]) -> str:
    text = " ".join(rng.choices(WORDS, k=rng.randint(5, 40)))
    return f"@{rng.choice(agents)} {text}" if rng.random() < 0.30 else text


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def raise_nofile(wanted: int) -> tuple[int, int]:
    """Raise the soft open-file limit to `wanted` (capped by the hard limit); the server inherits it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc (Linux); 0.0 when unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # After the command name: state is fields[0], utime is field 14 of the line, i.e. fields[11].
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds all processes of the machine have used since boot (from /proc/stat; 0.0 elsewhere)."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in first[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class Server:
    """`recall serve` as a subprocess on loopback; its stderr goes to a file kept for the report."""

    db: Path | str
    port: int
    log: Path
    #: The server's embedding model (`RECALL_EMBEDDINGS`): its index worker embeds every post.
    embeddings: str = "minilm"
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [
            str(RECALL_BIN),
            "serve",
            "--db",
            str(self.db),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--rate-limit",
            "0",
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECALL_")}  # flags only
        env["RECALL_EMBEDDINGS"] = self.embeddings
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + STARTUP_SECONDS
        with httpx.Client(base_url=self.base_url, timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise BenchError(f"server exited with {self.proc.returncode} at start:\n{self.stderr()}")
                try:
                    if client.get("/healthz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        raise BenchError(f"server did not answer /healthz within {STARTUP_SECONDS:g} s:\n{self.stderr()}")

    def cpu_seconds(self) -> float:
        return proc_cpu_seconds(self.proc.pid) if self.proc is not None else 0.0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def stderr(self, tail: int = 20_000) -> str:
        try:
            return self.log.read_text(errors="replace")[-tail:]
        except OSError:
            return ""


@contextlib.contextmanager
def running_server(db: Path | str, log: Path, embeddings: str) -> Iterator[Server]:
    server = Server(db, free_port(), log, embeddings)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@dataclass
class Recorder:
    """Counts every answer by status and keeps the first unexpected ones."""

    statuses: Counter[int] = field(default_factory=Counter)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def check(self, response: httpx.Response, expected: int, what: str) -> httpx.Response:
        self.statuses[response.status_code] += 1
        if response.status_code != expected and len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(
                {
                    "request": f"{response.request.method} {response.request.url}",
                    "request_body": response.request.content.decode(errors="replace")[:500],
                    "status": response.status_code,
                    "response": response.text[:2000],
                    "what": what,
                }
            )
        return response

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)


@dataclass
class Phase:
    """Wall time of a phase and the CPU seconds used meanwhile by the client (this process), the
    server, and the whole machine (so other processes' share is visible too)."""

    wall: float = 0.0
    client_cpu: float = 0.0
    server_cpu: float = 0.0
    machine_cpu: float = 0.0

    def add(self, other: Phase) -> None:
        self.wall += other.wall
        self.client_cpu += other.client_cpu
        self.server_cpu += other.server_cpu
        self.machine_cpu += other.machine_cpu

    def to_dict(self) -> dict[str, float]:
        other = max(0.0, self.machine_cpu - self.client_cpu - self.server_cpu)
        return {
            "wall_s": self.wall,
            "client_cpu_s": self.client_cpu,
            "server_cpu_s": self.server_cpu,
            "other_cpu_s": other,
            "client_cores": self.client_cpu / self.wall if self.wall else 0.0,
            "server_cores": self.server_cpu / self.wall if self.wall else 0.0,
            "other_cores": other / self.wall if self.wall else 0.0,
        }


class Meter:
    def __init__(self, server: Server) -> None:
        self.server = server

    @contextlib.asynccontextmanager
    async def measure(self, phase: Phase) -> Any:
        wall, client, srv, machine = (
            time.perf_counter(),
            time.process_time(),
            self.server.cpu_seconds(),
            machine_busy_seconds(),
        )
        try:
            yield
        finally:
            phase.add(
                Phase(
                    time.perf_counter() - wall,
                    time.process_time() - client,
                    self.server.cpu_seconds() - srv,
                    machine_busy_seconds() - machine,
                )
            )


async def bounded(awaitable: Awaitable[Any], seconds: float, what: str) -> Any:
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        raise BenchError(f"{what}: no answer within {seconds:g} s") from None


async def gather_limited(n: int, concurrency: int, job: Callable[[int], Awaitable[None]]) -> None:
    """Run job(0) … job(n-1) with at most `concurrency` at a time (workers pull the next index)."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await job(i)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, n))))


async def waiting_gauge(control: httpx.AsyncClient, rec: Recorder) -> int:
    response = rec.check(await control.get("/metrics"), 200, "metrics")
    for line in response.text.splitlines():
        if line.startswith("recall_inbox_waiting "):
            return int(float(line.split()[1]))
    raise BenchError("/metrics has no recall_inbox_waiting gauge")


async def until_waiting(control: httpx.AsyncClient, rec: Recorder, n: int, server: Server) -> float:
    """Poll the gauge until it equals `n` (bounded); returns the seconds it took."""
    start = time.perf_counter()
    seen = -1
    while time.perf_counter() - start < GAUGE_SECONDS:
        if not server.alive():
            raise BenchError(f"server died while waiters connected:\n{server.stderr()}")
        seen = await waiting_gauge(control, rec)
        if seen == n:
            return time.perf_counter() - start
        await asyncio.sleep(0.02)
    raise BenchError(f"recall_inbox_waiting stayed at {seen}, expected {n}, for {GAUGE_SECONDS:g} s")


@dataclass
class Poll:
    """One long-poll request: when its answer arrived and what it held."""

    agent: str
    task: asyncio.Task[None] | None = None
    arrived: float | None = None
    status: int | None = None
    mention_ids: list[int] = field(default_factory=list)
    error: str | None = None


def open_poll(clients: dict[str, PollClient], rec: Recorder, agent: str) -> Poll:
    poll = Poll(agent)
    client = clients[agent]
    path = f"/v1/worlds/{WORLD}/agents/{agent}/inbox"

    async def run() -> None:
        try:
            if isinstance(client, RawConnection):
                status, body = await client.request("GET", f"{path}?{urlencode(LONG_POLL)}")
            else:
                response = await client.get(path, params=LONG_POLL)
                rec.check(response, 200, f"long poll of {agent}")
                status, body = response.status_code, response.content
        except (httpx.HTTPError, OSError, asyncio.IncompleteReadError) as exc:
            poll.arrived = time.perf_counter()
            poll.error = f"{type(exc).__name__}: {exc}"
            return
        poll.arrived = time.perf_counter()
        poll.status = status
        if isinstance(client, RawConnection):
            rec.statuses[status] += 1
            if status != 200 and len(rec.errors) < MAX_ERRORS_KEPT:
                rec.errors.append({"what": f"long poll of {agent}", "status": status, "response": body[:2000].decode()})
        if status == 200:
            poll.mention_ids = [m["id"] for m in json.loads(body)["new_mentions"]]

    poll.task = asyncio.create_task(run())
    return poll


async def post(client: httpx.AsyncClient, rec: Recorder, content: str) -> tuple[float, float, dict[str, Any]]:
    """Post as maria; returns (start, end) perf_counter times and the stored message."""
    start = time.perf_counter()
    response = await client.post(f"/v1/worlds/{WORLD}/messages", json={"sender": HUMAN, "content": content})
    end = time.perf_counter()
    rec.check(response, 201, "post")
    if response.status_code != 201:
        raise BenchError(f"post failed: {response.status_code} {response.text[:500]}")
    return start, end, response.json()


def client_limits(connections: int) -> httpx.Limits:
    return httpx.Limits(max_connections=connections, max_keepalive_connections=connections)


async def poll_clients(
    stack: contextlib.AsyncExitStack, base_url: str, port: int, agents: Sequence[str], kind: str
) -> dict[str, PollClient]:
    """The clients of the long polls (`--poll-client`): a raw keep-alive connection per agent
    (default), an httpx client per agent, or one shared httpx pool.

    The client shares the two cores with the server, and the wake-up latency is read when the
    client has taken the answer in: an httpx response costs this process about as much CPU as
    the server spends answering it, so with httpx a thousand answers queue up in the client.
    httpcore's pool also re-scans all its connections and queued requests whenever one changes
    state: with a thousand requests in flight on one pool that is O(n) per event and O(n²) per
    round. The raw connection reads the status, the headers and the body, and nothing else.
    """
    if kind == "raw":
        raw = {agent: RawConnection("127.0.0.1", port) for agent in agents}
        stack.callback(lambda: [connection.close() for connection in raw.values()])
        return dict(raw)
    if kind == "httpx-pool":
        client = httpx.AsyncClient(base_url=base_url, timeout=POLL_TIMEOUT, limits=client_limits(len(agents) + 100))
        await stack.enter_async_context(client)
        return dict.fromkeys(agents, client)
    # One small client per waiter keeps the client's cost per response constant. They share
    # one SSL context (unused on http://, but building one per client costs milliseconds).
    ssl_context = ssl.create_default_context()
    clients: dict[str, PollClient] = {}
    for agent in agents:
        client = httpx.AsyncClient(base_url=base_url, timeout=POLL_TIMEOUT, limits=client_limits(1), verify=ssl_context)
        clients[agent] = await stack.enter_async_context(client)
    return clients


async def setup(client: httpx.AsyncClient, rec: Recorder, agents: Sequence[str]) -> None:
    def ok(response: httpx.Response, what: str) -> None:
        rec.check(response, 201, what)
        if response.status_code != 201:
            raise BenchError(f"{what}: {response.status_code} {response.text[:500]}")

    ok(await client.post("/v1/worlds", json={"id": WORLD}), "create world")
    ok(await client.post(f"/v1/worlds/{WORLD}/humans", json={"id": HUMAN}), "add human")
    await register_agents(client, rec, agents, concurrency=1)


async def register_agents(
    client: httpx.AsyncClient, rec: Recorder, agents: Sequence[str], concurrency: int = 16
) -> None:
    async def one(i: int) -> None:
        agent = agents[i]
        body = {"id": agent, "system_prompt": f"You are {agent}, a helpful support agent. Answer briefly."}
        response = rec.check(await client.post(f"/v1/worlds/{WORLD}/agents", json=body), 201, "add agent")
        if response.status_code != 201:
            raise BenchError(f"add agent {agent}: {response.status_code} {response.text[:500]}")

    await gather_limited(len(agents), concurrency, one)


class RawConnection:
    """One keep-alive HTTP/1.1 connection that does only what the post load needs.

    httpx costs about as much CPU per request as the server does, and both share the machine's
    two cores; this client costs a fraction, so the posts phase measures the server.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post_json(self, path: str, payload: dict[str, Any]) -> tuple[int, bytes]:
        return await self.request("POST", path, json.dumps(payload).encode())

    async def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        request = (head + "\r\n").encode() + (body or b"")
        for _ in range(2):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            assert self.reader is not None
            self.writer.write(request)
            status_line = await self.reader.readline()
            if status_line:
                break
            # The server closed a keep-alive connection that sat idle between phases: reconnect.
            self.close()
            self.writer = None
        status = int(status_line.split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


#: A long poll's client: an httpx client, or a raw keep-alive connection (`--poll-client`).
PollClient = httpx.AsyncClient | RawConnection


async def run_posts(
    connections: Sequence[RawConnection],
    rec: Recorder,
    n: int,
    concurrency: int,
    agents: Sequence[str],
    rng: random.Random,
) -> tuple[list[float], int]:
    """`n` posts by `concurrency` workers, each on its own keep-alive connection; returns
    latencies (ms) and wrong fan-outs."""
    contents = iter([make_content(rng, agents) for _ in range(n)])
    latencies: list[float] = []
    bad_fanout = 0

    async def worker(connection: RawConnection) -> None:
        nonlocal bad_fanout
        for content in contents:
            start = time.perf_counter()
            status, body = await connection.post_json(
                f"/v1/worlds/{WORLD}/messages", {"sender": HUMAN, "content": content}
            )
            latencies.append((time.perf_counter() - start) * 1000)
            rec.statuses[status] += 1
            if status != 201:
                if len(rec.errors) < MAX_ERRORS_KEPT:
                    rec.errors.append({"what": "post (throughput)", "status": status, "response": body[:2000].decode()})
            elif len(json.loads(body)["delivered_to"]) != len(agents):
                bad_fanout += 1

    await asyncio.gather(*(worker(connection) for connection in connections[:concurrency]))
    return latencies, bad_fanout


async def run_builds(
    client: httpx.AsyncClient, rec: Recorder, n: int, agents: Sequence[str], rng: random.Random
) -> tuple[list[float], dict[str, float]]:
    latencies: list[float] = []
    messages = tokens = 0
    for _ in range(n):
        agent = rng.choice(agents)
        start = time.perf_counter()
        response = await client.post(f"/v1/worlds/{WORLD}/agents/{agent}/context", json={"format": "openai"})
        latencies.append((time.perf_counter() - start) * 1000)
        rec.check(response, 200, "context")
        if response.status_code == 200:
            body = response.json()
            messages += len(body["messages"])
            tokens += body["report"]["total_tokens"]
    return latencies, {"mean_messages": messages / n if n else 0.0, "mean_tokens": tokens / n if n else 0.0}


async def broadcast_round(
    pollers: dict[str, PollClient],
    control: httpx.AsyncClient,
    rec: Recorder,
    server: Server,
    waiters: Sequence[str],
    i: int,
) -> dict[str, Any]:
    polls = [open_poll(pollers, rec, agent) for agent in waiters]
    try:
        settle = await until_waiting(control, rec, len(waiters), server)
        cpu_before = server.cpu_seconds()
        start, end, message = await post(control, rec, f"Everyone: round {i}, please confirm the schedule.")
        await bounded(asyncio.gather(*(p.task for p in polls if p.task)), ROUND_SECONDS, f"broadcast round {i}")
        wake_cpu = server.cpu_seconds() - cpu_before
    finally:
        for p in polls:
            if p.task is not None and not p.task.done():
                p.task.cancel()
    latencies = [(p.arrived - start) * 1000 for p in polls if p.arrived is not None]
    missing = [p.agent for p in polls if message["id"] not in p.mention_ids]
    return {
        "latencies": latencies,
        "post_ms": (end - start) * 1000,
        "last_ms": max(latencies) if latencies else None,
        "connect_s": settle,
        # The server's CPU from the post to the last answer (the post itself included).
        "wake_cpu_s": wake_cpu,
        "missing": missing,
        "errors": [p.error for p in polls if p.error][:5],
        "delivered_to": len(message["delivered_to"]),
    }


async def targeted_rounds(
    pollers: dict[str, PollClient],
    control: httpx.AsyncClient,
    rec: Recorder,
    server: Server,
    waiters: Sequence[str],
    rounds: int,
    settle: float,
) -> dict[str, Any]:
    polls = {agent: open_poll(pollers, rec, agent) for agent in waiters}
    samples: list[dict[str, Any]] = []
    woke_wrongly: set[str] = set()
    rng = random.Random(7)
    try:
        for i in range(rounds):
            chosen = rng.choice(list(waiters))
            await until_waiting(control, rec, len(waiters), server)
            start, end, message = await post(control, rec, f"@{chosen} round {i}: can you check order 42?")
            target = polls[chosen]
            await bounded(asyncio.shield(target.task), ROUND_SECONDS, f"targeted round {i}")  # type: ignore[arg-type]
            await asyncio.sleep(settle)
            returned = [a for a, p in polls.items() if a != chosen and p.task is not None and p.task.done()]
            woke_wrongly.update(returned)
            gauge = await waiting_gauge(control, rec)
            samples.append(
                {
                    "latency_ms": (target.arrived - start) * 1000 if target.arrived else None,
                    "post_ms": (end - start) * 1000,
                    "got_it": message["id"] in target.mention_ids,
                    "others_returned": len(returned),
                    "gauge_after": gauge,
                }
            )
            polls[chosen] = open_poll(pollers, rec, chosen)
        # Release everyone with one broadcast; each must return it.
        await until_waiting(control, rec, len(waiters), server)
        _, _, release = await post(control, rec, "Everyone: that's all for today, thanks.")
        await bounded(
            asyncio.gather(*(p.task for p in polls.values() if p.task)), ROUND_SECONDS, "release after targeted"
        )
    finally:
        for p in polls.values():
            if p.task is not None and not p.task.done():
                p.task.cancel()
    not_released = [a for a, p in polls.items() if release["id"] not in p.mention_ids and a not in woke_wrongly]
    return {"samples": samples, "woke_wrongly": sorted(woke_wrongly), "not_released": not_released}


async def bench(args: argparse.Namespace, server: Server, console: Console) -> dict[str, Any]:
    rec = Recorder()
    meter = Meter(server)
    rng = random.Random(args.seed)
    agents = [f"agent-{i:04d}" for i in range(args.agents)]
    waiters = [f"w{i:04d}" for i in range(args.waiters)]
    phases: dict[str, Phase] = {}
    out: dict[str, Any] = {}
    max_conc = max(args.concurrency)
    async with (
        contextlib.AsyncExitStack() as stack,
        httpx.AsyncClient(base_url=server.base_url, timeout=REQUEST_TIMEOUT, limits=client_limits(20)) as client,
    ):
        posters = [RawConnection("127.0.0.1", server.port) for _ in range(max_conc)]
        stack.callback(lambda: [p.close() for p in posters])
        with console.status("setting up the world…"):
            await setup(client, rec, agents)

        # -- posts per second --------------------------------------------------------------------
        await run_posts(posters, rec, WARMUP_POSTS, max_conc, agents, rng)  # connections, caches
        posted = WARMUP_POSTS
        throughput = []
        for conc in args.concurrency:
            phase = phases.setdefault(f"posts c={conc}", Phase())
            with console.status(f"{args.posts:,} posts with {conc} concurrent clients…"):
                async with meter.measure(phase):
                    latencies, bad = await run_posts(posters, rec, args.posts, conc, agents, rng)
            posted += args.posts
            throughput.append(
                {
                    "concurrency": conc,
                    "posts": args.posts,
                    "seconds": phase.wall,
                    "posts_per_s": args.posts / phase.wall,
                    "deliveries_per_s": args.posts * len(agents) / phase.wall,
                    # The server's own CPU per post: steadier than posts/s on a machine whose two
                    # cores the client shares.
                    "server_cpu_ms_per_post": 1000 * phase.server_cpu / args.posts,
                    "latency_ms": percentiles(latencies),
                    "wrong_fanout": bad,
                }
            )
        out["posts"] = throughput
        out["post_server_cpu_ms"] = min(t["server_cpu_ms_per_post"] for t in throughput)

        # -- context endpoint ---------------------------------------------------------------------
        if args.context_messages > posted:
            with console.status(f"seeding to {args.context_messages:,} messages…"):
                await run_posts(posters, rec, args.context_messages - posted, max_conc, agents, rng)
            posted = args.context_messages
        with console.status(f"{args.builds:,} context requests…"):
            await run_builds(client, rec, WARMUP_BUILDS, agents, rng)
            phase = phases.setdefault("context", Phase())
            async with meter.measure(phase):
                latencies, shape = await run_builds(client, rec, args.builds, agents, rng)
        out["context"] = {"world_messages": posted, "latency_ms": percentiles(latencies), **shape}

        # -- wake-up latency ----------------------------------------------------------------------
        with console.status(f"registering {args.waiters:,} waiting agents…"):
            await register_agents(client, rec, waiters)
    async with (
        contextlib.AsyncExitStack() as stack,
        httpx.AsyncClient(base_url=server.base_url, timeout=REQUEST_TIMEOUT, limits=client_limits(4)) as control,
    ):
        pollers = await poll_clients(stack, server.base_url, server.port, waiters, args.poll_client)
        if args.client_gc == "serving":
            stack.enter_context(quiet_collector())
        collections_before = client_collections()
        rounds: list[dict[str, Any]] = []
        phase = phases.setdefault("wake-up broadcast (whole rounds)", Phase())
        for i in range(args.rounds):
            with console.status(f"broadcast round {i + 1}/{args.rounds}: {args.waiters:,} waiters…"):
                async with meter.measure(phase):
                    rounds.append(await broadcast_round(pollers, control, rec, server, waiters, i))
        all_lat = [x for r in rounds for x in r["latencies"]]
        out["broadcast"] = {
            "waiters": args.waiters,
            "rounds": args.rounds,
            "latency_ms": percentiles(all_lat),
            "last_waiter_ms": percentiles([r["last_ms"] for r in rounds if r["last_ms"] is not None]),
            "post_ms": percentiles([r["post_ms"] for r in rounds]),
            "server_cpu_ms_per_woken": 1000 * sum(r["wake_cpu_s"] for r in rounds) / (args.waiters * len(rounds)),
            "per_round": [
                {
                    "p50": percentiles(r["latencies"]).get("p50"),
                    "p99": percentiles(r["latencies"]).get("p99"),
                    "last_ms": r["last_ms"],
                    "post_ms": r["post_ms"],
                    "seconds_until_all_waiting": r["connect_s"],
                    "missing": len(r["missing"]),
                    "delivered_to": r["delivered_to"],
                }
                for r in rounds
            ],
            "missing": sorted({a for r in rounds for a in r["missing"]})[:50],
            "poll_errors": [e for r in rounds for e in r["errors"]][:10],
        }
        if args.targeted_rounds > 0:
            phase = phases.setdefault("wake-up targeted (whole phase)", Phase())
            with console.status(f"targeted rounds: @one waiter while {args.waiters:,} wait…"):
                async with meter.measure(phase):
                    targeted = await targeted_rounds(
                        pollers, control, rec, server, waiters, args.targeted_rounds, args.settle
                    )
            lat = [s["latency_ms"] for s in targeted["samples"] if s["latency_ms"] is not None]
            out["targeted"] = {
                "waiters": args.waiters,
                "rounds": args.targeted_rounds,
                "latency_ms": percentiles(lat),
                "post_ms": percentiles([s["post_ms"] for s in targeted["samples"]]),
                "samples": targeted["samples"],
                "target_missed": sum(1 for s in targeted["samples"] if not s["got_it"]),
                "woke_wrongly": targeted["woke_wrongly"][:50],
                "not_released": targeted["not_released"][:50],
                "gauge_ok": all(s["gauge_after"] == args.waiters - 1 for s in targeted["samples"]),
            }
        final_gauge = await waiting_gauge(control, rec)
        out["client_collections_while_waiting"] = client_collections() - collections_before
    out["phases"] = {name: p.to_dict() for name, p in phases.items()}
    out["statuses"] = {str(k): v for k, v in sorted(rec.statuses.items())}
    out["server_errors"] = rec.server_errors
    out["unexpected_responses"] = rec.errors
    out["final_waiting_gauge"] = final_gauge
    return out


def client_collections() -> int:
    """Collections this process has run, of every generation."""
    return sum(int(generation["collections"]) for generation in gc.get_stats())


@contextlib.contextmanager
def quiet_collector() -> Iterator[None]:
    """This one process plays the 1,000 waiting agents: a collection of its objects (full ones
    27-36 ms, young ones up to 26 ms with the server's thresholds) stops every one of them at
    once, and the rounds it falls in measure the client's pause as the server's latency. So
    while the polls wait the client does not collect; its garbage waits for the end (tens of
    MB). `--client-gc default` keeps CPython's collector on."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_async(coro: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """Run the client on uvloop when it is installed (as the server does), else asyncio."""
    if uvloop is not None:
        return uvloop.run(coro)  # type: ignore[no-any-return]
    return asyncio.run(coro)  # type: ignore[arg-type]


def _concurrency(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
    if not levels or min(levels) < 1 or max(levels) > 256:
        raise argparse.ArgumentTypeError("concurrency levels must be between 1 and 256")
    return levels


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smoke run: 100 waiters, 300 posts, fewer rounds")
    parser.add_argument("--agents", type=int, default=10, help="agents every post fans out to")
    parser.add_argument("--posts", type=int, default=None, help="posts per concurrency level (default 3000)")
    parser.add_argument(
        "--concurrency", type=_concurrency, default=None, help="concurrent posting clients, e.g. 8,16,32"
    )
    parser.add_argument(
        "--context-messages", type=int, default=None, help="messages in the world before context requests"
    )
    parser.add_argument("--builds", type=int, default=None, help="timed context requests (default 500)")
    parser.add_argument("--waiters", type=int, default=None, help="concurrent long polls (default 1000)")
    parser.add_argument("--rounds", type=int, default=None, help="broadcast rounds (default 5)")
    parser.add_argument(
        "--targeted-rounds", type=int, default=None, help="rounds of one post to one random waiter (default 200)"
    )
    parser.add_argument("--settle", type=float, default=0.02, help="seconds to watch the others after a targeted post")
    parser.add_argument(
        "--poll-client",
        choices=("raw", "httpx", "httpx-pool"),
        default="raw",
        help="the long polls' client: a raw connection each, an httpx client each, or one httpx pool (see poll_clients)",
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--db",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="the server's store: a temporary SQLite file, or a throwaway PostgreSQL",
    )
    parser.add_argument(
        "--embeddings",
        choices=("minilm", "none"),
        default="minilm",
        help="the server's embedding model; with minilm its index worker embeds every post while the load runs",
    )
    parser.add_argument(
        "--client-gc",
        choices=("serving", "default"),
        default="serving",
        help="this client's collector while the long polls wait: off (serving), or CPython's defaults"
        " (its collections then pause all 1,000 simulated agents at once)",
    )
    args = parser.parse_args(argv)
    sizes = (
        {"posts": 300, "concurrency": [16], "context_messages": 500, "builds": 100, "waiters": 100, "rounds": 3}
        if args.quick
        else {"posts": 3000, "concurrency": [8, 16, 32], "context_messages": 5000, "builds": 500, "waiters": 1000}
    )
    defaults = {"rounds": 5, "targeted_rounds": 20 if args.quick else 200, **sizes}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if min(args.agents, args.posts, args.builds, args.rounds) < 1 or args.targeted_rounds < 0:
        parser.error("--agents, --posts, --builds and --rounds must be at least 1")
    if not 2 <= args.waiters <= 10_000:
        parser.error("--waiters must be between 2 and 10000")
    if not 0 <= args.settle <= 10:
        parser.error("--settle must be between 0 and 10 seconds")

    console = Console() if sys.stdout.isatty() else Console(width=150)
    nofile = raise_nofile(args.waiters * 2 + 1024)
    tmpdir = tempfile.mkdtemp(prefix="recall-server-bench-")
    postgres = contextlib.ExitStack()
    db_path: Path | str = (
        postgres.enter_context(throwaway_postgres()) if args.db == "postgres" else Path(tmpdir) / "bench.db"
    )
    log_path = Path(tmpdir) / "server.log"
    load_at_start = list(os.getloadavg())
    started = time.perf_counter()
    failure: str | None = None
    results: dict[str, Any] = {}
    alive = False
    try:
        try:
            with running_server(db_path, log_path, args.embeddings) as server:
                try:
                    results = run_async(bench(args, server, console))
                finally:
                    alive = server.alive()
        except BenchError as exc:
            failure = str(exc)
        server_log = log_path.read_text(errors="replace")[-20_000:] if log_path.exists() else ""
        db_bytes = (
            database_bytes(db_path)
            if isinstance(db_path, str)
            else sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))
        )
    finally:
        postgres.close()
        shutil.rmtree(tmpdir, ignore_errors=True)

    results.update(
        {
            "failure": failure,
            "server_alive_at_end": alive,
            "server_log": server_log if (failure or results.get("server_errors") or not alive) else server_log[-2000:],
            "seconds": time.perf_counter() - started,
            "config": {
                "quick": args.quick,
                "embeddings": args.embeddings,
                "client_gc": args.client_gc,
                "db": args.db,
                "agents": args.agents,
                "posts": args.posts,
                "concurrency": args.concurrency,
                "context_messages": args.context_messages,
                "builds": args.builds,
                "waiters": args.waiters,
                "rounds": args.rounds,
                "targeted_rounds": args.targeted_rounds,
                "settle": args.settle,
                "poll_client": args.poll_client,
                "client_event_loop": "uvloop" if uvloop is not None else "asyncio",
                "seed": args.seed,
                "db_bytes": db_bytes,
                "open_files_limit": list(nofile),
            },
            "targets": {
                "wake_p99_ms": TARGET_WAKE_P99_MS,
                "broadcast_last_ms": TARGET_BROADCAST_LAST_MS,
                "waiters": TARGET_WAITERS,
                "posts_per_s": TARGET_POSTS_PER_S,
            },
            "machine": {
                "cpu_count": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "httpx": httpx.__version__,
                "recall_commit": git_revision(),
                "note": "client and server on the same machine, sharing its CPUs",
                "load_average_at_start": load_at_start,
                "load_average_at_end": list(os.getloadavg()),
            },
        }
    )
    if "posts" in results:
        best = max(t["posts_per_s"] for t in results["posts"])
        results["met"] = {
            "posts_per_s": best >= TARGET_POSTS_PER_S,
            "wake_p99_ms": (
                results.get("targeted", {}).get("latency_ms", {}).get("p99", float("inf")) <= TARGET_WAKE_P99_MS
                and args.waiters >= TARGET_WAITERS
            ),
            "broadcast_last_ms": (
                results.get("broadcast", {}).get("last_waiter_ms", {}).get("max", float("inf"))
                <= TARGET_BROADCAST_LAST_MS
                and args.waiters >= TARGET_WAITERS
            ),
        }
    print_results(console, results)
    write_json(args.json, results)
    console.print(f"results written to {args.json}")
    return 1 if failure else 0


def _ok(met: bool) -> str:
    return "[green]met[/green]" if met else "[red]missed[/red]"


def _lat_cells(s: dict[str, float]) -> list[str]:
    return [f"{s[k]:.1f}" if k in s else "-" for k in ("p50", "p95", "p99", "max")]


def print_results(console: Console, r: dict[str, Any]) -> None:
    cfg, m = r["config"], r["machine"]
    console.print(
        f"[bold]recall server bench[/bold]{' (quick)' if cfg['quick'] else ''}: {cfg['agents']} agents, "
        f"{cfg['waiters']:,} waiters; {m['cpu_count']} CPUs shared by client and server; Python {m['python']}, "
        f"httpx {m['httpx']}; recall {m['recall_commit']}; store {cfg.get('db', 'sqlite')}; embeddings {cfg.get('embeddings', 'minilm')};"
        f" {r['seconds']:.0f} s"
    )
    met = r.get("met", {})
    if "posts" in r:
        table = Table(title=f"Posts over HTTP (maria → {cfg['agents']} agents each)")
        for col in ("clients", "posts", "posts/s", "deliveries/s", "p50 ms", "p95 ms", "p99 ms", "max ms", "target"):
            table.add_column(col, justify="left" if col == "target" else "right")
        best = max(t["posts_per_s"] for t in r["posts"])
        for t in r["posts"]:
            target = ""
            if t["posts_per_s"] == best:
                target = f"≥ {r['targets']['posts_per_s']:,}/s {_ok(met.get('posts_per_s', False))}"
            table.add_row(
                str(t["concurrency"]),
                f"{t['posts']:,}",
                f"{t['posts_per_s']:,.0f}",
                f"{t['deliveries_per_s']:,.0f}",
                *_lat_cells(t["latency_ms"]),
                target,
            )
        console.print(table)
    if "context" in r:
        c = r["context"]
        table = Table(title=f"POST …/context (openai), world of {c['world_messages']:,} messages, one at a time")
        for col in ("requests", "p50 ms", "p95 ms", "p99 ms", "max ms", "msgs in ctx", "tokens"):
            table.add_column(col, justify="right")
        table.add_row(
            f"{int(c['latency_ms']['n'])}",
            *_lat_cells(c["latency_ms"]),
            f"{c['mean_messages']:.1f}",
            f"{c['mean_tokens']:.0f}",
        )
        console.print(table)
    if "broadcast" in r:
        b = r["broadcast"]
        table = Table(title=f"Wake-up latency, {b['waiters']:,} concurrent long polls (ms from the post's start)")
        for col in ("case", "samples", "p50", "p95", "p99", "max", "post 201 p50", "check", "target"):
            table.add_column(col, justify="left" if col in ("case", "check", "target") else "right")
        lat = b["latency_ms"]
        table.add_row(
            f"broadcast, every waiter ({b['rounds']} rounds)",
            f"{int(lat.get('n', 0)):,}",
            *_lat_cells(lat),
            f"{b['post_ms']['p50']:.1f}",
            "all woke" if not b["missing"] else f"[red]{len(b['missing'])} missed[/red]",
            "",
        )
        last = b["last_waiter_ms"]
        target = (
            f"max ≤ {r['targets']['broadcast_last_ms']:g} {_ok(met.get('broadcast_last_ms', False))}"
            if b["waiters"] >= r["targets"]["waiters"]
            else ""
        )
        table.add_row("broadcast, last waiter of a round", f"{int(last['n'])}", *_lat_cells(last), "", "", target)
        if "targeted" in r:
            t = r["targeted"]
            ok = not t["woke_wrongly"] and not t["target_missed"] and not t["not_released"] and t["gauge_ok"]
            check = (
                "only the target woke"
                if ok
                else f"[red]{len(t['woke_wrongly'])} woke wrongly, {t['target_missed']} missed, "
                f"{len(t['not_released'])} not released[/red]"
            )
            table.add_row(
                f"@one waiter ({t['rounds']} rounds)",
                f"{int(t['latency_ms'].get('n', 0))}",
                *_lat_cells(t["latency_ms"]),
                f"{t['post_ms']['p50']:.1f}" if t["post_ms"] else "-",
                check,
                f"p99 ≤ {r['targets']['wake_p99_ms']:g} {_ok(met.get('wake_p99_ms', False))}"
                if t["waiters"] >= r["targets"]["waiters"]
                else f"(target is for {r['targets']['waiters']:,} waiters)",
            )
        console.print(table)
        console.print(
            f"server CPU per woken waiter (a broadcast's post to its last answer): {b['server_cpu_ms_per_woken']:.3f} ms"
        )
    if r.get("phases"):
        table = Table(title=f"Where the time goes (CPU seconds; cores busy out of {m['cpu_count']})")
        cols = ("phase", "wall s", "client CPU s", "server CPU s", "client cores", "server cores", "other processes")
        for col in cols:
            table.add_column(col, justify="left" if col == "phase" else "right")
        for name, p in r["phases"].items():
            table.add_row(
                name,
                f"{p['wall_s']:.2f}",
                f"{p['client_cpu_s']:.2f}",
                f"{p['server_cpu_s']:.2f}",
                f"{p['client_cores']:.2f}",
                f"{p['server_cores']:.2f}",
                f"{p['other_cores']:.2f}",
            )
        console.print(table)
    if "statuses" in r:
        console.print(f"HTTP statuses: {r['statuses']}; 5xx: {r['server_errors']}")
    for err in r.get("unexpected_responses", [])[:5]:
        console.print(f"[red]unexpected[/red] {err['request']} → {err['status']}: {err['response'][:300]}")
    if r["failure"]:
        console.print(f"[red]FAILED:[/red] {r['failure']}")
    if r["failure"] or r.get("server_errors") or not r["server_alive_at_end"]:
        console.print("[bold]server log (tail)[/bold]")
        console.print(r["server_log"][-5000:], markup=False, highlight=False)


if __name__ == "__main__":
    sys.exit(main())

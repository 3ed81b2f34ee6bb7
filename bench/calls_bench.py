"""Benchmark: what recording model calls costs (issue 25).

1. **Context builds with and without recording**, interleaved in one run: `--builds` pairs of
   `agent.context(chat, message=...)` at `--messages` messages (keyword search, as
   bench/context_bench.py), one with `record=True` and one without; p50/p95 of each and the
   ratio. Recording renders the record and queues it; a writer thread stores it.
2. **Posting while recording**: `--posts` messages posted one by one, alone and then while
   another thread records `--record-rate` calls a second (whose writer competes for the
   store's write lock and the CPU): posts/s of each and the ratio.
3. **Bytes per call at scale**: `--calls` records (100,000 by default) of contexts of this
   world, written by the writer; the store's growth per call (SQLite pages), and the writer's
   rate.

Run
---
    .venv/bin/python bench/calls_bench.py --json calls.json
    .venv/bin/python bench/calls_bench.py --messages 2000 --builds 100 --calls 5000   # smoke run
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_report import git_revision, percentiles, write_json

from recall import Recall, Settings, World
from recall.app.posting import PostRequest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--builds", type=int, default=300)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--posts", type=int, default=3000)
    parser.add_argument("--record-rate", type=float, default=50.0, help="calls recorded a second while posting")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    words = [
        "parcel",
        "invoice",
        "refund",
        "courier",
        "Lyon",
        "tea",
        "kettle",
        "order",
        "shop",
        "address",
        "delay",
        "charge",
    ]
    agents = [f"agent-{i}" for i in range(args.agents)]
    chats = [f"c{i}" for i in range(args.chats)]
    results: dict[str, object] = {
        "revision": git_revision(),
        "messages": args.messages,
        "record_rate": args.record_rate,
    }
    with tempfile.TemporaryDirectory(prefix="recall-calls-") as tmp:
        db = Path(tmp) / "b.db"
        settings = Settings(embeddings="none", index_interval=0, call_retention_count=10**9, call_retention_days=0)
        with Recall(db, settings) as mem:
            world = mem.world("w", create=True)
            world.add_human("maria")
            for agent in agents:
                world.add_agent(agent)
            batch: list[PostRequest] = []
            for _ in range(args.messages):
                text = " ".join(rng.choice(words) for _ in range(rng.randint(5, 30)))
                mention = f"@{rng.choice(agents)} " if rng.random() < 0.3 else ""
                batch.append(PostRequest("maria", mention + text, rng.choice(chats)))
                if len(batch) == 1000:
                    world.post_many(batch)
                    batch = []
            if batch:
                world.post_many(batch)
            mem.refresh_index()
            handles = [world.agent(a) for a in agents]
            for _ in range(30):  # warm-up: the tokenizer, caches
                rng.choice(handles).context(rng.choice(chats))
            off: list[float] = []
            on: list[float] = []
            for i in range(args.builds):
                # Each build its own agent and chat, the two kinds taking turns going first: a
                # build right after the same one finds its caches warm.
                for record in (False, True) if i % 2 else (True, False):
                    agent, chat = rng.choice(handles), rng.choice(chats)
                    start = time.perf_counter()
                    agent.context(chat, record=record)
                    (on if record else off).append((time.perf_counter() - start) * 1000)
            mem.service.calls.writer.flush()
            results["builds_off_ms"] = percentiles(off)
            results["builds_on_ms"] = percentiles(on)

            contexts = [rng.choice(handles).context(rng.choice(chats)) for _ in range(200)]
            results["posts_per_s_alone"] = _post_rate(world, args.posts)
            stop = threading.Event()

            def recording() -> None:
                i = 0
                while not stop.is_set():
                    mem.service.calls.record(contexts[i % len(contexts)], "python")
                    i += 1
                    time.sleep(1 / args.record_rate)

            recorder = threading.Thread(target=recording)
            recorder.start()
            try:
                results["posts_per_s_recording"] = _post_rate(world, args.posts)
            finally:
                stop.set()
                recorder.join()
            mem.service.calls.writer.flush()
            pages_before = _pages(mem)
            start = time.perf_counter()
            for i in range(args.calls):
                mem.service.calls.record(contexts[i % len(contexts)], "python")
            queued = time.perf_counter() - start
            mem.service.calls.writer.flush()
            written = time.perf_counter() - start
            grown = _pages(mem) - pages_before
            results["calls"] = args.calls
            results["record_us_each"] = queued / args.calls * 1e6
            results["calls_written_per_s"] = args.calls / written
            results["bytes_per_call"] = grown / args.calls
            results["mean_context_tokens"] = sum(c.report.total_tokens for c in contexts) / len(contexts)
            start = time.perf_counter()
            listed = handles[0].calls(limit=50)
            results["list_50_ms"] = (time.perf_counter() - start) * 1000
            start = time.perf_counter()
            handles[0].replay(listed[0].id)
            results["replay_ms"] = (time.perf_counter() - start) * 1000
    _print(results)
    if args.json:
        write_json(args.json, results)
    return 0


def _post_rate(world: World, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        world.post("maria", f"posting {i} about the parcel", chat="posts")
    return n / (time.perf_counter() - start)


def _pages(mem: Recall) -> int:
    """Bytes the store's file holds in use (pages in use × page size), through recall's own
    SQLite (a second SQLite library on the same file would break the locks of the first)."""
    read = mem.service.store._read  # type: ignore[attr-defined]
    size = read("PRAGMA page_size")[0][0]
    count = read("PRAGMA page_count")[0][0]
    free = read("PRAGMA freelist_count")[0][0]
    return int((count - free) * size)


def _print(r: dict[str, object]) -> None:
    off, on = r["builds_off_ms"], r["builds_on_ms"]
    assert isinstance(off, dict) and isinstance(on, dict)
    print(f"recall calls bench: {r['messages']:,} messages (recall {r['revision']})")
    print(f"{'context build':<32} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"{'not recorded':<32} {off['p50']:8.2f} {off['p95']:8.2f}")
    print(f"{'recorded (record=True)':<32} {on['p50']:8.2f} {on['p95']:8.2f}")
    print(f"recorded ÷ not, p50 {on['p50'] / off['p50']:.2f}, p95 {on['p95'] / off['p95']:.2f}")
    print(
        f"{r['calls']:,} calls: {r['bytes_per_call']:.0f} bytes each in the store"
        f" (contexts of {r['mean_context_tokens']:.0f} tokens on average);"
        f" record() {r['record_us_each']:.0f} µs each; written at {r['calls_written_per_s']:,.0f}/s"
    )
    alone, recording = r["posts_per_s_alone"], r["posts_per_s_recording"]
    assert isinstance(alone, float) and isinstance(recording, float)
    print(
        f"posts one by one: {alone:,.0f}/s alone, {recording:,.0f}/s while {r['record_rate']:.0f} calls/s"
        f" are recorded (÷ {recording / alone:.2f})"
    )
    print(f"list 50 calls {r['list_50_ms']:.1f} ms; replay one {r['replay_ms']:.1f} ms")


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: how each operation's time grows with the agents of one world (a crowd).

`bench/scaling_bench.py` grows the store's messages; this grows the world's agents. Every post
is delivered to every agent of its world, so a post, and a message's deletion, do work for
each agent by design (a delivery row each); nothing else should. For each store (`--stores`)
and each crowd size A (`--agents`, 100 / 1,000 / 10,000 by default), a fresh store (opened as
`bench/scaling_bench.py` opens it) gets a world of A agents, a human and `--messages` posts;
then each operation is timed `--reps` times (p50/p95):

- `add_agent` (a new one each time); `delete_agent` of a random agent;
- `post` by the human (delivered to all A agents);
- `inbox` of a random agent (its unread, up to 20) and `ack` of what it returned;
- `context` of a random agent (no recalled past: `recalled_max_tokens=0`);
- `delete_message` of a random message (removes its A deliveries);
- `export` of the whole world and the world's `delete`, once each (they read or remove all).

Prints a table per store with each operation's p50 at each A, its growth (p50 at the largest A
÷ p50 at the smallest) and, for the work done per agent, the time per agent. Writes JSON.

Run
---
    .venv/bin/python bench/crowd_bench.py                                    # ~3 min
    .venv/bin/python bench/crowd_bench.py --agents 100,1000 --reps 5 --stores sqlite   # smoke run
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_report import git_revision, timed_calls, write_json
from scaling_bench import opened

from recall import Recall

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "crowd_bench.json"
#: Operations that do work for every agent of the world, by design.
PER_AGENT = {
    "post": "a delivery for each agent",
    "delete_message": "removes the message's delivery to each agent",
    "export": "reads the whole world",
    "delete world": "removes the whole world",
}
ONCE = ("export", "delete world")


def measure(mem: Recall, agents: int, messages: int, reps: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    world = mem.create_world(f"crowd-{agents}")
    world.add_human("host")
    start = time.perf_counter()
    names = [f"a{i:06d}" for i in range(agents)]
    for name in names:
        world.add_agent(name)
    setup_s = time.perf_counter() - start
    ids = [world.post("host", f"announcement {i} for everyone").id for i in range(messages)]
    added = iter(range(reps + 10))

    def inbox_and_ack() -> None:
        agent = world.agent(rng.choice(names))
        agent.ack(agent.inbox(limit=20))

    def delete_agent() -> None:
        world.delete_agent(names.pop(rng.randrange(len(names))))

    def timed_once(call: Callable[[], Any]) -> dict[str, float]:
        start = time.perf_counter()
        call()
        ms = (time.perf_counter() - start) * 1000
        return {"p50": ms, "p95": ms}

    ops: dict[str, Callable[[], Any]] = {
        "add_agent": lambda: world.add_agent(f"late{next(added):06d}"),
        "post": lambda: ids.append(world.post("host", "one more for everyone").id),
        "inbox + ack": inbox_and_ack,
        "context": lambda: world.agent(rng.choice(names)).context(recalled_max_tokens=0),
        "delete_message": lambda: world.delete_message(ids.pop(rng.randrange(len(ids)))),
        "delete_agent": delete_agent,
    }
    timings = {name: timed_calls(call, reps, warmup=1) for name, call in ops.items()}
    timings["export"] = timed_once(lambda: sum(1 for _ in world.export()))
    timings["delete world"] = timed_once(world.delete)
    return {"setup_s": setup_s, "ops_ms": timings}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--agents", default="100,1000,10000", help="comma-separated crowd sizes")
    parser.add_argument("--stores", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--messages", type=int, default=50, help="posts in the world before timing")
    parser.add_argument("--reps", type=int, default=20, help="timed calls per operation")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        sizes = [int(a) for a in args.agents.split(",")]
    except ValueError:
        parser.error("--agents takes whole numbers separated by commas")
    stores = [s.strip() for s in args.stores.split(",")]
    if set(stores) - {"sqlite", "postgres"}:
        parser.error("--stores takes sqlite, postgres or both")
    # Each rep of delete_agent and delete_message removes one of them.
    if min(sizes) <= args.reps + 1 or args.messages <= args.reps or args.reps < 1:
        parser.error("every crowd needs more agents than --reps + 1, --messages more than --reps (at least 1)")

    results: dict[str, Any] = {"revision": git_revision(), "messages": args.messages, "stores": {}}
    for kind in stores:
        per_size: dict[str, Any] = {}
        for agents in sizes:
            print(f"{kind}: {agents:,} agents…", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix="recall-crowd-") as tmp, opened(kind, Path(tmp), "none") as mem:
                per_size[str(agents)] = measure(mem, agents, args.messages, args.reps, args.seed)
        results["stores"][kind] = per_size
        report(kind, sizes, per_size)
    write_json(args.json, results)
    print(f"results written to {args.json}")
    return 0


def report(kind: str, sizes: list[int], per_size: dict[str, Any]) -> None:
    first, last = str(sizes[0]), str(sizes[-1])
    head = " | ".join(f"{a:,} agents p50 ms" for a in sizes)
    print(f"\n{kind}: time per operation as the world's agents grow\n")
    print(f"| operation | {head} | growth | µs per agent at {sizes[-1]:,} | why it grows |")
    print("| --- |" + " ---: |" * (len(sizes) + 2) + " --- |")
    for op in per_size[first]["ops_ms"]:
        p50s = [per_size[str(a)]["ops_ms"][op]["p50"] for a in sizes]
        growth = p50s[-1] / p50s[0] if p50s[0] else float("nan")
        per_agent = f"{p50s[-1] * 1000 / sizes[-1]:.1f}" if op in PER_AGENT else ""
        cells = " | ".join(f"{ms:.2f}" for ms in p50s)
        print(f"| {op} | {cells} | {growth:.2f}× | {per_agent} | {PER_AGENT.get(op, '')} |")
    print(f"\n(setup: {per_size[last]['setup_s']:.1f} s to add {sizes[-1]:,} agents one by one)")


if __name__ == "__main__":
    sys.exit(main())

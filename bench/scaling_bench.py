"""Benchmark: how each public operation's time grows with the store (issue 27, point 3).

For each store (`--stores`: SQLite, and PostgreSQL on a throwaway server) and each size N
(`--sizes`, 1,000 / 10,000 / 100,000 by default), a fresh world gets N messages (`post_many`,
1,000 a call, over 20 chats among 10 agents and 3 humans) and a `RecallStore` of N items
(batches of 500); then each operation is timed `--reps` times (p50 and p95):

- `post` one message; `post_many` 100 messages a call;
- `context` of a random agent in a random chat, with the recalled past (the default);
- `search` of the world (hybrid ranking over keywords: `--embeddings none`, as embedding
  100,000 texts per store and size would take most of an hour here);
- `inbox` of an agent (20 unread) and `ack` of what it returned;
- the adapters: `RecallStore` get, put and a query search under a namespace prefix; the OpenAI
  Agents `RecallSession.get_items(limit=20)` (a session of 200 items in a chat of its own); LangChain's `RecallChatMessageHistory(window=20)`
  messages (its recalled past off: that part is `context`);
- `delete_message` of a random message;
- `export` of the whole world (once: it reads everything, so it grows with N).

Prints a table per store with each operation's p50 at each N and its growth (p50 at the largest
N ÷ p50 at the smallest): about 1 for work that does not grow with the store; the table names
why for the ones that do. Writes JSON.

Run
---
    .venv/bin/python bench/scaling_bench.py                                  # ~10 min
    .venv/bin/python bench/scaling_bench.py --sizes 500,2000 --reps 20 --stores sqlite   # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench_postgres import throwaway_postgres
from bench_report import git_revision, timed_calls, write_json
from context_bench import agent_ids, chat_ids, human_ids, make_workload, setup_world
from langgraph.store.base import PutOp

from recall import Recall, Settings
from recall.app.posting import PostRequest
from recall.integrations.langchain import RecallChatMessageHistory
from recall.integrations.langgraph import RecallStore
from recall.integrations.openai_agents import RecallSession

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "scaling_bench.json"
#: Why an operation's time grows with the store, where it does by design.
GROWS = {
    "export": "reads the whole world",
    "search": "keyword scores: numpy over the rows the words hold, in the copy in memory (both stores)",
    "RecallStore.search": "as search",
    "context": "its searches, as search",
}
WORDS = [
    "invoice",
    "order",
    "refund",
    "customer",
    "ticket",
    "status",
    "account",
    "billing",
    "shipping",
    "delivery",
    "error",
    "deploy",
]


@contextmanager
def opened(kind: str, folder: Path, embeddings: str) -> Iterator[Recall]:
    settings = Settings(embeddings=embeddings, index_interval=0)
    if kind == "sqlite":
        with Recall(folder / "recall.db", settings) as mem:
            yield mem
    else:
        with throwaway_postgres() as url, Recall(url, settings) as mem:
            yield mem


def measure(mem: Recall, n: int, reps: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    agents, humans, chats = agent_ids(10), human_ids(3), chat_ids(20)
    world = setup_world(mem, "scale", agents, humans)
    workload = make_workload(n, agents, humans, chats, rng)
    for at in range(0, n, 1000):
        world.post_many(workload.requests[at : at + 1000])
    del workload
    store = RecallStore(mem, world=world, fresh_search=False)
    for at in range(0, n, 500):
        store.batch(
            [
                PutOp(("users", f"u{i % 50:02d}"), f"item-{i}", {"text": f"{rng.choice(WORDS)} note {i}"})
                for i in range(at, min(n, at + 500))
            ]
        )
    mem.refresh_index()
    loop = asyncio.new_event_loop()  # one loop for the session's calls, as an agent's app has
    # An OpenAI Agents session in a chat of its own, as the SDK keeps one per conversation.
    session = RecallSession(mem, session_id="session-1", world=world, agent=agents[0], human=humans[0])
    loop.run_until_complete(session.add_items([{"role": "user", "content": f"item {i}"} for i in range(200)]))
    history = RecallChatMessageHistory(
        mem, world=world, agent=agents[0], human=humans[0], chat=chats[1], window=20, recalled=False
    )
    ids = [m.id for chat in chats for m in world.messages(chat, limit=100)]

    def words() -> str:
        return " ".join(rng.sample(WORDS, 3))

    def inbox_and_ack() -> None:
        agent = world.agent(rng.choice(agents))
        agent.ack(agent.inbox(limit=20))

    def export() -> None:
        for _ in world.export():
            pass

    ops: dict[str, Callable[[], Any]] = {
        "post": lambda: world.post(rng.choice(humans), words(), chat=rng.choice(chats)),
        "post_many (100)": lambda: world.post_many(
            [PostRequest(rng.choice(humans), words(), rng.choice(chats)) for _ in range(100)]
        ),
        "context": lambda: world.agent(rng.choice(agents)).context(chat=rng.choice(chats)),
        "search": lambda: world.search(words(), k=10),
        "inbox + ack": inbox_and_ack,
        "RecallStore.get": lambda: store.get(("users", f"u{rng.randrange(50):02d}"), f"item-{rng.randrange(n)}"),
        "RecallStore.put": lambda: store.put(("users", "new"), f"item-{rng.randrange(n)}", {"text": words()}),
        "RecallStore.search": lambda: store.search(("users",), query=words(), limit=10),
        "RecallSession.get_items(20)": lambda: loop.run_until_complete(session.get_items(limit=20)),
        "LangChain messages (20)": lambda: history.messages,
        "delete_message": lambda: world.delete_message(ids.pop(rng.randrange(len(ids)))),
    }
    results = {name: timed_calls(fn, reps, warmup=3) for name, fn in ops.items()}
    results["export"] = timed_calls(export, 1)
    loop.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated item counts")
    parser.add_argument("--stores", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--reps", type=int, default=100, help="timed runs of each operation")
    parser.add_argument("--embeddings", choices=("none", "minilm"), default="none")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        sizes = sorted(int(s) for s in args.sizes.split(","))
    except ValueError:
        parser.error("--sizes takes whole numbers separated by commas")
    stores = [s.strip() for s in args.stores.split(",")]
    if set(stores) - {"sqlite", "postgres"} or min(sizes) < 100 or args.reps < 1:
        parser.error("--stores of sqlite and postgres, --sizes of at least 100, --reps of at least 1")

    results: dict[str, Any] = {"revision": git_revision(), "embeddings": args.embeddings, "stores": {}}
    for kind in stores:
        per_size: dict[str, Any] = {}
        for n in sizes:
            print(f"{kind}, N = {n:,}…", file=sys.stderr)
            with ExitStack() as stack:
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="recall-scaling-")))
                mem = stack.enter_context(opened(kind, folder, args.embeddings))
                per_size[str(n)] = measure(mem, n, args.reps, args.seed)
        results["stores"][kind] = per_size
        report(kind, sizes, per_size)
    write_json(args.json, results)
    print(f"results written to {args.json}")
    return 0


def report(kind: str, sizes: list[int], per_size: dict[str, Any]) -> None:
    print(f"\n{kind}: p50 ms by N (growth = largest ÷ smallest)")
    print(f"{'operation':<30}" + "".join(f"{n:>12,}" for n in sizes) + f"{'growth':>9}  why")
    for op in per_size[str(sizes[0])]:
        p50 = [per_size[str(n)][op]["p50"] for n in sizes]
        growth = p50[-1] / p50[0] if p50[0] > 0 else float("nan")
        print(f"{op:<30}" + "".join(f"{v:>12.3f}" for v in p50) + f"{growth:>9.2f}  {GROWS.get(op, '')}")


if __name__ == "__main__":
    raise SystemExit(main())

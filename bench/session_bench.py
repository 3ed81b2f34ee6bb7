"""Benchmark: the framework adapters' session reads in a long session of a big world (issue 27,
point 2).

A world of `--messages` messages (100,000 by default), `--session` of them (10,000) items of one
OpenAI Agents session, the rest spread over other chats; then, timed `--reads` times each:
`RecallSession.get_items(limit=20)`, `pop_item()` (the newest item, hidden), and LangChain's
`RecallChatMessageHistory(window=20).messages` on the same chat (its recalled past off: that is a
context build, timed by bench/context_bench.py); and one `clear_session()`. Prints p50/p95 in ms
and writes JSON. Keyword search only (`embeddings="none"`): nothing here searches.

Run
---
    .venv/bin/python bench/session_bench.py --json session.json
    .venv/bin/python bench/session_bench.py --db postgres          # on a throwaway PostgreSQL
    .venv/bin/python bench/session_bench.py --messages 20000 --session 2000 --reads 50   # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench_postgres import throwaway_postgres
from bench_report import git_revision, timed_calls, write_json

from recall import Recall, Settings
from recall.app.posting import PostRequest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--session", type=int, default=10_000)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--db",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="a temporary SQLite file, or a throwaway PostgreSQL",
    )
    args = parser.parse_args()
    if not 0 < args.session <= args.messages or args.reads < 1:
        parser.error("need 0 < --session <= --messages and --reads >= 1")

    results: dict[str, Any] = {
        "revision": git_revision(),
        "db": args.db,
        "messages": args.messages,
        "session": args.session,
    }
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="recall-session-"))
        db = stack.enter_context(throwaway_postgres()) if args.db == "postgres" else str(Path(tmp) / "s.db")
        measure(db, args, results)
    print(
        f"recall session bench on {args.db}: {args.messages:,} messages, a session of {args.session:,}"
        f" (recall {results['revision']})"
    )
    print(f"{'operation':<36} {'p50 ms':>8} {'p95 ms':>8}")
    for name in ("get_items_20_ms", "pop_item_ms", "langchain_window_20_ms", "clear_session_ms"):
        print(f"{name[:-3]:<36} {results[name]['p50']:8.2f} {results[name]['p95']:8.2f}")
    if args.json:
        write_json(args.json, results)
    return 0


def measure(db: str, args: argparse.Namespace, results: dict[str, Any]) -> None:
    from langchain_core.messages import HumanMessage

    from recall.integrations.langchain import RecallChatMessageHistory
    from recall.integrations.openai_agents import RecallSession

    with Recall(db, Settings(embeddings="none", index_interval=0)) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper")
        others = args.messages - args.session
        batch = [PostRequest("maria", f"other talk {i}", f"chat-{i % 50}") for i in range(others)]
        for i in range(0, len(batch), 1000):
            world.post_many(batch[i : i + 1000])
        session = RecallSession(mem, session_id="s1", world=world, agent="helper", human="maria")
        items: list[Any] = [{"role": "user", "content": f"item {i}"} for i in range(args.session)]
        for i in range(0, len(items), 1000):
            asyncio.run(session.add_items(items[i : i + 1000]))
        history = RecallChatMessageHistory(
            mem, world=world, agent="helper", human="maria", chat="s1", window=20, recalled=False
        )
        assert isinstance(history.messages[-1], HumanMessage)

        results["get_items_20_ms"] = timed_calls(lambda: asyncio.run(session.get_items(limit=20)), args.reads)
        results["pop_item_ms"] = timed_calls(lambda: asyncio.run(session.pop_item()), args.reads)
        results["langchain_window_20_ms"] = timed_calls(lambda: history.messages, args.reads)
        results["clear_session_ms"] = timed_calls(lambda: asyncio.run(session.clear_session()), 1)


if __name__ == "__main__":
    sys.exit(main())

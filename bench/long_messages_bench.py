"""Benchmark: what one context costs when an agent's memory is long messages (issue 43, point 8).

One key could post 300 messages of ~100,000 characters and have every context request excerpt
all of them (seconds of CPU a call). A world of `--messages` such messages (prose, the question's
words inside each) is built beside one of as many ordinary 500-character messages; the agent's
context for a question is then built at each budget (`--budgets`, `none`: the model's whole
window, the default): the first build of a world (its messages never excerpted before) and the
next ones (p50). The process is warmed on a third world first, so the first build's time is the
messages' own. Keyword search only (`embeddings="none"`): embedding 30 MB of text would take
minutes and decides nothing here.

    .venv/bin/python bench/long_messages_bench.py                    # ~1 minute
    .venv/bin/python bench/long_messages_bench.py --messages 30      # a smoke run

Results are printed as a table and written as JSON to `--json`
(default bench/results/long_messages_bench.json).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_report import git_revision, percentiles, write_json
from excerpt_bench import QUERY, prose
from rich.console import Console
from rich.table import Table

from recall import Recall, Settings, World

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "long_messages_bench.json"
T0 = datetime(2025, 1, 1, tzinfo=UTC)
ORDINARY_CHARS = 500


def world_of(mem: Recall, name: str, count: int, chars: int, rng: random.Random) -> tuple[World, int]:
    """A world whose agent `desk` wrote `count` messages of about `chars` characters; the id of
    the question asked after them."""
    world = mem.world(name, create=True)
    world.add_human("maria")
    world.add_agent("desk")
    for n in range(count):
        world.post("desk", prose(chars, rng), at=T0 + timedelta(minutes=n))
    asked = world.post("maria", f"@desk {QUERY}", at=T0 + timedelta(days=1))
    return world, asked.id


def builds(world: World, asked: int, budget: int | None, warm_runs: int) -> dict[str, Any]:
    """The first build's time and the next ones' (ms), and the context's tokens."""
    times = []
    for _ in range(1 + warm_runs):
        started = time.perf_counter()
        context = world.agent("desk").context(message=asked, max_tokens=budget)
        times.append((time.perf_counter() - started) * 1000)
    return {"first_ms": times[0], "next": percentiles(times[1:]), "tokens": context.report.total_tokens}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=300, help="messages per world")
    parser.add_argument("--chars", type=int, default=99_000, help="characters of each long message")
    parser.add_argument("--budgets", default="8000,none", help="token budgets (none: the model's window)")
    parser.add_argument("--runs", type=int, default=5, help="builds after the first, per budget")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.chars < 1 or args.runs < 1:
        parser.error("--messages, --chars and --runs must be at least 1")
    budgets = [None if b.strip() == "none" else int(b) for b in args.budgets.split(",")]
    rng = random.Random(2)
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        Recall(Path(tmp) / "b.db", Settings(index_interval=0, embeddings="none")) as mem,
    ):
        warm, warm_asked = world_of(mem, "warm-up", 5, ORDINARY_CHARS, rng)
        worlds = {
            f"{args.messages} × {args.chars:,} chars": world_of(mem, "long", args.messages, args.chars, rng),
            f"{args.messages} × {ORDINARY_CHARS} chars": world_of(mem, "ordinary", args.messages, ORDINARY_CHARS, rng),
        }
        mem.refresh_index()
        builds(warm, warm_asked, None, 1)
        for name, (world, asked) in worlds.items():
            results[name] = {str(b or "window"): builds(world, asked, b, args.runs) for b in budgets}
    table = Table(title="One context's build (ms): the first of a world, then the next ones")
    for column in ("memory", "budget", "first", "next p50", "tokens"):
        table.add_column(column, justify="left" if column == "memory" else "right")
    for name, by_budget in results.items():
        for budget, found in by_budget.items():
            table.add_row(
                name, budget, f"{found['first_ms']:.0f}", f"{found['next']['p50']:.1f}", f"{found['tokens']:,}"
            )
    Console().print(table)
    write_json(
        args.json, {"git_revision": git_revision(), "messages": args.messages, "chars": args.chars, "builds": results}
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: what the times a query names cost a search and a context build (issue 23).

Hybrid search reads the times a query names (`search/when.py`) and scores every candidate
against each period. Before the caps, a yearless date ("jan 1") became thirty periods per
mention, the text was rewritten once per match, and a page of dates made a search take
seconds. This script times, over one world of `--messages` messages with the default embedder:

1. **Searches** (`world.search`, hybrid, k 10): a plain question; a plain text as long as the
   longest query a search accepts (`MAX_QUERY_CHARS`), so the embedding of a long query is not
   counted as the cost of its dates; and the worst inputs found: that length filled with
   yearless dates (`jan 1 jan 2 …`), with ISO dates, with relative phrases ("3 days ago").
2. **Context builds** with the newest message 100,000 characters long (the message limit):
   `job 1 ` repeated (as many tokens, no date) against `jan 1 ` repeated, each once the index is up to date (what a build
   embeds of messages the indexer has not reached yet is another cost, bounded apart).

Each case runs `--runs` times after a warm-up (p50 reported); the extra cost of each worst
input is its p50 minus that of the plain text of the same length. Target: ≤ 5 ms.

    .venv/bin/python bench/time_phrase_bench.py                 # ~1 min on 2 cores
    .venv/bin/python bench/time_phrase_bench.py --messages 200 --runs 10   # a smoke run

Results are printed as a table and written as JSON to `--json`
(default bench/results/time_phrase_bench.json).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_report import git_revision, timed_calls, write_json
from rich.console import Console
from rich.table import Table

from recall.api import Recall, World

try:
    from recall.search.base import MAX_QUERY_CHARS
except ImportError:  # a recall before the cap (to time it against)
    MAX_QUERY_CHARS = 4_000
from recall.settings import Settings

TARGET_EXTRA_MS = 5.0
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "time_phrase_bench.json"
MESSAGE_CHARS = 100_000 - len("@desk ")
_WORDS = [
    "parcel",
    "order",
    "refund",
    "invoice",
    "delivery",
    "address",
    "oslo",
    "friday",
    "dinner",
    "trip",
    "sister",
    "paint",
    "blue",
    "garden",
]
_MONTHS = ["jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]


def _fill(pieces: list[str], chars: int) -> str:
    """`pieces` repeated, space-separated, cut to `chars` characters."""
    text = " ".join(pieces) + " "
    return (text * (chars // len(text) + 1))[:chars]


def queries() -> dict[str, str]:
    """The searched texts: a plain question, plain text of the longest length, the worst dates."""
    rng = random.Random(3)
    return {
        "plain question": "where did the parcel go?",
        "plain, longest query": _fill([rng.choice(_WORDS) for _ in range(500)], MAX_QUERY_CHARS),
        "yearless dates, longest query": _fill([f"{m} {d}" for m in _MONTHS for d in range(1, 29)], MAX_QUERY_CHARS),
        "ISO dates, longest query": _fill(
            [f"2023-{m:02d}-{d:02d}" for m in range(1, 13) for d in range(1, 29)], MAX_QUERY_CHARS
        ),
        "relative phrases, longest query": _fill(
            [f"{n} {unit} ago" for n in range(1, 30) for unit in ("days", "weeks", "months")], MAX_QUERY_CHARS
        ),
    }


def fill_world(mem: Recall, messages: int, world_id: str = "bench") -> World:
    world = mem.world(world_id, create=True)
    world.add_human("maria")
    world.add_agent("desk")
    rng = random.Random(1)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for i in range(messages):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 25)))
        world.post(
            "maria",
            f"on {rng.choice(_MONTHS)} {rng.randint(1, 28)} {words}",
            chat=f"c{i % 5}",
            at=start + timedelta(hours=i),
        )
    mem.refresh_index()
    return world


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000, help="messages in the world")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per case")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.runs < 1:
        parser.error("--messages and --runs must be at least 1")
    console = Console()
    results: dict[str, Any] = {"messages": args.messages, "runs": args.runs, "git_revision": git_revision()}
    with tempfile.TemporaryDirectory() as folder, Recall(Path(folder) / "bench.db", Settings(index_interval=0)) as mem:
        with console.status("filling the world and embedding it…"):
            world = fill_world(mem, args.messages)
        searches = {
            name: timed_calls(lambda q=q: world.search(q, k=10), args.runs, warmup=1) for name, q in queries().items()
        }
        builds: dict[str, dict[str, float]] = {}
        for name, text in (
            ("`job 1 ` repeated", ("job 1 " * (MESSAGE_CHARS // 6 + 1))[:MESSAGE_CHARS]),
            ("`jan 1 ` repeated", ("jan 1 " * (MESSAGE_CHARS // 6 + 1))[:MESSAGE_CHARS]),
        ):
            # Each in a world of its own, so neither long message is the other's recalled past.
            with console.status(f"a world for {name}…"):
                alone = fill_world(mem, args.messages, f"bench-{len(builds)}")
            message = alone.post("maria", "@desk " + text, chat="flood")
            mem.refresh_index()  # embedded, as the background indexer does within a second
            builds[name] = timed_calls(
                lambda w=alone, m=message.id: w.agent("desk").context(chat="flood", message=m), args.runs, warmup=1
            )
    results["search_ms"] = searches
    results["context_ms"] = builds
    plain_search = searches["plain, longest query"]["p50"]
    plain_build = builds["`job 1 ` repeated"]["p50"]
    table = Table(title=f"What named times cost ({args.messages:,} messages, MiniLM, p50 of {args.runs} runs)")
    for column in ("case", "p50 ms", "p95 ms", "extra over plain of the same length", "target"):
        table.add_column(column, justify="left" if column == "case" else "right")
    # Each case: its label, its numbers, and its extra cost over the plain text of its length
    # (None for the plain cases themselves).
    cases: list[tuple[str, dict[str, float], float | None]] = [
        (
            f"search: {name}",
            stats,
            stats["p50"] - plain_search if name.startswith(("yearless", "ISO", "relative")) else None,
        )
        for name, stats in searches.items()
    ] + [
        (
            f"context, newest message 100,000 chars of {name}",
            stats,
            stats["p50"] - plain_build if name.startswith("`jan") else None,
        )
        for name, stats in builds.items()
    ]
    worst = max((extra for _, _, extra in cases if extra is not None), default=0.0)
    for label, stats, extra in cases:
        table.add_row(
            label,
            f"{stats['p50']:.2f}",
            f"{stats['p95']:.2f}",
            "" if extra is None else f"{extra:+.2f}",
            "" if extra is None else ("met" if extra <= TARGET_EXTRA_MS else "missed"),
        )
    console.print(table)
    results["worst_extra_ms"] = worst
    results["target_extra_ms"] = TARGET_EXTRA_MS
    write_json(args.json, results)
    console.print(f"worst extra cost {worst:+.2f} ms (target ≤ {TARGET_EXTRA_MS:g}); JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: context builds and message ingest of recall at scale.

What it measures
----------------
1. **Batched ingest** - a world with `--agents` agents, `--humans` humans and `--chats` chats
   receives `--messages` messages through `World.post_many`, `--batch-size` per call (one
   transaction each). Every message is delivered to every agent except its author, so each
   message fans out into `agents` (or `agents - 1`) delivery rows. Reported as messages/s and
   deliveries/s.
2. **One-by-one ingest** - `--one-by-one` messages posted with `World.post`, one transaction
   each, into a second, fresh world of the same store file.
3. **Context builds** - after ingest and bringing the search index up to date (as a server's
   background indexer keeps it), `--builds` calls of
   `world.agent(<random agent>).context(chat=<random chat>)` with the default budget and
   history limit and the recalled past on (the default), then `--builds` more with it off
   (`recalled_max_tokens=0`), timed with `time.perf_counter` (p50/p95/p99/mean ms), after ~50 warm-up
   builds (the tokenizer loads once per process). Then `--builds-history-100` builds with
   `history_limit=100`.
4. **Where the time goes** - `--profile-builds` builds and `--profile-batches` ingest batches
   (into a third world) under cProfile: the top functions by cumulative and by own time, plus
   the share of a few known hot spots (SQL, row decoding, token counting, routing, look-ups).
   cProfile slows Python code more than C code, so read the shares as a guide.

The message mix is deterministic from `--seed`: senders are the humans and the agents
(uniformly), contents have 5-40 words, ~30% start with a paragraph-beginning @mention of a
random agent, ~5% mention an agent mid-text, ~10% span several lines, and each message goes
to a random chat.

Targets (from the issues): context build p95 <= 15 ms with the recalled past and <= 5 ms without
it at 100k messages; batched ingest
>= 20,000 messages/s.

Run
---
    .venv/bin/python bench/context_bench.py                         # full size (~30 s on 2 cores)
    .venv/bin/python bench/context_bench.py --messages 5000 --builds 200   # smoke run

Results are printed as tables and written as JSON to `--json`
(default bench/results/context_bench.json). The database is a temporary file removed
afterwards unless `--db` names one (it must not exist yet; it is kept).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench_postgres import database_bytes, throwaway_postgres
from bench_report import git_revision, percentiles, write_json
from rich.console import Console
from rich.table import Table

from recall.api import Recall, World
from recall.app.posting import PostRequest
from recall.settings import Settings
from recall.store import sqlite as sqlite_store

TARGET_CONTEXT_P95_MS = 5.0  # with the recalled past off (recalled_max_tokens=0)
TARGET_RECALLED_P95_MS = 15.0  # with it on, by default
TARGET_BATCHED_MSGS_PER_S = 20_000
WARMUP_BUILDS = 50
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "context_bench.json"

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

#: Functions whose cumulative time the "hot spots" summaries report: (label, file suffix or "~"
#: for C functions, function name).
BUILD_SPOTS: tuple[tuple[str, str, str], ...] = (
    ("service.contexts.build_context (whole build)", "service.py", "build_context"),
    ("core build_context (incl. lazy memory reads)", "core/context.py", "build_context"),
    ("scan memory (SQL + decode + verdicts)", "core/context.py", "_scan_memory"),
    ("store.iter_heard (memory pages)", "store/sqlite.py", "iter_heard"),
    ("store._read (all SQL reads)", "store/sqlite.py", "_read"),
    ("row -> Message decode", "store/rows.py", "message_record"),
    ("json.loads (row decode)", "json/__init__.py", "loads"),
    ("addressing verdicts", "core/routing.py", "context_verdict"),
    ("TokenCounter.message (token counting)", "core/tokens.py", "message"),
    ("service.worlds.get_world (look-ups)", "service.py", "get_world"),
    ("service.worlds.get_agent (look-ups)", "service.py", "get_agent"),
    ("observations block", "service.py", "_observations_block"),
    ("build_system_prompt", "core/prompt.py", "build_system_prompt"),
    ("fit history to budget", "core/context.py", "_fit_history"),
)
INGEST_SPOTS: tuple[tuple[str, str, str], ...] = (
    ("service.posting.post_many (whole batch)", "service.py", "post_many"),
    ("validate + route each message (Python)", "service.py", "_route"),
    ("store.append_messages (the transaction)", "store/sqlite.py", "append_messages"),
    ("SQLite executemany (message rows, counts, chats)", "~", "Connection.executemany [C]"),
    ("SQLite execute (delivery fan-out, BEGIN/COMMIT, reads)", "~", "Connection.execute [C]"),
    ("json.dumps (mentions, addressed, metadata)", "json/__init__.py", "dumps"),
    ("participants look-up", "store/sqlite.py", "list_participants"),
)


@dataclass(frozen=True)
class Workload:
    requests: list[PostRequest]
    deliveries: int


def agent_ids(n: int) -> list[str]:
    return [f"agent-{i:02d}" for i in range(n)]


def human_ids(n: int) -> list[str]:
    names = ["maria", "omar", "lena", "kenji", "ada", "tom", "zoe", "ravi"]
    return [names[i] if i < len(names) else f"human-{i}" for i in range(n)]


def chat_ids(n: int) -> list[str]:
    return [f"chat-{i:02d}" for i in range(n)]


def make_content(rng: random.Random, agents: Sequence[str]) -> str:
    words = rng.choices(WORDS, k=rng.randint(5, 40))
    if rng.random() < 0.05:  # a mention mid-text: addresses no one by paragraph
        words.insert(rng.randint(1, len(words)), f"@{rng.choice(agents)}")
    if rng.random() < 0.10 and len(words) > 6:  # several lines
        cut = rng.randint(2, len(words) - 2)
        second = " ".join(words[cut:])
        if rng.random() < 0.3:
            second = f"@{rng.choice(agents)} {second}"
        text = " ".join(words[:cut]) + "\n" + second
    else:
        text = " ".join(words)
    if rng.random() < 0.30:
        text = f"@{rng.choice(agents)} {text}"
    return text


def make_workload(
    n: int, agents: Sequence[str], humans: Sequence[str], chats: Sequence[str], rng: random.Random
) -> Workload:
    senders = [*humans, *agents]
    agent_set = set(agents)
    requests: list[PostRequest] = []
    deliveries = 0
    for _ in range(n):
        sender = rng.choice(senders)
        requests.append(PostRequest(sender, make_content(rng, agents), chat_id=rng.choice(chats)))
        deliveries += len(agents) - (1 if sender in agent_set else 0)
    return Workload(requests, deliveries)


def setup_world(mem: Recall, world_id: str, agents: Sequence[str], humans: Sequence[str]) -> World:
    world = mem.create_world(world_id)
    for agent in agents:
        world.add_agent(agent, system_prompt=f"You are {agent}, a helpful support agent. Answer briefly.")
    for human in humans:
        world.add_human(human)
    return world


def run_builds(
    world: World,
    agents: Sequence[str],
    chats: Sequence[str],
    n: int,
    rng: random.Random,
    history_limit: int | None = None,
    recalled_max_tokens: int | None = None,
) -> tuple[list[float], dict[str, float]]:
    """Time `n` context builds; returns the latencies in ms and a summary of what was built."""
    samples: list[float] = []
    messages = tokens = scanned = incoming = recalled = 0
    for _ in range(n):
        agent_id = rng.choice(agents)
        chat = rng.choice(chats)
        start = time.perf_counter()
        ctx = world.agent(agent_id).context(
            chat=chat, history_limit=history_limit, recalled_max_tokens=recalled_max_tokens
        )
        samples.append((time.perf_counter() - start) * 1000)
        report = ctx.report
        messages += len(ctx.messages)
        tokens += report.total_tokens
        incoming += report.incoming_count
        scanned += sum(1 for item in report.items if item.kind == "message" and item.section != "recalled")
        recalled += report.sections.get("recalled", 0)
    shape = {
        "mean_recalled_tokens": recalled / n,
        "mean_messages_in_context": messages / n,
        "mean_incoming": incoming / n,
        "mean_tokens": tokens / n,
        "mean_messages_scanned": scanned / n,
    }
    return samples, shape


def _short_path(path: str) -> str:
    for marker in ("/src/", "/site-packages/", "/lib/python"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path if path.startswith(("<", "~")) else os.path.basename(path)


def _builtin_name(name: str) -> str:
    """`<method 'fetchall' of 'pysqlite3.dbapi2.Cursor' objects>` -> `Cursor.fetchall [C]`."""
    match = re.fullmatch(r"<method '(\w+)' of '(?:[\w.]+\.)?(\w+)' objects>", name)
    if match:
        return f"{match.group(2)}.{match.group(1)} [C]"
    match = re.fullmatch(r"<built-in method (?:[\w.]+\.)?(\w+)>", name)
    return f"{match.group(1)} [C]" if match else name


def _display(key: tuple[str, int, str]) -> str:
    path, line, name = key
    return f"{_short_path(path)}:{line} {name}" if line else _builtin_name(name)


def _matches(key: tuple[str, int, str], suffix: str, name: str) -> bool:
    if suffix == "~":
        return key[0] == "~" and _builtin_name(key[2]) == name
    return key[2] == name and key[0].replace(os.sep, "/").endswith(suffix)


def profile_call(
    run: Callable[[], None], units: int, unit: str, spots: Sequence[tuple[str, str, str]], top: int = 10
) -> dict[str, Any]:
    """Run `run` (doing `units` units of work) under cProfile; times are ms per unit."""
    profiler = cProfile.Profile()
    profiler.runcall(run)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    # The whole profiled run is the cumulative time of `run`, the root call.
    code = run.__code__
    roots = [v[3] for k, v in raw.items() if k[0] == code.co_filename and k[2] == code.co_name]
    total = (roots[0] if roots else sum(v[2] for v in raw.values())) or 1e-12

    def row(key: tuple[str, int, str], value: tuple[int, int, float, float, Any]) -> dict[str, Any]:
        _, ncalls, tottime, cumtime, _ = value
        return {
            "function": _display(key),
            "calls": round(ncalls / units, 2),
            "own_ms": round(tottime * 1000 / units, 4),
            "cum_ms": round(cumtime * 1000 / units, 4),
            "cum_share": round(cumtime / total, 4),
        }

    ranked = [(k, v) for k, v in raw.items() if k[0] != __file__]
    by_cum = sorted(ranked, key=lambda kv: kv[1][3], reverse=True)[:top]
    by_own = sorted(ranked, key=lambda kv: kv[1][2], reverse=True)[:top]
    hot: list[dict[str, Any]] = []
    for label, suffix, name in spots:
        matches = [v for k, v in raw.items() if _matches(k, suffix, name)]
        if matches:
            cum = sum(v[3] for v in matches)
            hot.append({"what": label, "cum_ms": round(cum * 1000 / units, 4), "share": round(cum / total, 4)})
    return {
        "unit": unit,
        "units": units,
        "profiled_ms_per_unit": round(total * 1000 / units, 4),
        "top_cumulative": [row(k, v) for k, v in by_cum],
        "top_own": [row(k, v) for k, v in by_own],
        "hot_spots": hot,
    }


def timed(label: str, console: Console, fn: Callable[[], Any]) -> float:
    # A line, not a spinner: a spinner's thread would take the interpreter from what is timed.
    console.print(label, style="dim")
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=100_000, help="messages in the world (batched ingest)")
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--humans", type=int, default=3)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument(
        "--builds", type=int, default=500, help="timed context builds (default budget), recalled past on, then off"
    )
    parser.add_argument("--builds-history-100", type=int, default=500, help="timed builds with history_limit=100")
    parser.add_argument("--profile-builds", type=int, default=300, help="builds run under cProfile")
    parser.add_argument(
        "--profile-batches", type=int, default=5, help="ingest batches run under cProfile (in a third world)"
    )
    parser.add_argument("--one-by-one", type=int, default=5000, help="messages posted one by one (fresh world)")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="SQLite file to create (default: a temp file), or 'postgres' for a throwaway PostgreSQL",
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--embeddings",
        choices=("none", "minilm"),
        default="none",
        help="embedding model of the search index; 'none' (default) keeps the background indexer from embedding"
        " the 100k messages while builds are timed (bench/search_bench.py measures semantic search)",
    )
    args = parser.parse_args(argv)
    if min(args.messages, args.agents, args.chats, args.builds, args.batch_size) < 1 or args.humans < 0:
        parser.error("--messages, --agents, --chats, --builds and --batch-size must be at least 1")

    console = Console() if sys.stdout.isatty() else Console(width=150)
    tmpdir: str | None = None
    postgres = ExitStack()
    db_path: Path | str
    if args.db is None:
        tmpdir = tempfile.mkdtemp(prefix="recall-bench-")
        db_path = Path(tmpdir) / "bench.db"
    elif str(args.db) == "postgres":
        db_path = postgres.enter_context(throwaway_postgres())
    else:
        db_path = args.db
        if db_path.exists():
            parser.error(f"{db_path} exists; --db must name a new file")

    agents = agent_ids(args.agents)
    humans = human_ids(args.humans)
    chats = chat_ids(args.chats)
    rng = random.Random(args.seed)
    workload = make_workload(args.messages, agents, humans, chats, rng)
    single = make_workload(args.one_by_one, agents, humans, chats, rng)
    profiled = make_workload(args.profile_batches * args.batch_size, agents, humans, chats, rng)

    try:
        # Indexing runs on demand only: a background indexer would compete with the timed builds.
        settings = replace(Settings.from_env(), embeddings=args.embeddings, index_interval=0)
        with Recall(db_path, settings) as mem:
            # -- batched ingest ---------------------------------------------------------------
            world = setup_world(mem, "bench", agents, humans)
            batch_ms: list[float] = []

            def ingest_batched() -> None:
                reqs = workload.requests
                for i in range(0, len(reqs), args.batch_size):
                    start = time.perf_counter()
                    world.post_many(reqs[i : i + args.batch_size])
                    batch_ms.append((time.perf_counter() - start) * 1000)

            batched_s = timed(f"batched ingest of {args.messages:,} messages…", console, ingest_batched)

            # -- one-by-one ingest in a fresh world --------------------------------------------
            single_world = setup_world(mem, "bench-one-by-one", agents, humans)

            def ingest_single() -> None:
                for req in single.requests:
                    single_world.post(req.sender, req.content, chat=req.chat_id)

            single_s = (
                timed(f"one-by-one ingest of {args.one_by_one:,} messages…", console, ingest_single)
                if single.requests
                else 0.0
            )

            # -- the search index, as a server's background indexer keeps it -------------------
            # (else the first builds would each copy a batch of the backlog into it)
            index_s = timed("indexing…", console, mem.refresh_index)

            # -- context builds ----------------------------------------------------------------
            build_rng = random.Random(args.seed + 1)
            # The posted requests go: a server holds none of them while it builds contexts, and
            # each of the garbage collector's full passes would walk them all (the p99).
            workload.requests.clear()
            single.requests.clear()
            console.print("context builds…", style="dim")
            run_builds(world, agents, chats, WARMUP_BUILDS, build_rng)
            samples, shape = run_builds(world, agents, chats, args.builds, build_rng)
            samples_off, shape_off = run_builds(world, agents, chats, args.builds, build_rng, recalled_max_tokens=0)
            samples_100: list[float] = []
            shape_100: dict[str, float] = {}
            if args.builds_history_100 > 0:
                samples_100, shape_100 = run_builds(
                    world, agents, chats, args.builds_history_100, build_rng, history_limit=100
                )
            # -- where the time goes ------------------------------------------------------------
            profiles: dict[str, Any] = {}
            if args.profile_builds > 0:

                def profiled_builds() -> None:
                    for _ in range(args.profile_builds):
                        world.agent(build_rng.choice(agents)).context(chat=build_rng.choice(chats))

                with console.status("profiling context builds…"):
                    profiles["context_build"] = profile_call(profiled_builds, args.profile_builds, "build", BUILD_SPOTS)
            if profiled.requests:
                profile_world = setup_world(mem, "bench-profile", agents, humans)

                def profiled_ingest() -> None:
                    reqs = profiled.requests
                    for i in range(0, len(reqs), args.batch_size):
                        profile_world.post_many(reqs[i : i + args.batch_size])

                with console.status("profiling batched ingest…"):
                    profiles["ingest"] = profile_call(
                        profiled_ingest, len(profiled.requests) // args.batch_size or 1, "batch", INGEST_SPOTS
                    )
            db_bytes = (
                database_bytes(db_path)
                if isinstance(db_path, str)
                else sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*"))
            )
    finally:
        postgres.close()
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)

    build_stats = percentiles(samples)
    build_stats_off = percentiles(samples_off)
    build_stats_100 = percentiles(samples_100) if samples_100 else {}
    ingest = {
        "batched_msgs_per_s": args.messages / batched_s,
        "batched_deliveries_per_s": workload.deliveries / batched_s,
        "batched_seconds": batched_s,
        "batch_ms_p50": percentiles(batch_ms)["p50"],
        "batch_ms_p95": percentiles(batch_ms)["p95"],
        "one_by_one_msgs_per_s": (args.one_by_one / single_s) if single_s else None,
        "one_by_one_deliveries_per_s": (single.deliveries / single_s) if single_s else None,
        "one_by_one_ms_per_message": (single_s * 1000 / args.one_by_one) if single_s else None,
        "deliveries": workload.deliveries,
        "index_seconds": index_s,
    }
    results: dict[str, Any] = {
        "config": {
            "messages": args.messages,
            "agents": args.agents,
            "humans": args.humans,
            "chats": args.chats,
            "builds": args.builds,
            "builds_history_100": args.builds_history_100,
            "profile_builds": args.profile_builds,
            "profile_batches": args.profile_batches,
            "one_by_one": args.one_by_one,
            "batch_size": args.batch_size,
            "seed": args.seed,
            "db": str(args.db) if args.db else None,
            "db_bytes": db_bytes,
        },
        "ingest": ingest,
        "context_build_ms": build_stats,
        "context_build_ms_recalled_off": build_stats_off,
        "context_shape_recalled_off": shape_off,
        "recalled_on_to_off_p95": build_stats["p95"] / build_stats_off["p95"],
        "context_build_ms_history_100": build_stats_100,
        "context_shape": shape,
        "context_shape_history_100": shape_100,
        "targets": {
            "context_p95_ms": TARGET_CONTEXT_P95_MS,
            "recalled_context_p95_ms": TARGET_RECALLED_P95_MS,
            "batched_ingest_msgs_per_s": TARGET_BATCHED_MSGS_PER_S,
        },
        "met": {
            "context_p95_ms": build_stats_off["p95"] <= TARGET_CONTEXT_P95_MS,
            "recalled_context_p95_ms": build_stats["p95"] <= TARGET_RECALLED_P95_MS,
            "batched_ingest_msgs_per_s": ingest["batched_msgs_per_s"] >= TARGET_BATCHED_MSGS_PER_S,
        },
        # Context builds, top functions by cumulative time (ms per build under cProfile).
        "profile_top": profiles.get("context_build", {}).get("top_cumulative", []),
        "profile": profiles,
        "machine": {
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "sqlite": vars(sqlite_store)["sqlite3"].sqlite_version,  # the module the store uses
            "platform": platform.platform(),
            "recall_commit": git_revision(),
        },
    }

    print_results(console, results)
    write_json(args.json, results)
    console.print(f"results written to {args.json}")
    return 0


def _ok(met: bool) -> str:
    return "[green]met[/green]" if met else "[red]missed[/red]"


def print_results(console: Console, r: dict[str, Any]) -> None:
    cfg, ing, met = r["config"], r["ingest"], r["met"]
    console.print(
        f"[bold]recall context bench[/bold]: {cfg['messages']:,} messages, {cfg['agents']} agents, "
        f"{cfg['humans']} humans, {cfg['chats']} chats, seed {cfg['seed']} "
        f"(db {cfg['db_bytes'] / 1e6:.1f} MB; Python {r['machine']['python']}, SQLite {r['machine']['sqlite']}, "
        f"{r['machine']['cpu_count']} CPUs; recall {r['machine']['recall_commit']})"
    )

    ingest = Table(title="Ingest")
    for col in ("mode", "messages/s", "deliveries/s", "notes", "target"):
        ingest.add_column(col, justify="right" if col in ("messages/s", "deliveries/s") else "left")
    ingest.add_row(
        f"batched ({cfg['batch_size']}/call)",
        f"{ing['batched_msgs_per_s']:,.0f}",
        f"{ing['batched_deliveries_per_s']:,.0f}",
        f"{cfg['messages']:,} msgs in {ing['batched_seconds']:.2f} s; batch p50 {ing['batch_ms_p50']:.1f} ms, "
        f"p95 {ing['batch_ms_p95']:.1f} ms",
        f"≥ {r['targets']['batched_ingest_msgs_per_s']:,} {_ok(met['batched_ingest_msgs_per_s'])}",
    )
    if ing["one_by_one_msgs_per_s"] is not None:
        ingest.add_row(
            "one by one (world.post)",
            f"{ing['one_by_one_msgs_per_s']:,.0f}",
            f"{ing['one_by_one_deliveries_per_s']:,.0f}",
            f"{cfg['one_by_one']:,} msgs, {ing['one_by_one_ms_per_message']:.3f} ms each",
            "",
        )
    console.print(ingest)
    console.print(f"search index brought up to date before the builds in {ing['index_seconds']:.1f} s")

    builds = Table(title="Context builds (ms)")
    for col in ("variant", "n", "p50", "p95", "p99", "mean", "max", "msgs in ctx", "scanned", "recalled tok", "target"):
        builds.add_column(col, justify="left" if col in ("variant", "target") else "right")
    targets = r["targets"]
    variants = [
        (
            "default (history 25, recalled past on)",
            r["context_build_ms"],
            r["context_shape"],
            f"p95 ≤ {targets['recalled_context_p95_ms']:g} {_ok(met['recalled_context_p95_ms'])}",
        ),
        (
            "recalled past off",
            r["context_build_ms_recalled_off"],
            r["context_shape_recalled_off"],
            f"p95 ≤ {targets['context_p95_ms']:g} {_ok(met['context_p95_ms'])}",
        ),
    ]
    if r["context_build_ms_history_100"]:
        variants.append(("history_limit 100", r["context_build_ms_history_100"], r["context_shape_history_100"], ""))
    for label, s, shape, target in variants:
        builds.add_row(
            label,
            f"{int(s['n'])}",
            f"{s['p50']:.2f}",
            f"{s['p95']:.2f}",
            f"{s['p99']:.2f}",
            f"{s['mean']:.2f}",
            f"{s['max']:.2f}",
            f"{shape['mean_messages_in_context']:.1f}",
            f"{shape['mean_messages_scanned']:.1f}",
            f"{shape['mean_recalled_tokens']:.0f}",
            target,
        )
    console.print(builds)
    console.print(f"recalled past on ÷ off, context p95: {r['recalled_on_to_off_p95']:.2f}×")

    note = "under cProfile, which inflates Python-heavy code"
    if "context_build" in r["profile"]:
        print_profile(console, "context build", r["profile"]["context_build"], note, ("top_cumulative", "top_own"))
    if "ingest" in r["profile"]:
        print_profile(console, "batched ingest", r["profile"]["ingest"], note, ("top_own",))


def print_profile(console: Console, what: str, prof: dict[str, Any], note: str, lists: Sequence[str]) -> None:
    unit = prof["unit"]
    head = f"{what}: {prof['profiled_ms_per_unit']:.2f} ms/{unit} {note}"
    for key in lists:
        order = "cumulative" if key == "top_cumulative" else "own time"
        table = Table(title=f"Where the time goes, {head}: top by {order}")
        for col in ("function", f"calls/{unit}", f"own ms/{unit}", f"cum ms/{unit}", "cum share"):
            table.add_column(col, justify="left" if col == "function" else "right")
        for row in prof[key]:
            table.add_row(
                row["function"],
                f"{row['calls']:.1f}",
                f"{row['own_ms']:.3f}",
                f"{row['cum_ms']:.3f}",
                f"{row['cum_share']:.0%}",
            )
        console.print(table)
    hot = Table(title=f"Hot spots, {what} (cumulative, overlapping)")
    hot.add_column("what")
    hot.add_column(f"ms/{unit}", justify="right")
    hot.add_column("share", justify="right")
    for row in prof["hot_spots"]:
        hot.add_row(row["what"], f"{row['cum_ms']:.3f}", f"{row['share']:.0%}")
    console.print(hot)


if __name__ == "__main__":
    sys.exit(main())

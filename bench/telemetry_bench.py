"""Benchmark: what OpenTelemetry tracing costs a context build (docs/opentelemetry.md).

What it measures
----------------
A world of `--messages` messages (context_bench.py's mix: `--agents` agents, 3 humans,
`--chats` chats, the search index brought up to date) gets `--builds` context builds with
tracing off and `--builds` with it on, in one run, interleaved (off, on, off, on, ... for the
same agent and chat each pair, the order of each pair alternating) so that drift of the machine
falls on both alike. Each build is timed with `time.perf_counter` after `--warmup` untimed ones.

- **off**: OpenTelemetry's API with no SDK set up, as in `recall serve` without OTEL_*
  variables (the server's web framework imports the API): recall's spans are the API's no-ops.
- **on**: the SDK's TracerProvider with a BatchSpanProcessor (what `recall serve` sets up) into
  an in-memory exporter, and a MeterProvider whose in-memory reader aggregates the metrics:
  every span (the build and its scan, search, ranking and packing) and metric is recorded; the
  export itself runs in the processor's thread, as it does towards a collector.

Reported: p50/p95/p99/mean of each, the ratio on/off of p50 and p95, and spans per build.

Run
---
    .venv/bin/python bench/telemetry_bench.py                     # ~1 minute on 2 cores
    .venv/bin/python bench/telemetry_bench.py --messages 2000 --builds 50 --warmup 5   # smoke run

Results are printed as a table and written as JSON to `--json` (default
bench/results/telemetry_bench.json).
"""

from __future__ import annotations

import argparse
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_report import git_revision, percentiles, write_json
from context_bench import agent_ids, chat_ids, human_ids, make_workload, setup_world
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rich.console import Console
from rich.table import Table

from recall import telemetry
from recall.api import Recall, World
from recall.settings import Settings

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "telemetry_bench.json"
BATCH = 1000


def build(world: World, agent: str, chat: str) -> float:
    """One context build, in ms."""
    start = time.perf_counter()
    world.agent(agent).context(chat=chat)
    return (time.perf_counter() - start) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=20_000, help="messages in the world")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--chats", type=int, default=8)
    parser.add_argument("--builds", type=int, default=500, help="timed builds with tracing off, and as many on")
    parser.add_argument("--warmup", type=int, default=50, help="untimed builds first (each way)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if min(args.messages, args.agents, args.chats, args.builds) < 1 or args.warmup < 0:
        parser.error("--messages, --agents, --chats and --builds must be at least 1")

    console = Console() if sys.stdout.isatty() else Console(width=120)
    rng = random.Random(args.seed)
    agents, humans, chats = agent_ids(args.agents), human_ids(3), chat_ids(args.chats)
    workload = make_workload(args.messages, agents, humans, chats, rng)
    pairs = [(rng.choice(agents), rng.choice(chats)) for _ in range(args.warmup + args.builds)]

    # (Importing the SDK imported the API: "off" is the API's no-op, as in a server without OTEL_*.)
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)

    tmpdir = tempfile.mkdtemp(prefix="recall-bench-")
    samples: dict[str, list[float]] = {"off": [], "on": []}
    spans = 0
    try:
        # Indexing on demand only: a background indexer would compete with the timed builds.
        settings = replace(Settings.from_env(), embeddings="none", index_interval=0)
        with Recall(Path(tmpdir) / "bench.db", settings) as mem:
            world = setup_world(mem, "bench", agents, humans)
            for start in range(0, len(workload.requests), BATCH):
                world.post_many(workload.requests[start : start + BATCH])
            mem.refresh_index()
            for n, (agent, chat) in enumerate(pairs):
                order = ("off", "on") if n % 2 == 0 else ("on", "off")
                for mode in order:
                    if mode == "on":
                        telemetry.use_providers(tracer_provider, meter_provider)
                    else:
                        telemetry.use_providers()
                    took = build(world, agent, chat)
                    if n >= args.warmup:
                        samples[mode].append(took)
                if n % 50 == 0:  # the exporter keeps what it got: counted, then let go
                    tracer_provider.force_flush()
                    spans += len(exporter.get_finished_spans())
                    exporter.clear()
            telemetry.use_providers()
            tracer_provider.force_flush()
            spans += len(exporter.get_finished_spans())
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()
        shutil.rmtree(tmpdir, ignore_errors=True)

    off, on = percentiles(samples["off"]), percentiles(samples["on"])
    results: dict[str, Any] = {
        "commit": git_revision(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "messages": args.messages,
        "agents": args.agents,
        "chats": args.chats,
        "builds": args.builds,
        "context_ms": {"off": off, "on": on},
        "ratio": {"p50": on["p50"] / off["p50"], "p95": on["p95"] / off["p95"]},
        "spans_per_build": spans / (args.warmup + args.builds),
    }
    print_results(console, results)
    write_json(args.json, results)
    console.print(f"written to {args.json}")
    return 0


def print_results(console: Console, r: dict[str, Any]) -> None:
    table = Table(
        title=f"Context builds, tracing off vs on ({r['messages']:,} messages, {r['builds']} builds each, one run)"
    )
    for column in ("tracing", "p50 ms", "p95 ms", "p99 ms", "mean ms"):
        table.add_column(column, justify="right" if column != "tracing" else "left")
    for mode, what in (("off", "off (API, no SDK)"), ("on", "on (SDK, batch export)")):
        t = r["context_ms"][mode]
        table.add_row(what, *(f"{t[k]:.2f}" for k in ("p50", "p95", "p99", "mean")))
    console.print(table)
    console.print(
        f"on/off: p50 x{r['ratio']['p50']:.3f}, p95 x{r['ratio']['p95']:.3f}; "
        f"{r['spans_per_build']:.1f} spans per build (with tracing on)"
    )


if __name__ == "__main__":
    raise SystemExit(main())

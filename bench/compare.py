"""Old against new, side by side in one run: a benchmark script run for two source trees in
turn (old, new, old, new, ...), so a busy machine slows both alike; medians and new/old ratios.

Each run is a fresh interpreter running that tree's own copy of the script, with the tree's
`src` first on PYTHONPATH, writing its JSON to a temporary file; the metrics named below are
read from it.

Run
---
    git worktree add /tmp/old <commit before the change>
    make -C /tmp/old .venv/.installed      # its own virtualenv: its `recall` command is its own
    .venv/bin/python bench/compare.py /tmp/old . --bench context --rounds 3 -- --messages 100000
    .venv/bin/python bench/compare.py /tmp/old . --bench server --rounds 3 -- --quick
    .venv/bin/python bench/compare.py /tmp/old . --bench crowd --same-script --rounds 3
    .venv/bin/python bench/compare.py /tmp/old . --bench long --same-script -- BEAM_JSON --reuse /tmp/long-{tree}.db

Anything after `--` goes to the benchmark script; `{tree}` in it becomes `old` or `new` (for a
store each tree keeps for itself, e.g. `--reuse /tmp/{tree}.db`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_report import write_json

#: For each benchmark: its script and the metrics compared, as (label, JSON path, higher is better).
BENCHES: dict[str, tuple[str, list[tuple[str, str, bool]]]] = {
    "context": (
        "context_bench.py",
        [
            ("batched ingest msgs/s", "ingest.batched_msgs_per_s", True),
            ("one-by-one ingest msgs/s", "ingest.one_by_one_msgs_per_s", True),
            ("context build p50 ms", "context_build_ms.p50", False),
            ("context build p95 ms", "context_build_ms.p95", False),
            ("context build (history 100) p95 ms", "context_build_ms_history_100.p95", False),
        ],
    ),
    "long": (
        "long_context_bench.py",
        [("context build p50 ms", "build_ms.p50", False), ("context build p95 ms", "build_ms.p95", False)],
    ),
    "embed": (
        "embed_bench.py",
        [
            ("texts/s (batches of 64)", "texts_per_s", True),
            ("single query p50 ms", "query_ms.p50", False),
            ("single query p95 ms", "query_ms.p95", False),
        ],
    ),
    "search": (
        "search_bench.py",
        [
            (f"{method} {where} p{q} ms", f"search[method={method},filter={where}].p{q}_ms", False)
            for method in ("bm25", "vector", "hybrid")
            for where in ("none", "chat", "since")
            for q in (50, 95)
        ],
    ),
    "server": (
        "server_bench.py",
        [
            ("posts/s (best concurrency)", "posts[*].posts_per_s", True),
            ("server CPU ms per post (least)", "post_server_cpu_ms", False),
            ("context p50 ms", "context.latency_ms.p50", False),
            ("context p95 ms", "context.latency_ms.p95", False),
            ("broadcast wake p50 ms", "broadcast.latency_ms.p50", False),
            ("broadcast wake p99 ms", "broadcast.latency_ms.p99", False),
            ("broadcast last waiter max ms", "broadcast.last_waiter_ms.max", False),
            ("server CPU ms per woken waiter", "broadcast.server_cpu_ms_per_woken", False),
            ("targeted wake p50 ms", "targeted.latency_ms.p50", False),
            ("targeted wake p99 ms", "targeted.latency_ms.p99", False),
        ],
    ),
    "crowd": (
        "crowd_bench.py",
        [
            (f"{store} {op} p50 ms, {agents} agents", f"stores.{store}.{agents}.ops_ms.{op}.p50", False)
            for store in ("sqlite", "postgres")
            for agents in (1000, 10000)
            for op in ("post", "inbox + ack", "context", "delete_message", "delete_agent", "export", "delete world")
        ],
    ),
}


def pick(results: Any, path: str) -> float | None:
    """The number at a dotted path; `name[*].field` takes the best of a list (max), and
    `name[key=value,...].field` the first item of a list whose keys have those values."""
    node = results
    for part in path.split("."):
        if part.endswith("]") and "[" in part and not part.endswith("[*]"):
            name, _, wanted = part[:-1].partition("[")
            conditions = dict(pair.split("=", 1) for pair in wanted.split(","))
            items = node.get(name, []) if isinstance(node, dict) else []
            node = next((i for i in items if all(str(i.get(k)) == v for k, v in conditions.items())), None)
            continue
        if part.endswith("[*]"):
            items = node.get(part[:-3], []) if isinstance(node, dict) else []
            rest = path.split(part + ".", 1)[1]
            values = [v for v in (pick(item, rest) for item in items) if v is not None]
            return max(values) if values else None
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return float(node) if isinstance(node, (int, float)) else None


def python_of(tree: Path) -> Path:
    """The tree's own virtualenv when it has one (`make` in that tree makes it): a benchmark that
    starts `recall` as a command needs the entry point of that tree's package, not this one's."""
    own = tree / ".venv" / "bin" / "python"
    return own if own.exists() else Path(sys.executable)


def run_once(tree: Path, script: Path, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="recall-compare-") as tmp:
        out = Path(tmp) / "results.json"
        env = {**os.environ, "PYTHONPATH": str(tree / "src")}
        command = [str(python_of(tree)), str(script), *extra, "--json", str(out)]
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        return dict(json.loads(out.read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="the old source tree (a checkout holding src/ and bench/)")
    parser.add_argument("new", type=Path, help="the new source tree")
    parser.add_argument("--bench", choices=sorted(BENCHES), required=True)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tree, interleaved")
    parser.add_argument("--json", type=Path, default=None, help="where to write the results")
    parser.add_argument(
        "--same-script",
        action="store_true",
        help="run the new tree's benchmark script against both trees (for a script that reaches recall"
        " only as a command or over HTTP, so both are measured by the same client)",
    )
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    script, metrics = BENCHES[args.bench]
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    samples: dict[str, dict[str, list[float]]] = {name: {label: [] for label, _, _ in metrics} for name in trees}
    for round_no in range(args.rounds):
        for name, tree in trees.items():
            print(f"round {round_no + 1}/{args.rounds}: {name} ({tree})", file=sys.stderr, flush=True)
            bench_tree = trees["new"] if args.same_script else tree
            results = run_once(tree, bench_tree / "bench" / script, [a.replace("{tree}", name) for a in extra])
            for label, path, _ in metrics:
                value = pick(results, path)
                if value is not None:
                    samples[name][label].append(value)
    rows = []
    print(f"{'metric':40} {'old':>10} {'new':>10} {'new/old':>8}  better")
    for label, _, higher in metrics:
        old, new = samples["old"][label], samples["new"][label]
        if not old or not new:
            continue
        o, n = statistics.median(old), statistics.median(new)
        ratio = n / o if o else float("nan")
        better = "new" if (n > o) == higher and n != o else ("same" if n == o else "old")
        print(f"{label:40} {o:10.2f} {n:10.2f} {ratio:8.3f}  {better}")
        rows.append({"metric": label, "old": old, "new": new, "old_median": o, "new_median": n, "ratio": ratio})
    out = args.json or Path(__file__).parent / "results" / f"compare_{args.bench}.json"
    write_json(
        out, {"bench": args.bench, "rounds": args.rounds, "trees": {k: str(v) for k, v in trees.items()}, "rows": rows}
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

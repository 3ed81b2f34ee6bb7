"""Benchmark: how long `Recall.close()` waits while the background indexer embeds long replies,
for one or more source trees side by side (runs interleaved, so a busy machine slows every tree
alike).

Each run is a fresh interpreter with the tree first on PYTHONPATH: a store on a temporary SQLite
file, one world, `--messages` long replies (`--chars` characters each, as a model writes them)
imported at once, then, once the indexer is under way (`--wait` seconds), `close()` timed. Before
issue 45 the indexer stopped only between rounds, and a round of long texts' passages ran the
model for up to 256 passages first; now it stops between runs of the model.

Run
---
    .venv/bin/python bench/close_bench.py OLD_TREE/src NEW_TREE/src --runs 3 --json out.json

(e.g. a `git worktree` of the commit before the change as OLD_TREE).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PROBE = """
import json, os, sys, tempfile, time
from recall import Recall, Settings
from recall.app.posting import PostRequest

messages, chars, wait = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
words = "the deployment checklist was reviewed line by line and the parcel left the depot".split()
with tempfile.TemporaryDirectory() as folder:
    mem = Recall(os.path.join(folder, "bench.db"), Settings())
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("desk")
    texts = [" ".join(words[(n + i) % len(words)] for i in range(chars // 6)) for n in range(messages)]
    world.import_messages([PostRequest("desk", f"Reply {n}: {text}") for n, text in enumerate(texts)])
    time.sleep(wait)  # the indexer copies the messages and starts embedding their passages
    start = time.perf_counter()
    mem.close()
    print(json.dumps({"close_s": time.perf_counter() - start}))
"""


def measure(tree: str, messages: int, chars: int, wait: float) -> float:
    """Seconds one `close()` took in a fresh interpreter on `tree`."""
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(messages), str(chars), str(wait)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1])["close_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="source trees (their src/ folders) to compare")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=12)
    parser.add_argument("--chars", type=int, default=99_000)
    parser.add_argument("--wait", type=float, default=3.0)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    times: dict[str, list[float]] = {tree: [] for tree in args.trees}
    for _ in range(args.runs):
        for tree in args.trees:  # interleaved
            times[tree].append(measure(tree, args.messages, args.chars, args.wait))
    print(f"close() with {args.messages} replies of {args.chars:,} characters being embedded")
    print(f"{'tree':<40} {'median s':>9} {'max s':>7}")
    for tree, values in times.items():
        print(f"{tree:<40} {statistics.median(values):>9.2f} {max(values):>7.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"runs": times, "messages": args.messages, "chars": args.chars}, out, indent=2)


if __name__ == "__main__":
    main()

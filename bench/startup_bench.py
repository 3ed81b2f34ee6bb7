"""Benchmark: how long `recall --help` and `import recall` take to start, for one or more source
trees side by side (runs interleaved, so a busy machine slows every tree alike).

Each run is a fresh interpreter with the tree first on PYTHONPATH; reported are the median wall
time and the median CPU time (user + system) of the child, which a loaded machine inflates less.

Run
---
    .venv/bin/python bench/startup_bench.py OLD_TREE/src NEW_TREE/src --runs 9

(e.g. a `git worktree` of the commit before the change as OLD_TREE).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

PROGRAMS = {
    "recall --help": "import sys\nsys.argv = ['recall', '--help']\nfrom recall.cli import app\napp()",
    "import recall": "import recall",
    "python -c pass": "pass",
}


def measure(tree: str, code: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh interpreter running `code`."""
    env = {**os.environ, "PYTHONPATH": tree}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="source folders to put first on PYTHONPATH")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    for name, code in PROGRAMS.items():
        results: dict[str, list[tuple[float, float]]] = {tree: [] for tree in args.trees}
        for tree in args.trees:
            measure(tree, code)  # warm the file cache and the .pyc files
        for _ in range(args.runs):
            for tree in args.trees:
                results[tree].append(measure(tree, code))
        for tree, runs in results.items():
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"{name:16} {tree:40} wall {wall:5.2f} s   cpu {cpu:5.2f} s   ({args.runs} runs)")


if __name__ == "__main__":
    main()

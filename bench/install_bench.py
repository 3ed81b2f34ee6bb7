"""Benchmark: what `pip install recall-memory` costs, the core and each extra, for one or more
source trees side by side: the installed size, the number of distributions and the install time,
with the largest distributions named.

Each tree's wheel is built (no build isolation) and its runtime dependencies (its pyproject's
[project] dependencies and every extra's but dev's) are gathered into a wheelhouse of its own
first, as the Makefile's `wheelhouse` target does; then every round installs each tree's wheel,
plain and with each extra asked for, into a fresh virtualenv from its wheelhouse with
`--no-index`, interleaved, so the time measures pip's work and not the network, and a busy
machine slows every tree alike. A tree without an extra installs its core for it.

Run
---
    .venv/bin/python bench/install_bench.py OLD_TREE NEW_TREE --rounds 3 --json install.json
    .venv/bin/python bench/install_bench.py . --installs core,server,postgres,models,all --rounds 1

(e.g. a `git worktree` of the commit before the change as OLD_TREE). Gathering a wheelhouse reads
pip's cache and fetches what is missing from the package index.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

#: How many of the largest distributions each tree's table names.
LARGEST = 6


def run(*command: str | Path) -> str:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, check=True).stdout


def prepare(tree: Path, work: Path) -> tuple[Path, Path]:
    """(the tree's wheel, a wheelhouse of its runtime dependencies)."""
    dist, wheelhouse = work / "dist", work / "wheelhouse"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dist, tree)
    project = tomllib.loads((tree / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    requirements = [
        *project["dependencies"],
        *(r for name, reqs in extras.items() if name not in ("dev", "all") for r in reqs),
    ]
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "-w", wheelhouse, *requirements)
    return next(dist.glob("*.whl")), wheelhouse


def install(wheel: Path, wheelhouse: Path, venv: Path, extra: str) -> tuple[float, dict[str, int]]:
    """Seconds pip took to install the wheel with `extra` ("core": none), and each installed
    distribution's size in bytes (pip itself excluded)."""
    run(sys.executable, "-m", "venv", "--clear", venv)
    python = venv / "bin" / "python"
    start = time.perf_counter()
    run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index", "--find-links",
        wheelhouse, wheel if extra == "core" else f"{wheel}[{extra}]")  # fmt: skip
    seconds = time.perf_counter() - start
    sizes = json.loads(run(python, "-c", SIZES))
    return seconds, {name: size for name, size in sizes.items() if name != "pip"}


#: Run in the fresh virtualenv: each distribution's files' total size.
SIZES = """
import importlib.metadata, json, os
sizes = {}
for d in importlib.metadata.distributions():
    total = 0
    for f in d.files or ():
        path = d.locate_file(f)
        if os.path.isfile(path):
            total += os.path.getsize(path)
    sizes[d.metadata["Name"].lower()] = total
print(json.dumps(sizes))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="checkouts of recall to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--installs", default="core", help="comma-separated: core and extras (server, all, …)")
    parser.add_argument("--json", type=Path, help="where to write the results")
    args = parser.parse_args()
    installs = args.installs.split(",")
    cases = [(tree, extra) for tree in args.trees for extra in installs]
    with tempfile.TemporaryDirectory(prefix="recall-install-") as scratch:
        work = {tree: Path(scratch) / str(i) for i, tree in enumerate(args.trees)}
        built = {tree: prepare(tree.resolve(), work[tree]) for tree in args.trees}
        times: dict[tuple[Path, str], list[float]] = {case: [] for case in cases}
        sizes: dict[tuple[Path, str], dict[str, int]] = {}
        for _ in range(args.rounds):
            for tree, extra in cases:
                seconds, sizes[tree, extra] = install(*built[tree], work[tree] / "venv", extra)
                times[tree, extra].append(seconds)
    results = []
    for tree, extra in cases:
        case = (tree, extra)
        total = sum(sizes[case].values())
        largest = sorted(sizes[case].items(), key=lambda item: -item[1])[:LARGEST]
        results.append(
            {
                "tree": str(tree),
                "install": extra,
                "megabytes": round(total / 1e6, 1),
                "distributions": len(sizes[case]),
                "install_seconds": [round(t, 2) for t in times[case]],
                "install_seconds_median": round(statistics.median(times[case]), 2),
                "largest_megabytes": {name: round(size / 1e6, 1) for name, size in largest},
            }
        )
        print(
            f"{str(tree):30} {extra:9} {total / 1e6:6.0f} MB  {len(sizes[case]):3} distributions  "
            f"install {statistics.median(times[case]):5.1f} s (median of {args.rounds})"
        )
        print("    largest: " + ", ".join(f"{name} {size / 1e6:.0f} MB" for name, size in largest))
    if len(args.trees) > 1:
        first, last = results[0], results[len(installs) * (len(args.trees) - 1)]
        print(
            f"last ÷ first ({installs[0]}): size {last['megabytes'] / first['megabytes']:.2f}, "
            f"install time {last['install_seconds_median'] / first['install_seconds_median']:.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""What every benchmark script reports the same way: latency percentiles, the commit measured,
and the JSON file of results. (The scripts run as `python bench/NAME.py`, so this module is
importable beside them.)"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50, p95 and p99 (interpolated between ranks), mean, max and the count; {} for none."""
    if not samples_ms:
        return {}
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        pos = (len(ordered) - 1) * q
        low = int(pos)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)

    return {
        "p50": pick(0.50),
        "p95": pick(0.95),
        "p99": pick(0.99),
        "mean": statistics.fmean(ordered),
        "max": ordered[-1],
        "n": float(len(ordered)),
    }


def timed_calls(call: Callable[[], Any], runs: int, warmup: int = 0) -> dict[str, float]:
    """`percentiles` of `runs` calls, in ms, after `warmup` untimed ones (caches, the tokenizer)."""
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return percentiles(samples)


def git_revision() -> str | None:
    """The commit of the checkout this file is in, with `-dirty` if `src` has changes; None
    outside git."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "src"], capture_output=True, text=True
        )
    except OSError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def write_json(path: Path, report: Mapping[str, Any]) -> None:
    """Write `report` as indented JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

"""bench/long_messages_bench.py in a smoke run: both worlds are built and timed at each budget,
each context within its budget."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.scripts import load_bench_script

long_messages_bench = load_bench_script("long_messages_bench")


def test_both_worlds_are_timed_at_each_budget(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "long.json"
    args = ["--messages", "6", "--chars", "20000", "--budgets", "2000,none", "--runs", "1", "--json", str(out)]
    assert long_messages_bench.main(args) == 0
    found = json.loads(out.read_text())["builds"]
    assert set(found) == {"6 × 20,000 chars", "6 × 500 chars"}
    for by_budget in found.values():
        assert set(by_budget) == {"2000", "window"}
        assert all(b["first_ms"] > 0 and b["next"]["p50"] > 0 for b in by_budget.values())
    # Six messages of 20,000 characters do not fit 2,000 tokens whole: the context holds parts of them.
    assert 0 < found["6 × 20,000 chars"]["2000"]["tokens"] <= 2000
    assert "One context's build" in capsys.readouterr().out  # type: ignore[attr-defined]

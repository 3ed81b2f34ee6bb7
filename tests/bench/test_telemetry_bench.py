"""bench/telemetry_bench.py in a smoke run: both ways are timed on the same builds, and with
tracing on each build is a span with its phases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.scripts import load_bench_script

telemetry_bench = load_bench_script("telemetry_bench")


def test_builds_are_timed_with_tracing_off_and_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "telemetry.json"
    argv = ["--messages", "300", "--agents", "3", "--chats", "2", "--builds", "10", "--warmup", "2"]
    assert telemetry_bench.main([*argv, "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["context_ms"]["off"]["n"] == results["context_ms"]["on"]["n"] == 10
    assert results["ratio"]["p95"] == results["context_ms"]["on"]["p95"] / results["context_ms"]["off"]["p95"]
    # The build, its scan, search and packing, and ranking when older history competes.
    assert 4 <= results["spans_per_build"] <= 5
    assert "tracing off vs on" in capsys.readouterr().out

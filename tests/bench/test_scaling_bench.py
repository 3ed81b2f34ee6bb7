"""bench/scaling_bench.py at two small sizes on SQLite: every public operation is timed at each
size and its growth is reported."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.scripts import load_bench_script

scaling_bench = load_bench_script("scaling_bench")


def test_every_operation_is_timed_at_each_size(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "scaling.json"
    code = scaling_bench.main(["--sizes", "100,200", "--reps", "2", "--stores", "sqlite", "--json", str(out)])
    assert code == 0
    sizes = json.loads(out.read_text())["stores"]["sqlite"]
    assert set(sizes) == {"100", "200"}
    wanted = {"post", "post_many (100)", "context", "search", "inbox + ack", "RecallStore.get", "RecallStore.put"}
    wanted |= {"RecallStore.search", "RecallSession.get_items(20)", "LangChain messages (20)", "delete_message"}
    for timings in sizes.values():
        assert wanted | {"export"} == set(timings)
        assert all(t["p50"] > 0 for t in timings.values())
    printed = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "growth" in printed and "reads the whole world" in printed

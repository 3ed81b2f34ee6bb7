"""bench/server_bench.py at a small size: the real server answers the posts, the context
requests and the long polls of raw connections, every waiter wakes, and the report holds the
wake-up targets and the server's CPU per woken waiter."""

from __future__ import annotations

import gc
import json
from pathlib import Path

from tests.bench.scripts import load_bench_script

server_bench = load_bench_script("server_bench")


def test_a_small_run_wakes_every_waiter(tmp_path: Path) -> None:
    assert gc.isenabled()
    out = tmp_path / "server.json"
    args = ["--posts", "20", "--concurrency", "2", "--context-messages", "40", "--builds", "3", "--waiters", "12"]
    args += ["--rounds", "2", "--targeted-rounds", "3", "--embeddings", "none", "--json", str(out)]
    assert server_bench.main(args) == 0
    result = json.loads(out.read_text())
    broadcast, targeted = result["broadcast"], result["targeted"]
    assert broadcast["missing"] == [] and all(r["missing"] == 0 for r in broadcast["per_round"])
    assert broadcast["latency_ms"]["n"] == 24
    # CPU time is counted in the kernel's ticks: a run this small may see none.
    assert isinstance(broadcast["server_cpu_ms_per_woken"], float) and broadcast["server_cpu_ms_per_woken"] >= 0
    assert targeted["target_missed"] == 0 and targeted["woke_wrongly"] == [] and targeted["gauge_ok"]
    assert result["server_errors"] == 0 and result["config"]["poll_client"] == "raw"
    assert set(result["targets"]) >= {"wake_p99_ms", "broadcast_last_ms"}
    # The client's collector was quiet while the polls waited, and is as it was again.
    assert result["config"]["client_gc"] == "serving" and result["client_collections_while_waiting"] == 0
    assert gc.isenabled()

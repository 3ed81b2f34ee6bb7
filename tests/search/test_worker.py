"""The search index worker process: indexes what other processes store, stops on SIGTERM, and
ends with its parent even when the parent is killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recall import Recall, Settings
from recall.search.worker import start_worker_process, stop_worker_process
from recall.store.sqlite import SQLiteStore
from tests.processes import gone

MANUAL = Settings(index_interval=0)


def _world(path: Path) -> Recall:
    mem = Recall(path, MANUAL)
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("bot")
    world.post("maria", "The espresso machine on floor 3 is leaking water.")
    world.post("maria", "Quarterly taxes are due next Friday.")
    return mem


def _embedded(mem: Recall) -> tuple[int, int]:
    store = mem.service.store
    assert isinstance(store, SQLiteStore)
    total, done = store._read("SELECT COUNT(*), COALESCE(SUM(embedded), 0) FROM search_items")[0]
    return int(total), int(done)


def test_a_worker_indexes_what_another_process_stored_and_stops_on_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.db"
    mem = _world(path)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    worker = start_worker_process(str(path))
    try:
        deadline = time.monotonic() + 60
        while _embedded(mem) != (2, 2):
            assert worker.poll() is None, "the worker died"
            assert time.monotonic() < deadline, f"not indexed in time: {_embedded(mem)}"
            time.sleep(0.1)
        # One BLAS thread, so the worker leaves a core to the server; a user's own setting wins.
        environ = dict(
            item.split("=", 1) for item in Path(f"/proc/{worker.pid}/environ").read_text().split("\0") if "=" in item
        )
        assert environ["OPENBLAS_NUM_THREADS"] == "1" and environ["OMP_NUM_THREADS"] == "3"
        hits = mem.world("w").search("coffee maker broken", k=1, method="vector")
        assert hits[0].text.startswith("maria: The espresso machine")
    finally:
        stop_worker_process(worker)
        mem.close()
    assert worker.returncode == 0  # SIGTERM is a clean stop, not a crash


def test_a_worker_ends_with_its_parent_killed_by_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    _world(path).close()
    parent = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from recall.search.worker import start_worker_process;"
         f" p = start_worker_process({str(path)!r}); print(p.pid, flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert parent.stdout is not None
    worker_pid = int(parent.stdout.readline())
    assert not gone(worker_pid)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 15
    while not gone(worker_pid):
        assert time.monotonic() < deadline, "the worker outlived its parent"
        time.sleep(0.05)


def test_index_once_from_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    _world(path).close()
    recall = str(Path(sys.executable).with_name("recall"))
    done = subprocess.run([recall, "--db", str(path), "index", "--once"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "indexed: 4 steps" in done.stderr  # 2 messages copied, 2 vectors stored
    with Recall(path, MANUAL) as mem:
        assert _embedded(mem) == (2, 2)

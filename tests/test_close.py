"""`Recall.close()` ends every thread the `Recall` started (the background indexer, the extraction
worker, the PostgreSQL pool's workers) before it closes the store, so nothing runs on against a
closed store; closing twice is harmless. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from recall import Recall, Settings
from recall.app.posting import PostRequest
from recall.llm.scripted_server import ModelServer
from tests.llm.model_server import model_server_fixture  # noqa: F401  (the model_server fixture)

EXTRACTED = json.dumps({"new_facts": [{"content": "Lives in Lisbon", "category": "context", "confidence": 0.95}]})


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The SQLite file or the PostgreSQL URL of the test's store."""
    if request.param == "sqlite":
        return str(tmp_path / "r.db")
    return str(request.getfixturevalue("postgres_url"))


def started_since(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads alive now that were not before, but the model server's request handlers (the
    stand-in for a remote model: not recall's)."""
    return [
        t
        for t in threading.enumerate()
        if t not in before and t.is_alive() and not t.name.endswith("(process_request_thread)")
    ]


def model_settings(server: ModelServer, **overrides: object) -> Settings:
    base = Settings(
        llm_provider="openai",
        llm_model="test-model",
        llm_base_url=server.openai_url,
        extraction_debounce=0.0,
        index_interval=0.05,
        embeddings="none",
    )
    return base.__class__(**{**base.__dict__, **overrides})  # type: ignore[arg-type]


def start_an_extraction(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("helper")
    world.post("maria", "Hi! I just moved to Lisbon.")
    world.post("helper", "Welcome to Lisbon, Maria!")
    assert world.agent("helper").extract()["queued"]


def test_close_ends_every_thread_the_recall_started(db: str, model_server: ModelServer) -> None:
    model_server.script(EXTRACTED)
    before = set(threading.enumerate())
    mem = Recall(db, model_settings(model_server))
    start_an_extraction(mem)
    model_server.wait_for_requests(1, timeout=30)  # the extraction worker is running
    assert {"recall-indexer", "recall-extraction"} <= {t.name for t in started_since(before)}
    mem.close()
    assert started_since(before) == []
    mem.close()  # twice: harmless


def test_close_waits_for_an_extraction_under_way(
    db: str, model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The model answers only after close() was called (and later than any fixed wait for it):
    the worker still stores its facts, then ends, and only then does the store close."""
    answer = threading.Event()
    model_server.responder = lambda path, body: EXTRACTED if answer.wait(60) else 500
    caplog.set_level(logging.WARNING, logger="recall")
    before = set(threading.enumerate())
    mem = Recall(db, model_settings(model_server))
    start_an_extraction(mem)
    model_server.wait_for_requests(1, timeout=30)  # the model call is under way
    closer = threading.Thread(target=mem.close)
    closer.start()
    closer.join(6.0)  # longer than any bounded wait a close() might give its threads
    assert closer.is_alive(), "close() returned while the extraction worker was still running"
    answer.set()
    closer.join(30)
    assert not closer.is_alive()
    assert started_since(before) == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    with Recall(db, Settings(index_interval=0, embeddings="none")) as reopened:
        assert [f.content for f in reopened.scope("user:maria").list()] == ["Lives in Lisbon"]


def test_closing_while_the_indexer_embeds_logs_no_error(db: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="recall")
    before = set(threading.enumerate())
    mem = Recall(db, Settings(index_interval=0.05, embed_batch=16))
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("helper")
    for day in range(10):
        world.post_many([_note(day, n) for n in range(40)])
    index = mem.service.index
    assert index is not None
    deadline = time.monotonic() + 60
    while index.pending() >= 400:  # wait for the indexer to be under way: copying done, embedding
        assert time.monotonic() < deadline, "the indexer never started"
        time.sleep(0.01)
    mem.close()
    assert started_since(before) == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    # What it did not get to is still pending, and is picked up on the next open.
    with Recall(db, Settings(index_interval=0)) as reopened:
        reopened.refresh_index()
        assert reopened.service.index is not None
        assert reopened.service.index.pending() == 0


def _note(day: int, n: int) -> PostRequest:
    return PostRequest("maria", f"Day {day}, note {n}: the delivery of crate {n} to dock {day} is late again.")


def readme_snippet() -> str:
    """The README's first Python snippet: what a new user saves as a script and runs."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    return readme.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.starts_first
def test_a_script_that_never_closes_its_recall_exits_cleanly(tmp_path: Path) -> None:
    """The README's snippet never calls close(): at interpreter exit the indexer, which may be
    inside the embedding runtime, is stopped first (it used to abort the process, exit 134,
    'terminate called without an active exception', in 4 runs of 10)."""
    script = tmp_path / "tour.py"
    script.write_text(readme_snippet(), encoding="utf-8")
    assert "Recall(" in script.read_text() and "close()" not in script.read_text()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALL_")}
    for run in range(20):
        store = tmp_path / str(run)
        store.mkdir()
        done = subprocess.run(
            [sys.executable, str(script)], cwd=store, env=env, capture_output=True, text=True, timeout=120
        )
        assert (done.returncode, done.stderr) == (0, ""), f"run {run}"
        assert (store / "recall.db").is_file()

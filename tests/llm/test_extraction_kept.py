"""A queued fact extraction outlives the `Recall` that queued it: closing keeps it in the store
(and warns how many), the next `Recall` opened with a chat model queues it again and runs it,
on SQLite and PostgreSQL. A real local model server answers (recall.llm.scripted_server)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from recall import Recall, Settings
from recall.llm.scripted_server import ModelServer
from tests.llm.model_server import model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.old_stores import store_before
from tests.worlds import query

EXTRACTED = json.dumps({"new_facts": [{"content": "Lives in Lisbon", "category": "context", "confidence": 0.95}]})
NO_MODEL = Settings(index_interval=0, embeddings="none")


def with_model(server: ModelServer, debounce: float = 3600.0) -> Settings:
    return Settings(
        llm_provider="openai",
        llm_model="test-model",
        llm_base_url=server.openai_url,
        extraction_debounce=debounce,
        index_interval=0,
        embeddings="none",
    )


def queue_one(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("helper")
    world.post("maria", "Hi! I just moved to Lisbon.")
    world.post("helper", "Welcome to Lisbon, Maria!")
    assert world.agent("helper").extract()["queued"]


def facts(mem: Recall) -> list[str]:
    return [f.content for f in mem.scope("user:maria").list()]


def kept(location: str) -> int:
    return int(query(location, "SELECT COUNT(*) FROM extraction_jobs")[0][0])


def test_a_queued_extraction_is_kept_at_close_and_runs_after_the_next_open(
    store_location: str, model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="recall.extraction")
    with Recall(store_location, with_model(model_server)) as mem:
        queue_one(mem)
    assert model_server.requests == []  # closing ran nothing
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith("1 queued fact extraction(s) not run yet are kept")
    assert kept(store_location) == 1

    with Recall(store_location, NO_MODEL) as mem:  # no model: nothing to run it with, it stays
        assert mem.flush_extraction() == 0
    assert kept(store_location) == 1

    model_server.script(EXTRACTED)
    caplog.clear()
    with Recall(store_location, with_model(model_server)) as mem:
        assert mem.service.extraction.depth() == 1  # queued again, due after the debounce
        assert mem.flush_extraction() == 1
        assert facts(mem) == ["Lives in Lisbon"]
    assert "Lisbon" in model_server.bodies("/v1/chat/completions")[0]["messages"][-1]["content"]
    assert kept(store_location) == 0
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []  # nothing left to keep

    with Recall(store_location, with_model(model_server)) as mem:  # ran once: not again
        assert mem.flush_extraction() == 0


def test_a_kept_extraction_runs_by_itself_after_the_debounce(store_location: str, model_server: ModelServer) -> None:
    with Recall(store_location, with_model(model_server)) as mem:
        queue_one(mem)
    model_server.script(EXTRACTED)
    with Recall(store_location, with_model(model_server, debounce=0.0)) as mem:
        model_server.wait_for_requests(1, timeout=30)
        deadline = time.monotonic() + 30
        while not facts(mem) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert facts(mem) == ["Lives in Lisbon"]
    assert kept(store_location) == 0


def test_a_newer_request_for_the_thread_replaces_the_kept_one(store_location: str, model_server: ModelServer) -> None:
    with Recall(store_location, with_model(model_server)) as mem:
        queue_one(mem)
        mem.world("w").post("maria", "Also: I am allergic to peanuts.")
        assert mem.world("w").agent("helper").extract()["queued"]
    assert kept(store_location) == 1
    model_server.script(EXTRACTED)
    with Recall(store_location, with_model(model_server)) as mem:
        assert mem.flush_extraction() == 1  # one thread, one model call, with the newest message
    assert "peanuts" in model_server.bodies("/v1/chat/completions")[0]["messages"][-1]["content"]


@pytest.mark.parametrize("deleted", ["world", "agent", "erased human"])
def test_what_was_deleted_is_not_extracted_at_the_next_open(
    store_location: str, model_server: ModelServer, deleted: str
) -> None:
    with Recall(store_location, with_model(model_server)) as mem:
        queue_one(mem)
    with Recall(store_location, NO_MODEL) as mem:  # deleted by a process without a model
        world = mem.world("w")
        if deleted == "world":
            world.delete()
        elif deleted == "agent":
            world.delete_agent("helper")
        else:
            world.delete_human("maria", erase=True)  # its scope user:maria goes
    assert kept(store_location) == 0
    with Recall(store_location, with_model(model_server)) as mem:
        assert mem.flush_extraction() == 0
    assert model_server.requests == []


def test_an_extraction_of_a_killed_process_is_taken_over_once_stale(
    store_location: str, model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process is killed while the model is still answering: its request was neither run
    to the end nor handed back. Another process takes it over once it is long past due."""
    answer = threading.Event()
    model_server.responder = lambda path, body: EXTRACTED if answer.wait(60) else 500
    script = textwrap.dedent(
        f"""
        from recall import Recall, Settings
        mem = Recall({store_location!r}, Settings(llm_provider="openai", llm_model="test-model",
                     llm_base_url={model_server.openai_url!r}, extraction_debounce=0.0, index_interval=0,
                     embeddings="none"))
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("helper")
        world.post("maria", "Hi! I just moved to Lisbon.")
        assert world.agent("helper").extract()["queued"]
        import time
        time.sleep(120)  # killed before this ends
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    try:
        model_server.wait_for_requests(1, timeout=60)  # the child's extraction is under way
    finally:
        child.kill()
        child.wait(30)
    assert kept(store_location) == 1
    answer.set()
    with Recall(store_location, with_model(model_server)) as mem:  # its owner may be alive: left alone
        assert mem.flush_extraction() == 0
    monkeypatch.setattr("recall.app.extraction_journal.STALE_AFTER", 0.0)
    with Recall(store_location, with_model(model_server)) as mem:
        assert mem.flush_extraction() == 1
        assert facts(mem) == ["Lives in Lisbon"]
    assert kept(store_location) == 0


def test_a_store_from_before_the_table_opens_and_keeps_extractions(
    empty_store_location: str, model_server: ModelServer
) -> None:
    """A store at the schema before the table (SQLite 16, PostgreSQL 14) is migrated when opened."""
    store_before(empty_store_location, 16, 14, [])
    with Recall(empty_store_location, with_model(model_server)) as mem:
        queue_one(mem)
    assert kept(empty_store_location) == 1
    model_server.script(EXTRACTED)
    with Recall(empty_store_location, with_model(model_server)) as mem:
        assert mem.flush_extraction() == 1

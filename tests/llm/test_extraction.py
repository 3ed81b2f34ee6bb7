"""Fact extraction end to end: recall's queue calls a real local OpenAI-compatible server
(scripted replies, malformed ones among them) and stores what the rules allow."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recall import Recall, Settings
from recall.app.extraction import ExtractionQueue
from recall.core.models import Message, SenderType
from recall.llm import OpenAICompatibleModel
from tests.core.messages import conversation
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)

CHAT = "/v1/chat/completions"


def answer(
    *facts: tuple[str, str, float], sections: dict[str, str] | None = None, remove: list[int] | None = None
) -> str:
    return json.dumps(
        {
            "sections": sections or {},
            "new_facts": [{"content": c, "category": cat, "confidence": conf} for c, cat, conf in facts],
            "remove_fact_ids": remove or [],
        }
    )


def settings(server: ModelServer, **overrides: object) -> Settings:
    base = Settings(
        llm_provider="openai",
        llm_model="test-model",
        llm_base_url=server.openai_url,
        extraction_debounce=3600.0,  # nothing runs until flushed, unless a test says otherwise
        index_interval=0,
    )
    return base.__class__(**{**base.__dict__, **overrides})  # type: ignore[arg-type]


@pytest.fixture
def mem(tmp_path: Path, model_server: ModelServer) -> Iterator[Recall]:
    with Recall(tmp_path / "recall.db", settings(model_server)) as recall:
        world = recall.world("shop", create=True)
        world.add_human("maria")
        world.add_agent("helper")
        world.post("maria", "Hi! I just moved to Lisbon and I only drink green tea.")
        world.post("helper", "Welcome to Lisbon, Maria! Noted: green tea.")
        yield recall


def test_extract_then_flush_stores_the_facts_and_sections(mem: Recall, model_server: ModelServer) -> None:
    model_server.script(
        answer(("Lives in Lisbon", "context", 0.95), ("Drinks only green tea", "preference", 0.9),
               ("Might own a cat", "knowledge", 0.4), sections={"personal_context": "Recently moved to Lisbon."})
    )  # fmt: skip
    queued = mem.world("shop").agent("helper").extract()
    assert queued == {"queued": True, "scope": "user:maria", "thread": "shop/helper/", "messages": 2}
    assert model_server.requests == []  # debounced: nothing called yet
    assert mem.flush_extraction() == 1

    facts = mem.scope("user:maria")
    assert sorted((f.content, f.category, f.source) for f in facts.list()) == [
        ("Drinks only green tea", "preference", "shop/helper/"),
        ("Lives in Lisbon", "context", "shop/helper/"),
    ]  # the 0.4 fact is below the 0.7 threshold
    assert facts.sections == {"personal_context": "Recently moved to Lisbon."}

    # What the model was sent: the system prompt, and the conversation as data.
    body = model_server.bodies(CHAT)[0]
    assert body["model"] == "test-model" and body["messages"][0]["role"] == "system"
    assert "Lisbon" in body["messages"][-1]["content"] and body.get("response_format") == {"type": "json_object"}

    # The facts reach the next context's memory block, and the search index.
    ctx = mem.world("shop").agent("helper").context()
    assert ctx.openai()[0] == {  # the agent has no system prompt: the memory block leads
        "role": "system",
        "content": "<memory>\nUser Context:\n- Personal: Recently moved to Lisbon.\n\nFacts:\n"
        "- [preference | 0.90] Drinks only green tea\n- [context | 0.95] Lives in Lisbon\n</memory>",
    }
    mem.refresh_index()
    assert mem.search("user:maria", "green tea", kinds=["fact"])[0].text == "Drinks only green tea"


def test_the_newest_snapshot_of_a_thread_wins_and_duplicates_are_skipped(
    mem: Recall, model_server: ModelServer
) -> None:
    world = mem.world("shop")
    mem.scope("user:maria").add("Lives in Lisbon", category="context", confidence=0.9)
    world.agent("helper").extract()
    world.post("maria", "Also: I am allergic to peanuts.")
    world.agent("helper").extract()  # same thread, newer snapshot: one model call
    model_server.script(answer(("lives in  LISBON", "context", 0.99), ("Allergic to peanuts", "knowledge", 0.97)))
    assert mem.flush_extraction() == 1
    sent = model_server.bodies(CHAT)[0]["messages"][-1]["content"]
    assert "peanuts" in sent
    assert sorted(f.content for f in mem.scope("user:maria").list()) == ["Allergic to peanuts", "Lives in Lisbon"]


def test_malformed_answers_and_model_errors_change_nothing(
    mem: Recall, model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    helper = mem.world("shop").agent("helper")
    mem.scope("user:maria").add("Likes tea", confidence=0.9)
    caplog.set_level(logging.WARNING, logger="recall.extraction")
    for reply in ("Sorry, I can't help with that.", '{"new_facts": [ {"content": "broken"', (500, "boom"), 500):
        model_server.script(reply)
        helper.extract()
        assert mem.flush_extraction() == 1
        assert [f.content for f in mem.scope("user:maria").list()] == ["Likes tea"]
    assert len([r for r in caplog.records if "changed nothing" in r.message]) == 4


def test_a_debounced_extraction_runs_by_itself(tmp_path: Path, model_server: ModelServer) -> None:
    with Recall(tmp_path / "r.db", settings(model_server, extraction_debounce=0.2)) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("bot")
        world.post("maria", "My birthday is on 3 May.")
        model_server.script(answer(("Birthday is on 3 May", "knowledge", 0.95)))
        assert world.agent("bot").extract()["queued"]
        model_server.wait_for_requests(1, timeout=10)
        deadline = time.monotonic() + 10
        while not mem.scope("user:maria").list() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [f.content for f in mem.scope("user:maria").list()] == ["Birthday is on 3 May"]


def test_without_a_model_extraction_is_off_and_the_rest_works(tmp_path: Path) -> None:
    with Recall(tmp_path / "r.db", Settings(index_interval=0)) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("bot")
        world.post("maria", "hello")
        result = world.agent("bot").extract()
        assert result["queued"] is False and "no chat model" in result["reason"]
        assert mem.flush_extraction() == 0
        assert world.agent("bot").context().openai()[-1]["content"] == "hello"


def test_extract_needs_a_human_or_a_valid_scope(mem: Recall) -> None:
    world = mem.world("shop")
    assert "no human message" in world.agent("helper").extract(chat="empty")["reason"]
    explicit = world.agent("helper").extract(scope="world:shop")
    assert explicit["scope"] == "world:shop" and explicit["queued"]
    with pytest.raises(Exception, match="scope"):
        world.agent("helper").extract(scope="nonsense")


def test_queue_drops_pending_work_on_close_and_never_raises(model_server: ModelServer) -> None:
    model = OpenAICompatibleModel("test-model", base_url=model_server.openai_url, api_key="k")
    applied: list[object] = []
    messages: list[Message] = conversation(("maria", "I love jazz."))
    assert messages[0].sender_type is SenderType.HUMAN

    def broken_load(tenant: str, scope: str) -> tuple[list[object], dict[str, str]]:
        raise RuntimeError("database gone")

    queue = ExtractionQueue(model, broken_load, lambda t, s, c: applied.append(c), debounce=3600)  # type: ignore[arg-type]
    queue.submit("", "user:maria", "t1", messages)
    assert queue.depth() == 1 and queue.pending() == [("", "user:maria")]
    assert queue.flush() == 0  # the load failed: logged, no model call, nothing applied
    assert applied == [] and model_server.requests == []
    queue.submit("", "user:maria", "t1", messages)
    queue.close()
    assert queue.depth() == 0 and queue.flush() == 0
    queue.submit("", "user:maria", "t2", messages)  # after close: dropped, not raised
    assert queue.depth() == 0

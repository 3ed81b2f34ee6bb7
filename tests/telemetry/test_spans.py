"""Each span recall makes, with its attributes, and the metrics beside them; never the text of
a message or a query (tests/telemetry/conftest.py records them in memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recall import Recall, Settings, World
from recall.core.tokens import REPLY_PRIMING
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)
from tests.llm.test_extraction import answer
from tests.llm.test_extraction import settings as model_settings
from tests.telemetry.conftest import Recorded, all_attribute_values

#: Posted, searched for and extracted from: it must appear in no span and no metric.
MARKER = "zebra-quasar-7731"


def fill(world: World, days: int = 40) -> None:
    """A month of parcel talk in one chat, then a question about it in another."""
    for i in range(days):
        world.post("maria", f"@agent-b note {i}: the parcel {MARKER} went to depot {i} on the north side", chat="old")
        world.post("agent-b", f"Noted, depot {i} has the parcel {MARKER}; I will follow it up tomorrow.", chat="old")
    world.post("maria", f"@agent-b which depot has the parcel {MARKER} now?", chat="new")


def test_a_context_build_is_a_span_whose_children_are_its_phases(world: World, otel: Recorded) -> None:
    fill(world)
    otel.exporter.clear()
    context = world.agent("agent-b").context(chat="new", max_tokens=600)

    root = otel.one("recall.context")
    assert root.parent is None
    children = {s.name: s for s in otel.spans() if s.parent is not None and s.parent.span_id == root.context.span_id}
    assert set(children) == {"recall.context.scan", "recall.context.search", "recall.context.packing"}
    ranking = otel.one("recall.context.ranking")  # ranking the older history against the recalled past
    assert ranking.parent is not None and ranking.parent.span_id == children["recall.context.packing"].context.span_id

    report = context.report
    attributes = dict(root.attributes or {})
    assert attributes["recall.world.id"] == "w" and attributes["recall.agent.id"] == "agent-b"
    assert attributes["recall.chat.id"] == "new"
    assert attributes["recall.context.budget"] == 600 == report.budget
    assert attributes["recall.context.tokens"] == report.total_tokens
    included = [i for i in report.items if i.included]
    assert attributes["recall.context.items.in"] == len(included)
    assert attributes["recall.context.items.in.message"] == sum(1 for i in included if i.kind == "message")
    dropped = {(i.kind, i.id) for i in report.items if not i.included and i.reason in ("over-budget", "outranked")}
    assert attributes["recall.context.dropped_for_budget"] == len(dropped) > 0
    assert attributes["recall.context.items.considered"] == (
        attributes["recall.context.items.in"] + attributes["recall.context.items.out"]
    )
    sections = sum(v for k, v in attributes.items() if k.startswith("recall.context.tokens."))
    assert sections + REPLY_PRIMING == report.total_tokens

    scan = dict(children["recall.context.scan"].attributes or {})
    assert scan["recall.scan.incoming"] == 1 and scan["recall.scan.read"] >= 1
    search = dict(children["recall.context.search"].attributes or {})
    assert search["recall.search.recalled.candidates"] > 0
    ranked = dict(ranking.attributes or {})
    assert ranked["recall.ranking.recalled_candidates"] == search["recall.search.recalled.candidates"]

    points = otel.points()
    assert [p.count for p in points["recall.context.duration"]] == [1]
    assert [p.sum for p in points["recall.context.tokens"]] == [report.total_tokens]
    assert [p.sum for p in points["recall.context.budget"]] == [600]
    assert [p.sum for p in points["recall.context.budget_used"]] == [report.total_tokens / 600]
    assert sum(p.value for p in points["recall.context.dropped"]) == len(dropped)
    assert {p.attributes["recall.item.kind"] for p in points["recall.context.dropped"]} == {"message"}
    assert not [v for v in all_attribute_values(otel) if MARKER in v or "depot" in v]


def test_searches_posts_and_index_batches_are_spans_with_counts_and_no_text(
    mem: Recall, world: World, otel: Recorded
) -> None:
    fill(world, days=12)
    posts = otel.spans("recall.post")
    assert len(posts) == 25
    first = dict(posts[0].attributes or {})
    assert first == {
        "recall.world.id": "w",
        "recall.post.messages": 1,
        "recall.post.recipients": 2,
        "recall.post.mentions": 1,
    }
    results = world.search(f"parcel {MARKER} depot", k=5)
    search = dict(otel.one("recall.search").attributes or {})
    assert search["recall.search.results"] == len(results) == 5
    assert search["recall.search.query_chars"] == len(f"parcel {MARKER} depot")
    assert search["recall.search.kinds"] == "message,memory,fact" and search["recall.search.k"] == 5

    indexer = mem.service.indexer
    assert indexer is not None and indexer.wait_idle(120)
    indexer.stop()  # its last batch's span is ended once the thread is
    batches = [dict(s.attributes or {}) for s in otel.spans("recall.index.batch")]
    assert batches and sum(int(b["recall.index.items"]) for b in batches) >= 25
    assert {b["recall.index.batch"] for b in batches} == {Settings().embed_batch}

    points = otel.points()
    assert sum(p.count for p in points["recall.post.duration"]) == 25
    assert [dict(p.attributes) for p in points["recall.search.duration"]] == [
        {"recall.search.method": "hybrid", "recall.outcome": "ok"}
    ]
    assert sum(p.sum for p in points["recall.index.batch.size"]) == sum(int(b["recall.index.items"]) for b in batches)
    assert not [v for v in all_attribute_values(otel) if MARKER in v or "depot" in v]


def test_a_failed_search_is_a_failed_span_without_the_error_text(world: World, otel: Recorded) -> None:
    with pytest.raises(Exception, match="method"):
        world.search(f"parcel {MARKER}", method=f"nonsense-{MARKER}")
    failed = otel.one("recall.search")
    assert failed.status.status_code.name == "ERROR" and failed.status.description == "InvalidInputError"
    assert dict(failed.attributes or {})["error.type"] == "InvalidInputError" and not failed.events
    assert [dict(p.attributes) for p in otel.points()["recall.search.duration"]] == [
        {"recall.search.method": "invalid", "recall.outcome": "InvalidInputError"}
    ]
    assert not [v for v in all_attribute_values(otel) if MARKER in v]


def test_an_extraction_call_is_a_span_with_the_model(tmp_path: Path, model_server: ModelServer, otel: Recorded) -> None:
    with Recall(tmp_path / "recall.db", model_settings(model_server)) as mem:
        world = mem.world("shop", create=True)
        world.add_human("maria")
        world.add_agent("helper")
        world.post("maria", f"Hi! I moved to Lisbon, my code word is {MARKER}.")
        world.post("helper", "Welcome to Lisbon, Maria!")
        model_server.script(answer((f"Code word {MARKER}", "context", 0.95)))
        world.agent("helper").extract()
        assert mem.flush_extraction() == 1
    extraction = dict(otel.one("recall.extraction").attributes or {})
    assert extraction == {
        "recall.model": "openai:test-model",
        "recall.extraction.messages": 2,
        "recall.extraction.facts_known": 0,
    }
    assert [p.count for p in otel.points()["recall.extraction.duration"]] == [1]
    assert not [v for v in all_attribute_values(otel) if MARKER in v or "Lisbon" in v]

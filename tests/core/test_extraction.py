"""Fact extraction, the pure part: the prompt, the tolerant parser and the spec §4 rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from recall.core.extraction import MESSAGE_CHARS, extraction_messages, usable_messages
from recall.core.extraction_plan import ExtractedFact, ExtractionResult, parse_extraction, plan_changes
from recall.core.facts import Fact
from recall.errors import ExtractionParseError
from tests.core.messages import make_message

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def fact(fact_id: int, content: str, confidence: float = 0.9, minutes: int = 0) -> Fact:
    when = T0 + timedelta(minutes=minutes)
    return Fact(fact_id, "user:maria", content, "knowledge", confidence, when, when)


# -- the prompt ----------------------------------------------------------------------------


def test_only_human_messages_and_final_replies_go_to_the_model() -> None:
    conversation = [
        make_message("maria", "I moved to Lisbon last month.", 1),
        make_message("system", "maintenance tonight", 2),
        make_message("agent-a", "", 3, metadata={"tool_calls": [{"id": "c1"}]}),
        make_message("agent-a", "42", 4, metadata={"tool_result_for": "c1"}),
        make_message("agent-a", "Welcome to Lisbon!", 5),
        make_message("maria", "x" * (MESSAGE_CHARS + 500), 6),
    ]
    assert [m.id for m in usable_messages(conversation)] == [1, 5, 6]
    system, messages = extraction_messages(conversation, [fact(7, "Works as a nurse")], {"top_of_mind": "moving"})
    assert "JSON" in system and len(messages) == 1 and messages[0]["role"] == "user"
    payload = json.loads(messages[0]["content"].split("\n", 1)[1].rsplit("\n\n", 1)[0])
    assert [m["role"] for m in payload["conversation"]] == ["human", "assistant", "human"]
    assert len(payload["conversation"][-1]["content"]) == MESSAGE_CHARS  # each message cut
    assert payload["current_facts"][0] == {"id": 7, "content": "Works as a nurse", "category": "knowledge",
                                           "confidence": 0.9}  # fmt: skip
    assert payload["current_sections"]["top_of_mind"] == "moving"


# -- the parser ----------------------------------------------------------------------------


def test_parser_reads_bare_fenced_and_prose_wrapped_json() -> None:
    bare = '{"sections": {"top_of_mind": "A move"}, "new_facts": [{"content": "Lives in Lisbon", '
    bare += '"category": "context", "confidence": 0.95}], "remove_fact_ids": [3]}'
    for text in (bare, f"```json\n{bare}\n```", f"Sure! Here is the update:\n{bare}\nHope it helps."):
        result = parse_extraction(text)
        assert result.sections == {"top_of_mind": "A move"}
        assert result.new_facts == (ExtractedFact("Lives in Lisbon", "context", 0.95),)
        assert result.remove_fact_ids == (3,)


def test_parser_tolerates_trailing_commas_strings_and_aliases() -> None:
    result = parse_extraction(
        '{"facts": ["Likes tea", {"content": "Has a cat", "confidence": "0.9",},], "remove_ids": ["4"],}'
    )
    assert [f.content for f in result.new_facts] == ["Likes tea", "Has a cat"]
    assert result.new_facts[1].confidence == 0.9
    assert result.remove_fact_ids == (4,)


@pytest.mark.parametrize("answer", ["", "I could not find anything.", "{not json at all", "[1, 2, 3]"])
def test_answers_without_a_json_object_are_an_error(answer: str) -> None:
    with pytest.raises(ExtractionParseError, match="no usable JSON"):
        parse_extraction(answer)


# -- the rules -----------------------------------------------------------------------------


def test_threshold_duplicates_sections_and_removals() -> None:
    current = [fact(1, "Lives in Porto"), fact(2, "Likes tea")]
    result = ExtractionResult(
        sections={"top_of_mind": "Moving house", "work_context": "  ", "hobbies": "chess"},
        new_facts=(
            ExtractedFact("Lives in Lisbon", "context", 0.95),
            ExtractedFact("LIKES   tea", "preference", 0.9),  # duplicate of a kept fact
            ExtractedFact("Might like jazz", "preference", 0.5),  # below the threshold
            ExtractedFact("Lives in Lisbon", "context", 0.99),  # duplicate of a new fact
            ExtractedFact("Talks to plants", "hobby", 0.9),  # no such category
        ),
        remove_fact_ids=(1, 99),
    )
    changes = plan_changes(current, result, min_confidence=0.7, max_facts=100, source="w/bot/")
    assert changes.sections == {"top_of_mind": "Moving house"}  # empty text and unknown names ignored
    assert changes.remove_ids == (1,)
    assert [(f.content, f.source) for f in changes.add] == [("Lives in Lisbon", "w/bot/")]
    reasons = dict(changes.skipped)
    assert "no such fact" in reasons["remove fact 99"]
    assert "duplicate" in reasons["LIKES   tea"] and "below 0.70" in reasons["Might like jazz"]
    assert "category" in reasons["Talks to plants"] and "not a section" in reasons["section hobbies"]


def test_above_max_facts_the_lowest_confidence_go_first() -> None:
    current = [
        fact(1, "old low", 0.75, minutes=0),
        fact(2, "high", 0.99, minutes=1),
        fact(3, "new low", 0.75, minutes=2),
    ]
    result = ExtractionResult(sections={}, new_facts=(ExtractedFact("fresh", "knowledge", 0.8),))
    changes = plan_changes(current, result, min_confidence=0.7, max_facts=2)
    # Four facts for two places: the two at 0.75 go, the older of them first.
    assert changes.remove_ids == (1, 3)
    assert [f.content for f in changes.add] == ["fresh"]


def test_nothing_to_change_is_empty() -> None:
    changes = plan_changes([fact(1, "x")], parse_extraction('{"sections": {}, "new_facts": [], "remove_fact_ids": []}'),
                           min_confidence=0.7, max_facts=100)  # fmt: skip
    assert changes.empty and changes.summary() == "0 added, 0 removed, sections: none"

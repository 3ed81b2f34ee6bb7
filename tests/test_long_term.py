"""Facts, sections and long-term memories through the Python API, and how they reach a context."""

from __future__ import annotations

from pathlib import Path

import pytest

from recall import Recall
from recall.errors import InvalidInputError, UnknownFactError, UnknownMemoryError, UnknownWorldError


@pytest.fixture
def mem(tmp_path: Path) -> Recall:
    m = Recall(tmp_path / "r.db")
    world = m.world("shop", create=True)
    world.add_agent("clerk", system_prompt="You sell bread.")
    world.add_agent("baker")
    world.add_human("maria")
    yield m
    m.close()


def test_fact_crud_in_a_user_scope(mem: Recall) -> None:
    scope = mem.scope("user:Maria")
    assert scope.id == "user:maria"
    tea = scope.add("Likes green tea", category="preference", confidence=0.9)
    bike = scope.add("Cycles to work")
    assert [f.id for f in scope.list()] == [tea.id, bike.id]
    assert scope.get(tea.id).content == "Likes green tea"
    changed = scope.update(tea.id, content="Likes jasmine tea", confidence=0.8)
    assert (changed.content, changed.confidence, changed.category) == ("Likes jasmine tea", 0.8, "preference")
    assert changed.updated_at >= tea.updated_at
    scope.delete(bike.id)
    with pytest.raises(UnknownFactError):
        scope.get(bike.id)
    with pytest.raises(InvalidInputError) as e:
        scope.update(tea.id, confidence=2)
    assert e.value.field == "confidence"
    assert scope.get(tea.id).confidence == 0.8  # the bad update changed nothing
    assert scope.clear() == 1 and scope.list() == []


def test_facts_of_one_scope_are_not_reachable_through_another(mem: Recall) -> None:
    fact = mem.scope("user:maria").add("Secret")
    with pytest.raises(UnknownFactError):
        mem.scope("user:bob").get(fact.id)
    with pytest.raises(UnknownFactError):
        mem.scope("user:bob").delete(fact.id)
    assert mem.scope("user:maria").get(fact.id).content == "Secret"


def test_world_and_agent_scopes_must_exist(mem: Recall) -> None:
    assert mem.world("shop").facts.id == "world:shop"
    assert mem.world("shop").agent("clerk").facts.id == "agent:shop/clerk"
    with pytest.raises(UnknownWorldError):
        mem.scope("world:nowhere")
    with pytest.raises(Exception, match="unknown agent"):
        mem.scope("agent:shop/ghost")


def test_other_tenants_worlds_are_unknown(mem: Recall) -> None:
    mem.service.worlds.create_world("private", tenant="acme")
    with pytest.raises(UnknownWorldError):
        mem.service.facts.scope("world:private", tenant="")
    assert mem.service.facts.scope("world:private", tenant="acme") == "world:private"
    mem.service.facts.add_facts("world:private", [{"content": "acme only"}], tenant="acme")
    with pytest.raises(UnknownWorldError):
        mem.service.facts.list_facts("world:private", tenant="")


def test_sections_merge_and_clear(mem: Recall) -> None:
    scope = mem.scope("user:maria")
    assert scope.set_sections(work_context="Bakery owner", top_of_mind="New oven") == {
        "top_of_mind": "New oven",
        "work_context": "Bakery owner",
    }
    assert scope.set_sections(top_of_mind="") == {"work_context": "Bakery owner"}
    with pytest.raises(InvalidInputError) as e:
        scope.set_sections(mood="happy")
    assert e.value.field == "mood"


def test_export_then_import_round_trips_and_skips_duplicates(mem: Recall) -> None:
    source = mem.scope("user:maria")
    source.add("Likes tea", category="preference", confidence=0.9)
    source.add("Never call before 9", category="correction", avoid="early calls")
    source.set_sections(work_context="Bakery")
    exported = source.export()
    assert exported["format"] == "recall.facts/1" and len(exported["facts"]) == 2

    target = mem.scope("user:mary")
    target.add("LIKES   TEA")
    counts = target.import_facts(exported)
    assert counts == {"added": 1, "skipped": 1, "removed": 0}
    assert target.sections == {"work_context": "Bakery"}
    assert {f.content for f in target.list()} == {"LIKES   TEA", "Never call before 9"}

    counts = target.import_facts(exported, replace=True)
    assert counts == {"added": 2, "skipped": 0, "removed": 2}
    assert sorted(f.content for f in target.list()) == ["Likes tea", "Never call before 9"]
    assert [f.avoid for f in target.list() if f.category == "correction"] == ["early calls"]


def test_a_bad_import_changes_nothing(mem: Recall) -> None:
    scope = mem.scope("user:maria")
    scope.add("keep me")
    with pytest.raises(InvalidInputError) as e:
        scope.import_facts({"facts": [{"content": "fine"}, {"content": "bad", "confidence": -1}]}, replace=True)
    assert e.value.field == "facts[1].confidence"
    assert [f.content for f in scope.list()] == ["keep me"]


def test_memory_block_in_context_with_scores_in_the_report(mem: Recall) -> None:
    world = mem.world("shop")
    mem.scope("user:maria").add("Maria is allergic to walnuts", category="knowledge", confidence=0.9)
    mem.scope("user:maria").add("Maria's dog is called Pip", category="context", confidence=0.95)
    world.facts.add("The shop closes at 6 pm", confidence=1.0)
    world.agent("baker").facts.add("The baker's private recipe uses rye")  # not the clerk's
    mem.scope("user:maria").set_sections(top_of_mind="Ordering a birthday cake")
    world.post("maria", "@clerk does the walnut bread have walnuts? I am allergic", chat="c1")

    ctx = world.agent("clerk").context(chat="c1")
    messages = ctx.openai()
    assert messages[0]["content"] == "You sell bread."
    memory = messages[1]
    assert memory["role"] == "system" and memory["content"].startswith("<memory>\nUser Context:")
    assert "- Current Focus: Ordering a birthday cake" in memory["content"]
    facts_part = memory["content"].split("Facts:\n")[1]
    assert facts_part.index("walnuts") < facts_part.index("Pip")  # similarity beats confidence
    assert "rye" not in memory["content"]
    report = ctx.report.to_dict()
    assert report["sections"]["memory"] > 0
    facts = [i for i in report["items"] if i["kind"] == "fact"]
    assert len(facts) == 3 and all(i["included"] and "score" in i for i in facts)
    assert facts[0]["score"] >= facts[1]["score"] >= facts[2]["score"]


def test_facts_beyond_the_injection_budget_are_reported_not_included(tmp_path: Path) -> None:
    from recall.settings import Settings

    with Recall(tmp_path / "b.db", Settings(max_injection_tokens=60)) as mem:
        world = mem.world("w", create=True)
        world.add_agent("a")
        world.add_human("h")
        for i in range(10):
            mem.scope("user:h").add(f"fact {i} " + "filler " * 10, confidence=0.5 + i / 100)
        world.post("h", "@a hello")
        report = world.agent("a").context().report
        facts = [i for i in report.items if i.kind == "fact"]
        assert len(facts) == 10
        included = [i for i in facts if i.included]
        assert 0 < len(included) < 10
        assert {i.reason for i in facts if not i.included} == {"over-budget"}
        assert report.sections["memory"] <= 60 + 10  # the block, plus the message framing


def test_long_term_memories_shared_and_private(mem: Recall) -> None:
    world = mem.world("shop")
    shared = world.add_memory("Flour delivery comes on Mondays", type="routine", importance=7)
    world.agent("baker").add_memory("Oven 2 runs hot", importance=8)
    world.add_memory("Trivia nobody needs", importance=2)
    assert [n.content for n in world.agent("baker").memories()] == [
        "Oven 2 runs hot",
        "Flour delivery comes on Mondays",
        "Trivia nobody needs",
    ]
    assert [n.id for n in world.agent("clerk").memories(min_importance=5)] == [shared.id]
    with pytest.raises(InvalidInputError) as e:
        world.add_memory("x", importance=11)
    assert e.value.field == "importance"

    world.post("maria", "@clerk when does flour come?")
    text = "\n".join(m["content"] for m in world.agent("clerk").context().openai())
    assert "Relevant context from past interactions:\n- [" in text
    assert "Flour delivery comes on Mondays" in text
    assert "Oven 2" not in text and "Trivia" not in text

    with pytest.raises(UnknownMemoryError):
        world.delete_memory(12345)
    world.delete_memory(shared)
    assert [n.content for n in world.memories()] == ["Trivia nobody needs"]

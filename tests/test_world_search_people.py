"""Issue 44, point 9: a world's search finds the facts of its people, and a misspelt world or
agent id is answered with the ids it is close to (the Python API, on both stores)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recall import Recall, Settings
from recall.app.people_facts import MAX_PEOPLE
from recall.errors import NotFoundError, UnknownParticipantError, UnknownWorldError


def test_world_search_finds_the_facts_of_its_people(open_on_store: Callable[[Settings], Recall]) -> None:
    mem = open_on_store(Settings())
    world = mem.world("support", create=True)
    world.add_agent("triage")
    world.add_human("maria")
    mem.world("sales", create=True).add_human("bob")
    mem.scope("user:maria").add("Drinks only green tea", category="preference")
    mem.scope("user:bob").add("Drinks green tea with honey")  # a person of another world
    mem.scope("agent:support/triage").add("Answers customers in French")
    mem.scope("world:support").add("The shop sells green tea and oolong")
    world.post("maria", "I would like to order some coffee beans")

    for method in ("hybrid", "bm25"):
        hits = world.search("green tea", k=10, method=method)
        facts = {(h.scope, h.text) for h in hits if h.kind == "fact"}
        # Every fact is embedded as it is added, so the agent's unrelated one may follow as a weak
        # hit (a search returns `k` hits however weak); a person of another world's never does.
        assert {
            ("user:maria", "Drinks only green tea"),
            ("world:support", "The shop sells green tea and oolong"),
        } <= facts, method
        assert all(h.scope != "user:bob" for h in hits), method
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # ranked with the rest
        assert all(h.scope is None for h in hits if h.kind != "fact")
    mine = world.search("answers in French", kinds=["fact"], k=3)
    assert ("agent:support/triage", "Answers customers in French") in {(h.scope, h.text) for h in mine}
    # As a dict (REST and MCP answer with it): its kind and whose fact it is.
    maria = next(h for h in world.search("green tea") if h.scope == "user:maria").to_dict()
    assert (maria["kind"], maria["scope"]) == ("fact", "user:maria")
    # An agent's search sees the people's facts too; a filter facts never pass leaves them out.
    assert "user:maria" in {h.scope for h in world.agent("triage").search("green tea")}
    assert all(h.kind != "fact" for h in world.search("green tea", chat="default"))


def test_a_world_of_many_people_searches_those_whose_facts_share_a_word(
    open_on_store: Callable[[Settings], Recall],
) -> None:
    mem = open_on_store(Settings())
    world = mem.world("shop", create=True)
    for i in range(MAX_PEOPLE + 4):
        world.add_human(f"customer-{i}")
        mem.scope(f"user:customer-{i}").add(f"Prefers delivery on day {i}")
    world.add_human("zoe")
    mem.scope("user:zoe").add("Allergic to peanuts")
    found = [(h.scope, h.text) for h in world.search("peanuts allergy", kinds=["fact"], k=3)]
    assert found[0] == ("user:zoe", "Allergic to peanuts")


def test_a_misspelt_world_or_agent_id_names_the_close_ones(open_on_store: Callable[[Settings], Recall]) -> None:
    mem = open_on_store(Settings())
    world = mem.world("support", create=True)
    world.add_agent("triage")
    world.add_agent("billing")
    mem.world("acme-support", create=True, tenant="acme")  # another tenant's: never named to a tenant

    with pytest.raises(UnknownWorldError) as missing:
        mem.world("suport")
    # No tenant named: any tenant's world is what the id may name (the closest first).
    assert "(did you mean 'support' or 'acme-support'?): create it first" in str(missing.value)
    assert missing.value.suggestions == ["support", "acme-support"]
    with pytest.raises(UnknownWorldError) as tenant:
        mem.world("acme-suport", tenant="")
    assert tenant.value.suggestions == ["support"]  # acme's world is not ""'s
    with pytest.raises(UnknownParticipantError) as agent:
        world.agent("triag")
    assert "unknown agent 'triag' in world 'support' (did you mean 'triage'?)" in str(agent.value)
    with pytest.raises(NotFoundError) as deleted:
        world.delete_agent("bilLing2")
    assert "did you mean 'billing'?" in str(deleted.value)
    with pytest.raises(UnknownWorldError) as far:
        mem.world("zzz")
    assert far.value.suggestions == [] and "did you mean" not in str(far.value)

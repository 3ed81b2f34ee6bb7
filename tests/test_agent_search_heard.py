"""An agent's search finds only messages it heard or wrote, as its recalled past does (issue 43,
point 5): on the Python API, REST and MCP alike (they share `Searcher.search`), on both stores."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recall import Recall, Settings


@pytest.fixture
def mem(open_on_store: Callable[[Settings], Recall]) -> Recall:
    return open_on_store(Settings(index_interval=0))


def found(mem: Recall, agent: str, query: str, k: int = 10) -> list[str]:
    """The texts of the agent's message hits, best first (without the `sender: ` they open with)."""
    hits = mem.world("w").agent(agent).search(query, k=k, kinds=("message",))
    return [hit.text.split(": ", 1)[1] for hit in hits]


RED = "the old balloon order was red"
INVOICE = "@a the invoice number is 4711"
BLUE = "the new balloon order is blue"
BUDGET = "@b my balloon budget is ten euros"


def test_an_agent_never_finds_what_it_did_not_hear(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    for agent in ("a", "b"):
        world.add_agent(agent)
    world.post("maria", RED)  # public, before c joined
    world.post("maria", INVOICE)  # for a alone
    world.add_agent("c")
    world.post("maria", BLUE)  # public: everyone hears it
    world.post("c", BUDGET)  # c wrote it, for b
    mem.refresh_index()

    # An agent's memory is what was delivered to it (everything posted while it was in the
    # world, spec §1) and what it wrote: c joined after the first two.
    assert found(mem, "a", "invoice number")[0] == INVOICE
    assert set(found(mem, "a", "balloon order")) == {RED, INVOICE, BLUE, BUDGET}
    assert set(found(mem, "c", "invoice number")) == {BLUE, BUDGET}
    assert set(found(mem, "c", "balloon order")) == {BLUE, BUDGET}
    # The world's own search (no agent) still finds everything.
    assert {hit.text.split(": ", 1)[1] for hit in world.search("balloon invoice", kinds=("message",))} == {
        RED,
        INVOICE,
        BLUE,
        BUDGET,
    }


def test_the_k_best_are_chosen_among_what_the_agent_heard(mem: Recall) -> None:
    """Many better-matching messages from before the agent joined do not crowd out the one it heard."""
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("a")
    for n in range(300):
        world.post("maria", f"@a parcel tracking parcel number {n} parcel status parcel")
    world.add_agent("b")
    world.post("maria", "@b where is my parcel?")
    mem.refresh_index()
    assert found(mem, "b", "parcel tracking number status", k=3) == ["@b where is my parcel?"]
    assert len(found(mem, "a", "parcel tracking number status", k=3)) == 3

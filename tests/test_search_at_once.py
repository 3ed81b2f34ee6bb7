"""What is stored before a search is found by its words at once (issue 24, point 4), with the
default settings a new user has (the background indexer and MiniLM on), on SQLite and
PostgreSQL: no `refresh_index()`, no waiting for the indexer. Each is the best hit of its
search (others may follow: the indexer's first round may have embedded what came before, so
the vector search finds it as a weak neighbour)."""

from __future__ import annotations

from recall import Recall, Settings
from recall.app.search import SearchResult


def test_a_post_a_memory_and_a_fact_are_found_straight_after_they_are_written(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=3600.0)) as mem:  # the indexer never gets to it
        world = mem.world("support", create=True)
        world.add_human("maria")
        world.add_agent("desk")
        memory = world.add_memory("Invoices are re-issued within 2 days", importance=7)
        assert _best(world.search("invoices re-issued")) == ("memory", memory.id)
        post = world.post("maria", "my parcel never arrived")
        assert _best(world.search("parcel arrived")) == ("message", post.id)
        fact = mem.scope("user:maria").add("Drinks only green tea")
        assert _best(mem.search("user:maria", "green tea")) == ("fact", fact.id)
        fact = mem.scope("world:support").add("The shop opens at nine")
        assert _best(world.search("shop opens", kinds=("fact",))) == ("fact", fact.id)


def _best(hits: list[SearchResult]) -> tuple[str, int] | None:
    return (hits[0].kind, hits[0].source_id) if hits else None

"""What is stored before a search is found by its words at once (issue 24, point 4), with the
default settings a new user has (the background indexer and MiniLM on), on SQLite and
PostgreSQL: no `refresh_index()`, no waiting for the indexer."""

from __future__ import annotations

from recall import Recall, Settings


def test_a_post_a_memory_and_a_fact_are_found_straight_after_they_are_written(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=3600.0)) as mem:  # the indexer never gets to it
        world = mem.world("support", create=True)
        world.add_human("maria")
        world.add_agent("desk")
        memory = world.add_memory("Invoices are re-issued within 2 days", importance=7)
        assert [(h.kind, h.source_id) for h in world.search("invoices re-issued")] == [("memory", memory.id)]
        post = world.post("maria", "my parcel never arrived")
        assert [(h.kind, h.source_id) for h in world.search("parcel arrived")] == [("message", post.id)]
        fact = mem.scope("user:maria").add("Drinks only green tea")
        assert [(h.kind, h.source_id) for h in mem.search("user:maria", "green tea")] == [("fact", fact.id)]
        fact = mem.scope("world:support").add("The shop opens at nine")
        assert [(h.kind, h.source_id) for h in world.search("shop opens", kinds=("fact",))] == [("fact", fact.id)]

"""Keyed memories (store/keyed.py) on both stores: an upsert per address, prefixes as ranges of
the index, newest first in pages, the distinct namespaces, and look-ups that stay in their world."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from recall import Recall, Settings
from recall.store.records import Address, NewMemory


def test_keyed_memories(store_location: str) -> None:
    with Recall(store_location, settings=Settings(embeddings="none")) as mem:
        store = mem.service.store
        here, there = mem.world("here", create=True).key, mem.world("there", create=True).key
        now = datetime.now(UTC)

        def note(text: str, at: datetime = now) -> NewMemory:
            return NewMemory(owner="", type="langgraph", content=text, importance=5, created_at=at)

        (first,) = store.put_keyed_memories(here, [(Address("a.b", "k"), note("one"))])
        (second,) = store.put_keyed_memories(here, [(Address("a.b", "k"), note("two", now + timedelta(seconds=1)))])
        assert second.id == first.id and second.content == "two" and second.created_at == first.created_at
        written = [
            (Address(namespace, "k"), note(namespace, now + timedelta(seconds=2 + n)))
            for n, namespace in enumerate(["a.b.c", "a.b-c", "a.bc", "z"])
        ]
        store.put_keyed_memories(here, written)
        store.put_keyed_memories(there, [(Address("a.b", "k"), note("elsewhere"))])

        assert store.keyed_memory(here, "", Address("a.b", "k")).content == "two"  # type: ignore[union-attr]
        assert store.keyed_memory(here, "", Address("a.b", "missing")) is None
        assert store.keyed_namespaces(here, "") == ["a.b", "a.b-c", "a.b.c", "a.bc", "z"]
        assert store.keyed_namespaces(here, "", "a.b") == ["a.b", "a.b.c"]
        newest = store.keyed_memories(here, "", limit=2)
        assert [m.content for m in newest] == ["z", "a.bc"]
        rest = store.keyed_memories(here, "", before=(newest[-1].updated_at, newest[-1].id), limit=10)
        assert [m.content for m in rest] == ["a.b-c", "a.b.c", "two"]
        assert [m.content for m in store.keyed_memories(here, "", "a.b")] == ["a.b.c", "two"]
        # By id, in its own world only.
        elsewhere = store.keyed_memory(there, "", Address("a.b", "k"))
        assert elsewhere is not None
        assert set(store.memories_among(here, [first.id, elsewhere.id])) == {first.id}

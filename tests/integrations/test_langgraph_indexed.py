"""`RecallStore` finds its items through indexes (issue 27): an item is a keyed memory, a
namespace prefix a range of the index, and no operation reads every item of the store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recall import Recall, Settings
from recall.integrations.langgraph import MEMORY_TYPE, META, RecallStore
from recall.store.records import Address


def _no_whole_reads(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading all of a world's memories fail: what the store did before issue 27."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("RecallStore read every memory of the world")

    monkeypatch.setattr(mem.service.store, "list_memories", refuse)


def test_every_operation_goes_through_the_index(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    store = RecallStore(mem, world="lg", create=True)
    _no_whole_reads(mem, monkeypatch)
    store.put(("users", "maria"), "tea", {"drink": "green tea", "kind": "preference"})
    store.put(("users", "maria"), "city", {"city": "Lyon", "kind": "fact"})
    store.put(("users", "omar"), "tea", {"drink": "black tea", "kind": "preference"})
    assert store.get(("users", "maria"), "tea").value == {"drink": "green tea", "kind": "preference"}  # type: ignore[union-attr]
    assert [i.key for i in store.search(("users", "maria"))] == ["city", "tea"]
    found = store.search(("users",), query="which tea", filter={"kind": "preference"})
    assert {(tuple(i.namespace), i.key) for i in found} == {(("users", "maria"), "tea"), (("users", "omar"), "tea")}
    assert store.list_namespaces(prefix=("users",)) == [("users", "maria"), ("users", "omar")]
    store.delete(("users", "maria"), "tea")
    assert store.get(("users", "maria"), "tea") is None


def test_a_put_writes_over_the_same_memory(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    store.put(("a",), "k", {"v": 1})
    first = store.get(("a",), "k")
    store.put(("a",), "k", {"v": 2})
    again = store.get(("a",), "k")
    assert again is not None and first is not None
    assert again.value == {"v": 2} and again.created_at == first.created_at and again.updated_at > first.updated_at
    items = [m for m in store.world.memories(limit=100) if m.type == MEMORY_TYPE]
    assert len(items) == 1


def test_two_stores_on_one_file_keep_one_memory_per_item(db_path: Any) -> None:
    with (
        Recall(db_path, settings=Settings(embeddings="none")) as one,
        Recall(db_path, settings=Settings(embeddings="none")) as two,
    ):
        first = RecallStore(one, world="lg", create=True)
        second = RecallStore(two, world="lg")
        for n in range(5):
            (first if n % 2 else second).put(("a",), "k", {"n": n})
        assert first.get(("a",), "k").value == {"n": 4}  # type: ignore[union-attr]
        assert second.get(("a",), "k").value == {"n": 4}  # type: ignore[union-attr]
        assert len([m for m in first.world.memories(limit=100) if m.type == MEMORY_TYPE]) == 1


def test_a_prefix_is_its_namespace_and_those_below_not_its_siblings(store_location: str) -> None:
    with Recall(store_location, settings=Settings(embeddings="none")) as mem:
        _prefixes(RecallStore(mem, world="lg", create=True))


def _prefixes(store: RecallStore) -> None:
    for namespace in [("a", "b"), ("a", "b", "c"), ("a", "b-c"), ("a", "bc"), ("a", "b!"), ("ab",)]:
        store.put(namespace, "k", {"text": f"note about tea in {'/'.join(namespace)}"})
    assert {tuple(i.namespace) for i in store.search(("a", "b"), limit=20)} == {("a", "b"), ("a", "b", "c")}
    assert {tuple(i.namespace) for i in store.search(("a", "b"), query="tea", limit=20)} == {
        ("a", "b"),
        ("a", "b", "c"),
    }
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b"), ("a", "b", "c")]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "b!"), ("a", "b-c"), ("a", "bc")]


def test_a_query_search_ranks_only_the_prefix(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    """Items under other namespaces that match the query better never take the search's places:
    the prefix is applied inside the search index, so one search call suffices."""
    store = RecallStore(mem, world="lg", create=True, fresh_search=False)
    store.batch(
        [
            *(_put(("crowd",), f"c{n}", {"text": "tea tea tea, green tea and black tea"}) for n in range(300)),
            *(_put(("mine",), f"m{n}", {"text": f"a cup of tea number {n}"}) for n in range(3)),
        ]
    )
    calls: list[int] = []
    search = store.world.search

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["k"])
        return search(*args, **kwargs)

    monkeypatch.setattr(store.world, "search", counted)
    found = store.search(("mine",), query="tea", limit=3)
    assert sorted(i.key for i in found) == ["m0", "m1", "m2"]
    assert len(calls) == 1


def test_items_of_an_older_recall_are_adopted_once(mem: Recall) -> None:
    """Items written before keyed memories (their address in their metadata only), with an
    older copy of one left behind and an expired one, become keyed memories."""
    world = mem.world("lg", create=True)
    now = datetime.now(UTC)

    def legacy(namespace: list[str], key: str, value: dict[str, Any], expires: datetime | None = None) -> None:
        item = {
            "namespace": namespace,
            "key": key,
            "value": value,
            "created_at": now.isoformat(),
            "updated_at": now.isoformat(),
            "index": True,
            "ttl": None if expires is None else 1.0,
            "expires_at": None if expires is None else expires.isoformat(),
        }
        mem.service.memories.add_adapter_memory(
            world.key, f"value: {value}", type=MEMORY_TYPE, metadata={META: item}, expires_at=expires
        )

    legacy(["users"], "tea", {"v": "old copy"})
    legacy(["users"], "tea", {"v": "newest"})
    legacy(["users"], "city", {"v": "Lyon"})
    legacy(["users"], "gone", {"v": "expired"}, expires=now - timedelta(minutes=1))
    store = RecallStore(mem, world="lg")
    assert store.get(("users",), "tea").value == {"v": "newest"}  # type: ignore[union-attr]
    assert store.get(("users",), "gone") is None
    assert sorted(i.key for i in store.search(("users",))) == ["city", "tea"]
    assert mem.service.store.unkeyed_memories(world.key, "") == []
    assert len([m for m in world.memories(limit=100) if m.type == MEMORY_TYPE]) == 2
    assert mem.service.store.keyed_memory(world.key, "", Address("users", "tea")) is not None


def test_the_look_ups_use_the_address_index(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    store.put(("a", "b"), "k", {"v": 1})
    db = mem.service.store
    plans = {
        "get": db._read(
            "EXPLAIN QUERY PLAN SELECT id FROM notes WHERE world_id = ? AND owner = ? AND namespace = ?"
            " AND item_key = ? AND item_key IS NOT NULL",
            ("lg", "", "a.b", "k"),
        ),
        "prefix": db._read(
            "EXPLAIN QUERY PLAN SELECT MIN(namespace) FROM notes WHERE world_id = ? AND owner = ?"
            " AND item_key IS NOT NULL AND namespace >= ? AND namespace < ? AND (namespace = ? OR namespace >= ?)",
            ("lg", "", "a", "a/", "a", "a."),
        ),
    }
    for name, plan in plans.items():
        detail = " ".join(str(row[-1]) for row in plan)
        assert "notes_by_address" in detail, (name, detail)


def _put(namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> Any:
    from langgraph.store.base import PutOp

    return PutOp(namespace, key, value)


def test_a_batch_of_puts_is_one_write(mem: Recall) -> None:
    """Puts in a row go in one transaction: an item put twice keeps its last value and its first
    creation time, a get after them sees them, and a bad put writes none of the batch."""
    from langgraph.store.base import GetOp

    store = RecallStore(mem, world="lg", create=True)
    store.put(("a",), "old", {"v": 0})
    created = store.get(("a",), "old").created_at  # type: ignore[union-attr]
    got = store.batch(
        [
            _put(("a",), "old", {"v": 1}),
            _put(("a",), "new", {"v": 2}),
            _put(("a",), "old", {"v": 3}),
            GetOp(("a",), "old"),
        ]
    )
    assert got[3] is not None and got[3].value == {"v": 3} and got[3].created_at == created
    assert store.get(("a",), "new").value == {"v": 2}  # type: ignore[union-attr]
    with pytest.raises(Exception, match="[Nn]amespace"):
        store.batch([_put(("a",), "never", {"v": 4}), _put(("langgraph",), "bad", {"v": 5})])
    assert store.get(("a",), "never") is None


def test_an_item_put_again_after_it_expired_starts_anew(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    import recall.integrations.langgraph as adapter

    class Later(datetime):
        shift = timedelta(0)

        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return datetime.now(tz) + cls.shift

    monkeypatch.setattr(adapter, "datetime", Later)
    store = RecallStore(mem, world="lg", create=True)
    store.put(("a",), "k", {"v": 1}, ttl=1)
    first = store.get(("a",), "k", refresh_ttl=False)
    store.put(("a",), "k", {"v": 2}, ttl=1)  # written over while alive: the same item
    assert store.get(("a",), "k", refresh_ttl=False).created_at == first.created_at  # type: ignore[union-attr]
    Later.shift = timedelta(minutes=5)
    store.batch([_put(("a",), "k", {"v": 3})])  # over the expired one, before any read swept it
    again = store.get(("a",), "k")
    assert again is not None and again.value == {"v": 3} and again.created_at > first.created_at  # type: ignore[union-attr]


def test_a_batch_of_puts_is_all_or_nothing_on_postgres(postgres_url: str) -> None:
    """On PostgreSQL a batch's statements go together (a pipeline) and its errors come at the
    end: a search item the database refuses leaves none of the batch written, and the
    connection serves the next batch."""
    import psycopg
    from langgraph.store.base import PutOp

    with Recall(postgres_url, settings=Settings(embeddings="none", index_interval=0)) as mem:
        store = RecallStore(mem, world="lg", create=True)
        store.put(("a",), "kept", {"text": "the first"})
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(
                "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN"
                " IF NEW.text LIKE '%refused%' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW;"
                " END $$ LANGUAGE plpgsql"
            )
            conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON search_items FOR EACH ROW EXECUTE FUNCTION refuse()")
        batch = [PutOp(("a",), "kept", {"text": "the second"}), PutOp(("a",), "new", {"text": "refused"})]
        with pytest.raises(psycopg.errors.RaiseException, match="refused by the test"):
            store.batch(batch)
        assert store.get(("a",), "kept").value == {"text": "the first"}  # type: ignore[union-attr]
        assert store.get(("a",), "new") is None
        assert [i.key for i in store.search(("a",), query="first")] == ["kept"]
        store.batch(batch[:1])
        assert store.get(("a",), "kept").value == {"text": "the second"}  # type: ignore[union-attr]
        assert [i.key for i in store.search(("a",), query="second")] == ["kept"]

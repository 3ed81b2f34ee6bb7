"""`RecallStore` against the real LangGraph: a `BaseStore` whose items are recall memories."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

import recall.integrations.langgraph as adapter
from recall import InvalidInputError, Recall, Settings, World
from recall.integrations.langgraph import MEMORY_TYPE, RecallStore

VALUE = {
    "memory": "Maria drinks only green tea, never coffee",
    "unicode": "façade — 茶",
    "nested": {"list": [1, 2.5, True, None, {"deep": ["x"]}], "empty": {}},
    "number": 3,
    "flag": False,
}


def store_items(world: World) -> list[int]:
    """The ids of the memories that hold store items."""
    return [m.id for m in world.memories(limit=1000) if m.type == MEMORY_TYPE]


def test_put_and_get_keep_the_value_and_times(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    assert isinstance(store, BaseStore)
    store.put(("users", "maria"), "prefs", VALUE)
    item = store.get(("users", "maria"), "prefs")
    assert isinstance(item, Item)
    assert item.value == VALUE
    assert (item.namespace, item.key) == (("users", "maria"), "prefs")
    assert item.created_at == item.updated_at
    assert item.created_at.tzinfo is not None
    # Another handle on the same world reads the same item.
    assert RecallStore(mem, world=store.world).get(("users", "maria"), "prefs") == item

    store.put(("users", "maria"), "prefs", {"memory": "Maria drinks green tea and oolong"})
    updated = store.get(("users", "maria"), "prefs")
    assert updated is not None
    assert updated.value == {"memory": "Maria drinks green tea and oolong"}
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at
    # The update replaced the memory: one memory per item.
    assert len(store_items(store.world)) == 1
    assert store.get(("users", "maria"), "missing") is None
    assert store.get(("users",), "prefs") is None


def test_items_survive_reopening_the_store(db_path: Path) -> None:
    with Recall(db_path, settings=Settings()) as mem:
        RecallStore(mem, world="lg", create=True).put(("docs",), "a", VALUE)
    with Recall(db_path, settings=Settings()) as mem:
        item = RecallStore(mem, world="lg").get(("docs",), "a")
        assert item is not None and item.value == VALUE


def test_namespaces_are_isolated(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    store.put(("users", "maria"), "note", {"text": "maria's"})
    store.put(("users", "tom"), "note", {"text": "tom's"})
    store.put(("users", "tom", "work"), "note", {"text": "tom's work"})
    store.put(("teams",), "note", {"text": "team"})
    maria, tom = store.get(("users", "maria"), "note"), store.get(("users", "tom"), "note")
    assert maria is not None and maria.value == {"text": "maria's"}
    assert tom is not None and tom.value == {"text": "tom's"}

    def keys(prefix: tuple[str, ...]) -> set[tuple[tuple[str, ...], str]]:
        return {(i.namespace, i.key) for i in store.search(prefix, limit=100)}

    assert keys(("users", "maria")) == {(("users", "maria"), "note")}
    assert keys(("users", "tom")) == {(("users", "tom"), "note"), (("users", "tom", "work"), "note")}
    assert len(keys(())) == 4
    # A prefix matches whole labels, not the start of one.
    assert keys(("users", "ma")) == set()

    store.delete(("users", "tom"), "note")
    assert store.get(("users", "tom"), "note") is None
    assert store.get(("users", "tom", "work"), "note") is not None
    assert store.get(("users", "maria"), "note") is not None


def test_list_namespaces_matches_prefixes_suffixes_and_depth(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    for namespace in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f")]:
        store.put(namespace, "k", {"n": 1})
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("i",)) == [("a", "b", "d", "i")]
    assert store.list_namespaces(max_depth=1) == [("a",)]
    every = store.list_namespaces()
    assert len(every) == 5 and every == sorted(every)
    assert store.list_namespaces(limit=2, offset=1) == every[1:3]


def test_search_without_query_filters_and_pages_newest_first(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    for n in range(5):
        store.put(("docs",), f"d{n}", {"n": n, "kind": "even" if n % 2 == 0 else "odd", "tags": {"x": n}})
    newest_first = [i.key for i in store.search(("docs",))]
    assert newest_first == ["d4", "d3", "d2", "d1", "d0"]
    assert all(i.score is None for i in store.search(("docs",)))
    assert [i.key for i in store.search(("docs",), limit=2, offset=1)] == ["d3", "d2"]
    assert [i.key for i in store.search(("docs",), filter={"kind": "even"})] == ["d4", "d2", "d0"]
    assert [i.key for i in store.search(("docs",), filter={"n": {"$gt": 1, "$lte": 3}})] == ["d3", "d2"]
    assert [i.key for i in store.search(("docs",), filter={"n": {"$ne": 0}, "kind": "even"})] == ["d4", "d2"]
    assert [i.key for i in store.search(("docs",), filter={"tags": {"x": 1}})] == ["d1"]
    assert store.search(("docs",), filter={"missing": 1}) == []


def test_query_search_ranks_with_recalls_search_and_never_finds_deleted_items(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    store.put(("users", "maria"), "drink", {"memory": "Maria drinks only green tea"})
    store.put(("users", "maria"), "parcel", {"memory": "Her parcel was sent to Lyon via the Paris depot"})
    store.put(("users", "maria"), "invoice", {"memory": "Invoices are re-issued within two days"})
    store.put(("users", "tom"), "drink", {"memory": "Tom drinks green tea too"})

    hits = store.search(("users", "maria"), query="which tea does she drink?")
    assert all(isinstance(h, SearchItem) for h in hits)
    assert hits[0].key == "drink" and hits[0].namespace == ("users", "maria")
    assert all(h.namespace == ("users", "maria") for h in hits)  # tom's tea is in another namespace
    # The scores are recall's own: the same as World.search gives for those memories.
    recall_scores = {r.text: r.score for r in store.world.search("which tea does she drink?", kinds=["memory"])}
    assert hits[0].score == recall_scores["memory: Maria drinks only green tea"]
    # By meaning, with no shared word: the embeddings half of the hybrid search.
    assert store.search(("users", "maria"), query="shipping to France", limit=1)[0].key == "parcel"

    store.delete(("users", "maria"), "drink")
    hits = store.search(("users", "maria"), query="which tea does she drink?")
    assert "drink" not in [h.key for h in hits]
    # Really deleted: recall's own search no longer finds it either.
    texts = [r.text for r in store.world.search("green tea", kinds=["memory"])]
    assert texts[0] == "memory: Tom drinks green tea too"
    assert "memory: Maria drinks only green tea" not in texts
    assert store.get(("users", "maria"), "drink") is None


def test_query_search_respects_filter_limit_offset_and_index(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    for n in range(6):
        store.put(("notes",), f"tea{n}", {"text": f"green tea note number {n}", "n": n})
    store.put(("notes",), "hidden", {"text": "green tea secret"}, index=False)
    store.put(("notes",), "title-only", {"title": "green tea", "body": "oolong"}, index=["body"])
    keys = [h.key for h in store.search(("notes",), query="green tea", limit=20)]
    assert "hidden" not in keys  # index=False: never found by a query
    assert sorted(keys[:6]) == [f"tea{n}" for n in range(6)]
    # index=["body"]: only the body is searched (oolong is found by meaning, below the six).
    texts = {m.metadata["langgraph"]["key"]: m.content for m in store.world.memories() if m.type == MEMORY_TYPE}
    assert texts["title-only"] == "oolong" and texts["tea0"] == "text: green tea note number 0\nn: 0"
    assert {h.key for h in store.search(("notes",), query="green tea", filter={"n": {"$gte": 4}})} == {"tea4", "tea5"}
    first_two = [h.key for h in store.search(("notes",), query="green tea", limit=2)]
    next_two = [h.key for h in store.search(("notes",), query="green tea", limit=2, offset=2)]
    assert len(first_two) == 2 and len(next_two) == 2 and not set(first_two) & set(next_two)
    assert store.search(("notes",), query="oolong")[0].key == "title-only"
    # Not indexed, but still an item.
    hidden = store.get(("notes",), "hidden")
    assert hidden is not None and hidden.value == {"text": "green tea secret"}


def test_an_agents_store_is_private_to_it(mem: Recall, world: World) -> None:
    mine = RecallStore(mem, world=world, agent="agent-a")
    shared = RecallStore(mem, world=world)
    mine.put(("prefs",), "tea", {"memory": "Maria likes green tea"})
    assert shared.get(("prefs",), "tea") is None
    assert [m.owner for m in world.agent("agent-a").memories() if m.type == MEMORY_TYPE] == ["agent-a"]
    assert [r.text for r in world.agent("agent-b").search("green tea", kinds=["memory"])] == []
    assert [h.key for h in mine.search(("prefs",), query="green tea")] == ["tea"]


def test_batch_runs_every_kind_of_operation_in_order(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    results = store.batch(
        [
            PutOp(("a",), "k", {"v": 1}),
            GetOp(("a",), "k"),
            PutOp(("a", "b"), "k", {"v": 2}),
            SearchOp(("a",), filter={"v": 2}),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("a",)),)),
            PutOp(("a",), "k", None),
            GetOp(("a",), "k"),
        ]
    )
    assert results[0] is None
    got = results[1]
    assert isinstance(got, Item) and got.value == {"v": 1}
    found = results[3]
    assert isinstance(found, list) and [(i.namespace, i.key) for i in found if isinstance(i, Item)] == [
        (("a", "b"), "k")
    ]
    assert results[4] == [("a",), ("a", "b")]
    assert results[6] is None


def test_namespaces_follow_langgraphs_rules(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.get(("",), "k")


def test_other_memories_of_the_world_are_left_alone(mem: Recall, world: World) -> None:
    world.add_memory("Deliveries to Lyon go through the Paris depot", importance=7)
    store = RecallStore(mem, world=world)
    store.put(("x",), "k", {"memory": "Deliveries are slow"})
    assert [h.key for h in store.search((), query="deliveries Lyon")] == ["k"]
    assert store.list_namespaces() == [("x",)]
    store.delete(("x",), "k")
    assert [m.content for m in world.memories()] == ["Deliveries to Lyon go through the Paris depot"]


class _Later(datetime):
    """`datetime` whose `now` is `_Later.shift` ahead."""

    shift = timedelta(0)

    @classmethod
    def now(cls, tz: Any = None) -> _Later:
        real = datetime.now(tz)
        return cls.fromtimestamp((real + cls.shift).timestamp(), tz)


def test_items_expire_after_their_ttl_and_reads_refresh_it(mem: Recall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adapter, "datetime", _Later)
    store = RecallStore(mem, world="lg", create=True)
    store.put(("s",), "short", {"v": 1}, ttl=60)
    store.put(("s",), "read", {"v": 2}, ttl=60)
    store.put(("s",), "forever", {"v": 3})
    _Later.shift = timedelta(minutes=50)
    assert store.get(("s",), "read") is not None  # refreshes: now expires at +110 minutes
    assert store.get(("s",), "short", refresh_ttl=False) is not None
    _Later.shift = timedelta(minutes=70)
    assert store.get(("s",), "short") is None
    assert {i.key for i in store.search(("s",))} == {"read", "forever"}
    _Later.shift = timedelta(minutes=200)
    assert {i.key for i in store.search(("s",))} == {"forever"}
    # Expired items are deleted, not only hidden.
    assert len(store_items(store.world)) == 1


def test_the_ttl_config_gives_puts_their_default_ttl(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True, ttl={"default_ttl": 30, "refresh_on_read": False})
    store.put(("s",), "k", {"v": 1})
    memory = next(m for m in store.world.memories() if m.type == MEMORY_TYPE)
    assert memory.metadata["langgraph"]["ttl"] == 30


class State(TypedDict, total=False):
    user: str
    said: str
    answer: str


@dataclass
class Ctx:
    user: str


def remember(state: State, runtime: Runtime[Ctx]) -> State:
    assert runtime.store is not None
    runtime.store.put(("users", runtime.context.user), "said", {"memory": state["said"]})
    return {}


def answer(state: State, runtime: Runtime[Ctx]) -> State:
    assert runtime.store is not None
    hits = runtime.store.search(("users", runtime.context.user), query="what does the user drink?")
    return {"answer": hits[0].value["memory"] if hits else "nothing known"}


def graph(store: BaseStore) -> Any:
    builder = StateGraph(State, context_schema=Ctx)
    builder.add_node("remember", remember)
    builder.add_node("answer", answer)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "answer")
    builder.add_edge("answer", END)
    return builder.compile(store=store)


def test_a_compiled_graph_reads_and_writes_the_store(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    app = graph(store)
    out = app.invoke({"said": "I only drink green tea"}, context=Ctx(user="maria"))
    assert out["answer"] == "I only drink green tea"
    out = app.invoke({"said": "My parcel is late"}, context=Ctx(user="tom"))
    assert out["answer"] == "My parcel is late"  # tom's namespace holds only his own item
    item = store.get(("users", "maria"), "said")
    assert item is not None and item.value == {"memory": "I only drink green tea"}


def test_async_operations_and_an_async_graph(mem: Recall) -> None:
    async def run() -> None:
        store = RecallStore(mem, world="lg", create=True)
        await store.aput(("users", "maria"), "tea", {"memory": "Maria drinks green tea"})
        item = await store.aget(("users", "maria"), "tea")
        assert item is not None and item.value == {"memory": "Maria drinks green tea"}
        hits = await store.asearch(("users",), query="green tea")
        assert [h.key for h in hits] == ["tea"] and hits[0].score is not None
        assert await store.alist_namespaces() == [("users", "maria")]
        await store.adelete(("users", "maria"), "tea")
        assert await store.aget(("users", "maria"), "tea") is None
        out = await graph(store).ainvoke({"said": "Tea, always green"}, context=Ctx(user="ana"))
        assert out["answer"] == "Tea, always green"

    asyncio.run(run())


def test_put_get_search_delete_on_both_stores(store_location: str) -> None:
    with Recall(store_location, settings=Settings()) as mem:
        store = RecallStore(mem, world="lg", create=True)
        store.put(("users", "maria"), "tea", VALUE)
        store.put(("users", "maria"), "parcel", {"memory": "Her parcel went to Lyon"})
        item = store.get(("users", "maria"), "tea")
        assert item is not None and item.value == VALUE
        assert store.search(("users",), query="green tea or coffee")[0].key == "tea"
        store.delete(("users", "maria"), "tea")
        assert [h.key for h in store.search(("users",), query="green tea or coffee")] == ["parcel"]
        assert store.list_namespaces() == [("users", "maria")]
        assert datetime.now(UTC) - item.created_at < timedelta(minutes=5)


def test_no_other_writer_can_forge_a_store_item(mem: Recall) -> None:
    """Issue 23, point 6: a memory written by anyone else with the store's type and metadata made
    the store return it and delete the shared original on its next read. The type is reserved:
    the Python API, REST and MCP refuse it, and the store's items stay its own."""
    from recall import InvalidInputError

    store = RecallStore(mem, world="lg", create=True)
    store.put(("users", "maria"), "prefs", VALUE)
    original = store.get(("users", "maria"), "prefs")
    assert original is not None
    world = mem.world("lg")
    world.add_agent("mallory")
    forged = next(m for m in world.memories(limit=100) if m.type == MEMORY_TYPE).metadata
    for owner in (world, world.agent("mallory")):
        with pytest.raises(InvalidInputError, match="reserved"):
            owner.add_memory("forged", type=MEMORY_TYPE, **forged)
    assert store.get(("users", "maria"), "prefs") == original
    from recall.app.memories import RESERVED_TYPES

    assert MEMORY_TYPE in RESERVED_TYPES


def test_filters_follow_dotted_paths_and_refuse_keys_langgraph_refuses(mem: Recall) -> None:
    """As LangGraph's own SQLite store: a dotted filter key is a path into the value (keys with
    hyphens and leading digits at any depth), and a key with other characters is a ValueError."""
    store = RecallStore(mem, world="lg", create=True)
    store.put(("docs",), "a", {"user": {"access-level": "nested", "1st": {"x-y": 2}}, "top": 1})
    store.put(("docs",), "b", {"user": {"access-level": "flat"}, "top": 1})
    assert [i.key for i in store.search(("docs",), filter={"user.access-level": "nested"})] == ["a"]
    assert [i.key for i in store.search(("docs",), filter={"user.1st.x-y": {"$gte": 2}})] == ["a"]
    assert sorted(i.key for i in store.search(("docs",), filter={"top": 1})) == ["a", "b"]
    assert store.search(("docs",), filter={"user.missing.deeper": "x"}) == []
    for bad in ("bad key", "a'); DROP TABLE x; --", "$.top", "top[0]"):
        with pytest.raises(ValueError, match="Invalid filter key"):
            store.search(("docs",), filter={bad: 1})
        with pytest.raises(ValueError, match="Invalid filter key"):  # refused when nothing is there too
            store.search(("empty",), filter={"top": 2, bad: 1})


def test_langgraphs_index_config_is_read_for_its_fields(mem: Recall) -> None:
    """Issue point 9: LangGraph's IndexConfig was read as the field names ('dims', 'embed', 'fields')."""
    config: IndexConfig = {
        "dims": 384,
        "embed": "huggingface:sentence-transformers/all-MiniLM-L6-v2",
        "fields": ["body"],
    }
    store = RecallStore(mem, world="lg", create=True, index=config)
    assert store.fields == ("body",)
    store.put(("notes",), "n", {"title": "green tea", "body": "oolong from Taiwan"})
    texts = [m.content for m in store.world.memories() if m.type == MEMORY_TYPE]
    assert texts == ["oolong from Taiwan"]
    assert [h.key for h in store.search(("notes",), query="oolong")] == ["n"]
    # The store's own model may be named as LangGraph names models, or as recall's settings do;
    # without fields, the whole value is searched.
    for embed in ("minilm", "sentence-transformers/all-MiniLM-L6-v2", "ollama:all-minilm", "all-MiniLM-L6-v2-int8"):
        assert RecallStore(mem, world="lg", index={"dims": 384, "embed": embed}).fields == ("$",)
    assert RecallStore(mem, world="lg", index={"fields": None}).fields == ("$",)
    # A list of fields, as before.
    assert RecallStore(mem, world="lg", index=["title", "body"]).fields == ("title", "body")


def embed_texts(texts: list[str]) -> list[list[float]]:
    return [[0.0] * 1536 for _ in texts]


def test_an_index_config_of_another_embedding_model_is_refused(mem: Recall) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    refused: list[tuple[Any, str]] = [
        ({"dims": 1536, "embed": "openai:text-embedding-3-small"}, "dims is 1536, but the store's embedding model"),
        (
            {"embed": "openai:text-embedding-3-small"},
            "embed is 'openai:text-embedding-3-small', which recall cannot use",
        ),
        ({"dims": 384, "embed": embed_texts}, "embed is <function embed_texts"),
        ({"embed": DeterministicFakeEmbedding(size=384)}, "embed is DeterministicFakeEmbedding"),
        ({"dims": 768}, "dims is 768"),
        ({"fields": ["text"], "distance_type": "cosine"}, "unknown IndexConfig key 'distance_type'"),
        ({"fields": ["text", 3]}, "fields are JSON paths"),
    ]
    for config, problem in refused:
        with pytest.raises(InvalidInputError, match="index") as error:
            RecallStore(mem, world="lg", create=True, index=config)
        assert problem in str(error.value)
        if "embed" in config or "dims" in config:  # says how recall's model is chosen
            assert "Settings(embeddings='minilm')" in str(error.value)
    assert [w.id for w in mem.worlds()] == []  # refused before anything was made


def test_a_keyword_only_store_takes_fields_and_refuses_vectors(tmp_path: Path) -> None:
    with Recall(tmp_path / "kw.db", settings=Settings(embeddings="none")) as mem:
        store = RecallStore(mem, world="lg", create=True, index={"fields": ["text"]})
        store.put(("n",), "k", {"text": "green tea", "other": "coffee"})
        assert [h.key for h in store.search(("n",), query="green tea")] == ["k"]
        assert store.search(("n",), query="coffee") == []
        for config in ({"dims": 384}, {"embed": "minilm"}):
            with pytest.raises(InvalidInputError, match="makes no vectors"):
                RecallStore(mem, world="lg", index=config)  # type: ignore[arg-type]

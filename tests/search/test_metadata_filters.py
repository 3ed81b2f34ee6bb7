"""Metadata filters in search (`world.search(query, metadata={"channel": "sms"})`), as mem0's and
Zep's users expect them, on both stores: equality, `$in`, `$ne` and number comparisons, items
without the key and facts never matching, the filter applied before the `k` best are picked,
combined with the other filters, for every method; what the stores compute checked against the
reference (`metadata.matches`); the copy in memory's postings; an index built before the
filters existed upgraded; bad filters refused, naming the key."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from recall import Recall, Settings, World
from recall.cli import app
from recall.errors import InvalidInputError
from recall.search import index_items
from recall.search.base import Filters
from recall.search.local import LocalIndex
from recall.search.local_partition import LocalRow
from recall.search.metadata import MAX_CONDITIONS, Condition, indexed, matches, parse
from recall.store.postgres_schema import MIGRATIONS as POSTGRES_MIGRATIONS
from recall.store.sqlite import sqlite3 as store_sqlite3
from recall.store.sqlite_schema import MIGRATIONS as SQLITE_MIGRATIONS

KEYWORDS = Settings(index_interval=0, embeddings="none")
MANUAL = Settings(index_interval=0)

#: (content, metadata) of the messages the tests below search: all about a parcel.
MESSAGES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("my parcel was lost in Lyon", {"channel": "sms", "priority": 2}),
    ("my parcel is late again", {"channel": "email", "priority": 5.0}),
    ("the parcel arrived damaged", {"channel": "sms", "priority": True}),
    ("where is my parcel", {"note": None}),
    ("a parcel was left at the door", {"channel": "sms", "priority": "2"}),
    ("no metadata on this parcel", {}),
)


def support(mem: Recall) -> World:
    """World `w`: the messages above from maria (1-6), a message from bob in chat t-1 (7), a
    shared memory (sms), a private one of agent-a (sms) and a world fact, all about a parcel."""
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_human("bob")
    world.add_agent("agent-a")
    world.add_agent("agent-b")
    for content, metadata in MESSAGES:
        world.post("maria", content, metadata=metadata)
    world.post("bob", "bob's parcel tracking number", chat="t-1", metadata={"channel": "sms", "priority": 1})
    world.add_memory("parcels go through the Paris depot", channel="sms", priority=3)
    world.agent("agent-a").add_memory("maria's parcels are always late", channel="sms")
    mem.scope("world:w").add("parcel deliveries take three days")
    mem.refresh_index()
    return world


def found(hits: Any) -> set[tuple[str, str]]:
    """(kind, text) of each hit, messages by their content."""
    return {(h.kind, h.text.partition(": ")[2] if h.kind == "message" else h.text) for h in hits}


def messages(*numbers: int) -> set[tuple[str, str]]:
    texts = [c for c, _ in MESSAGES] + ["bob's parcel tracking number"]
    return {("message", texts[n - 1]) for n in numbers}


SHARED = ("memory", "parcels go through the Paris depot")
PRIVATE = ("memory", "maria's parcels are always late")

#: A filter and what it finds among `support`'s items.
CASES: list[tuple[dict[str, Any], set[tuple[str, str]]]] = [
    ({"channel": "sms"}, messages(1, 3, 5, 7) | {SHARED, PRIVATE}),
    ({"channel": {"$eq": "sms"}, "priority": 2}, messages(1)),
    ({"priority": 5}, messages(2)),  # 5.0 is stored: JSON numbers compare as numbers
    ({"priority": True}, messages(3)),  # true is not 1
    ({"priority": "2"}, messages(5)),  # nor is "2" 2
    ({"note": None}, messages(4)),  # null is a value: only the message that has the key
    ({"channel": {"$in": ["email", "fax"]}}, messages(2)),
    ({"channel": {"$ne": "sms"}}, messages(2)),  # without the key: no match, $ne included
    ({"priority": {"$gte": 2}}, messages(1, 2) | {SHARED}),  # numbers only: not true, not "2"
    ({"priority": {"$gt": 1, "$lt": 5}}, messages(1) | {SHARED}),
    ({"priority": {"$lte": 1}}, messages(7)),
    ({"missing": "x"}, set()),
]


@pytest.fixture(scope="module")
def sqlite_support(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with Recall(tmp_path_factory.mktemp("support") / "recall.db", MANUAL) as mem:
        yield support(mem)


@pytest.mark.parametrize("method", ["hybrid", "bm25", "vector"])
def test_every_filter_finds_exactly_its_items_on_both_stores(store_location: str, method: str) -> None:
    with Recall(store_location, MANUAL) as mem:
        world = support(mem)
        every = world.search("parcel", k=50, method=method)
        assert len(every) == 10 and every[0].method == method  # the fact included
        for metadata, expected in CASES:
            hits = world.search("parcel", k=50, method=method, metadata=metadata)
            assert found(hits) == expected, metadata
            assert all(h.method == method for h in hits)


def test_facts_never_match_and_the_other_filters_combine(store_location: str) -> None:
    with Recall(store_location, KEYWORDS) as mem:
        world = support(mem)
        sms = {"channel": "sms"}
        assert world.search("parcel", kinds=["fact"])  # the fact is there
        assert world.search("parcel", kinds=["fact"], metadata={"channel": {"$ne": "x"}}) == []
        assert found(world.search("parcel", kinds=["memory"], metadata=sms)) == {SHARED, PRIVATE}
        assert found(world.search("parcel", kinds=["message"], metadata=sms)) == messages(1, 3, 5, 7)
        assert found(world.search("parcel", chat="t-1", metadata=sms)) == messages(7)
        assert found(world.search("parcel", chat="", metadata=sms)) == messages(1, 3, 5) | {SHARED, PRIVATE}
        assert found(world.search("parcel", sender="maria", metadata=sms)) == messages(1, 3, 5)
        assert found(world.search("parcel", min_importance=1, metadata={"priority": 3})) == {SHARED}
        # An agent sees the shared memory and its own, never another agent's.
        assert found(world.agent("agent-a").search("parcel", kinds=["memory"], metadata=sms)) == {SHARED, PRIVATE}
        assert found(world.agent("agent-b").search("parcel", kinds=["memory"], metadata=sms)) == {SHARED}
        # Recall.search passes it on.
        assert found(mem.search("w", "parcel", metadata={"priority": 5})) == messages(2)
        # A message is searchable with its metadata as soon as it is posted.
        world.post("maria", "one more parcel question", metadata={"channel": "call"})
        assert found(world.search("parcel", metadata={"channel": "call"})) == {("message", "one more parcel question")}


@pytest.mark.parametrize("method", ["hybrid", "bm25", "vector"])
def test_k_matching_hits_come_back_among_many_better_ones_that_do_not_match(store_location: str, method: str) -> None:
    """The filter applies before the cut: a search that kept the k best and filtered them
    afterwards would find none of these."""
    with Recall(store_location, MANUAL) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        for n in range(150):
            world.post("maria", f"where is my parcel? parcel {n}", metadata={"channel": "email", "n": n})
        wanted = [
            "the courier left the parcel with a neighbour",
            "nobody answered the door about the parcel",
            "a parcel box out in the rain",
        ]
        for text in wanted:
            world.post("maria", text, metadata={"channel": "sms"})
        mem.refresh_index()
        query = "where is my parcel?"
        best = world.search(query, k=3, method=method)
        assert not {h.text for h in best} & {f"maria: {t}" for t in wanted}
        hits = world.search(query, k=3, method=method, metadata={"channel": "sms"})
        assert sorted(h.text for h in hits) == sorted(f"maria: {t}" for t in wanted)
        # A number comparison too: 10 of the 150.
        tens = world.search("parcel", k=10, method=method, metadata={"n": {"$gte": 140}})
        assert len(tens) == 10 and {h.text for h in tens} == {
            f"maria: where is my parcel? parcel {n}" for n in range(140, 150)
        }


#: Metadata of items, and conditions, for the comparison with the reference below.
VALUES: tuple[Any, ...] = (0, 1, 2, 2.0, 2.5, -3, True, False, None, "2", "sms", "", "SMS", [2], {"v": 2}, "x" * 1001)


def test_both_stores_compute_what_the_reference_says(store_location: str) -> None:
    rng = np.random.default_rng(5)
    metadatas: list[dict[str, Any]] = [{}]
    for _ in range(40):
        metadatas.append({key: VALUES[rng.integers(len(VALUES))] for key in ("a", "b") if rng.random() < 0.7})
    conditions: list[dict[str, Any]] = [
        {"a": 2},
        {"a": 2.0},
        {"a": True},
        {"a": 0},
        {"a": False},
        {"a": None},
        {"a": "2"},
        {"a": ""},
        {"a": "sms"},
        {"a": {"$in": [2, "sms", None]}},
        {"a": {"$in": [False]}},
        {"a": {"$ne": 2}},
        {"a": {"$ne": None}},
        {"a": {"$gt": 1}},
        {"a": {"$gte": 2}},
        {"a": {"$lt": 2.5}},
        {"a": {"$lte": -3}},
        {"a": {"$gte": 0, "$lt": 2}},
        {"a": 2, "b": {"$ne": "sms"}},
        {"a": {"$in": [1, 2]}, "b": {"$in": [2.5, ""]}},
    ]
    with Recall(store_location, KEYWORDS) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        posted = {world.post("maria", f"item {n}", metadata=m).id: m for n, m in enumerate(metadatas)}
        for metadata in conditions:
            expected = {i for i, m in posted.items() if matches(parse(metadata), m)}
            hits = world.search("item", k=100, method="bm25", metadata=metadata)
            assert {h.source_id for h in hits} == expected, metadata


@settings(max_examples=60, deadline=None)
@given(
    metadatas=st.lists(
        st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(VALUES), max_size=3), max_size=30
    ),
    removed=st.sets(st.integers(1, 30), max_size=10),
    key=st.sampled_from(["a", "b", "c"]),
    op=st.sampled_from(["$eq", "$ne", "$in", "$gt", "$gte", "$lt", "$lte"]),
    values=st.lists(st.sampled_from([0, 1, 2, 2.0, 2.5, -3, True, False, None, "2", "sms", ""]), min_size=1),
)
def test_the_copy_in_memory_is_the_reference_also_after_deletes(
    metadatas: list[dict[str, Any]], removed: set[int], key: str, op: str, values: list[Any]
) -> None:
    if op in ("$gt", "$gte", "$lt", "$lte"):
        values = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)][:1] or [1]
    condition: dict[str, Any] = {key: {op: values if op == "$in" else values[0]}}
    local = LocalIndex(4)
    rows = [
        LocalRow(i, "t", "w", "message", "", None, "ann", None, float(i), "item", "", None, i, indexed(m))
        for i, m in enumerate(metadatas, 1)
    ]
    local.apply([(r.item_id, r) for r in rows], synced=1)
    local.apply([(i, None) for i in removed], synced=2)
    filters = Filters("t", "w", ("message",), None, None, None, None, None, None, parse(condition))
    expected = {i for i, m in enumerate(metadatas, 1) if i not in removed and matches(parse(condition), m)}
    assert {i for i, _ in local.keyword(["item"], filters, 100)} == expected
    local.build_graphs()  # compacts the postings of the deleted rows
    assert {i for i, _ in local.keyword(["item"], filters, 100)} == expected


def test_what_the_index_keeps_of_metadata() -> None:
    assert indexed(None) is None and indexed({}) is None
    assert indexed({"b": 2.0, "a": "x", "list": [1], "obj": {"k": 1}, "long": "x" * 1001, "t": True}) == (
        '{"a":"x","b":2,"t":true}'
    )
    assert indexed({"big": 2**63, "n": None, "é": "ü"}) == '{"n":null,"é":"ü"}'
    assert parse({"a": {"$in": [2, 2.0, "2"]}}) == (Condition("a", "$in", (2, "2")),)


BAD: list[tuple[object, str, str]] = [
    ({"channel": {"$regex": "s.*"}}, "metadata.channel", "unknown operator '$regex'"),
    ({"channel": {"near": "sms"}}, "metadata.channel", "unknown operator 'near'"),
    ({"channel": {}}, "metadata.channel", "names no operator"),
    ({"channel": ["sms", "email"]}, "metadata.channel", "$in"),
    ({"channel": {"$in": []}}, "metadata.channel.$in", "non-empty list"),
    ({"channel": {"$in": "sms"}}, "metadata.channel.$in", "non-empty list"),
    ({"channel": {"$in": [["sms"]]}}, "metadata.channel.$in", "must be text, a number"),
    ({"channel": {"$in": list(range(101))}}, "metadata.channel.$in", "the limit is 100"),
    ({"priority": {"$gte": "2"}}, "metadata.priority.$gte", "must be a number"),
    ({"priority": {"$lt": True}}, "metadata.priority.$lt", "must be a number"),
    ({"priority": float("nan")}, "metadata.priority", "finite number"),
    ({"priority": 2**70}, "metadata.priority", "finite number"),
    ({"channel": "x" * 1001}, "metadata.channel", "at most 1,000 characters"),
    ({"channel": "a\x00b"}, "metadata.channel", "without NUL"),
    ({"$or": [{"a": 1}]}, "metadata.$or", "$and and $or are not supported"),
    ({"": 1}, "metadata", "non-empty text"),
    ({3: 1}, "metadata", "non-empty text"),
    ("channel=sms", "metadata", "must be an object"),
    ({f"k{n}": n for n in range(MAX_CONDITIONS + 1)}, "metadata", f"more than {MAX_CONDITIONS} conditions"),
]


@pytest.mark.parametrize(("metadata", "field", "problem"), BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_filters_are_refused_naming_the_key(
    sqlite_support: World, metadata: object, field: str, problem: str
) -> None:
    for query in ("parcel", " "):  # refused also when there is nothing to search
        with pytest.raises(InvalidInputError) as info:
            sqlite_support.search(query, metadata=metadata)  # type: ignore[arg-type]
        assert info.value.field == field and problem in info.value.problem, info.value


# -- an index built before metadata filters -------------------------------------------------------


def _version_of_metadata(migrations: list[tuple[int, str]]) -> int:
    """The migration that gave search items their metadata."""
    return next(v for v, sql in migrations if "ADD COLUMN metadata" in sql)


#: What a store held before that migration: a world, three messages (indexed, with metadata in
#: the messages only), a memory and a fact, as the indexer of the time wrote them.
OLD_ROWS = (
    "INSERT INTO worlds (key, id, name, turn_limit, created_at, tenant) VALUES ('w', 'w', 'W', NULL, 0, '')",
    "INSERT INTO participants (world_id, id, kind, created_at) VALUES ('w', 'maria', 'human', 0)",
    "INSERT INTO messages (id, world_id, chat_id, sender, sender_type, content, metadata, created_at) VALUES"
    " (1, 'w', '', 'maria', 'human', 'parcel lost', '{\"channel\": \"sms\", \"tags\": [1]}', 1),"
    " (2, 'w', '', 'maria', 'human', 'parcel late', '{\"channel\": \"email\"}', 2),"
    " (3, 'w', '', 'maria', 'human', 'parcel again', '{}', 3)",
    # A memory: its columns then (and `updated_at` as well when memories were updatable by then).
    "INSERT INTO notes (id, world_id, owner, type, content, importance, chat_id, metadata, created_at{updated})"
    " VALUES (1, 'w', '', 'note', 'parcel depot', 5, NULL, '{{\"channel\": \"sms\"}}', 4{at})",
    "INSERT INTO facts (id, tenant, scope, content, category, confidence, source, created_at, updated_at) VALUES"
    " (1, '', 'world:w', 'parcel facts', 'knowledge', 1, 'manual', 5, 5)",
    "INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance, created_at, text)"
    " VALUES ('', 'w', 'message', 1, '', NULL, 'maria', NULL, 1, 'maria: parcel lost'),"
    " ('', 'w', 'message', 2, '', NULL, 'maria', NULL, 2, 'maria: parcel late'),"
    " ('', 'w', 'message', 3, '', NULL, 'maria', NULL, 3, 'maria: parcel again'),"
    " ('', 'w', 'memory', 1, '', NULL, NULL, 5, 4, 'parcel depot'),"
    " ('', 'w', 'fact', 1, '', NULL, NULL, NULL, 5, 'parcel facts')",
    "INSERT INTO search_state (name, value) VALUES ('messages', 3)",
)


def _old_rows(note_columns: set[str]) -> list[str]:
    updated = "updated_at" in note_columns
    fill = {"updated": ", updated_at" if updated else "", "at": ", 4" if updated else ""}
    return [statement.format(**fill) if "INTO notes" in statement else statement for statement in OLD_ROWS]


def _old_store(location: str) -> None:
    """A store at the version before metadata filters, holding OLD_ROWS."""
    if location.startswith("postgresql://"):
        before = _version_of_metadata(POSTGRES_MIGRATIONS)
        with psycopg.connect(location) as conn:
            conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
            for version, sql in POSTGRES_MIGRATIONS:
                if version < before:
                    conn.execute(sql.encode())
                    conn.execute("INSERT INTO schema_migrations VALUES (%s, 0)", (version,))
            columns = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'notes'")
            for statement in _old_rows({str(c[0]) for c in columns}):
                conn.execute(statement.encode())
            conn.execute("SELECT setval('messages_id_seq', 3)")  # where the store's posts had left it
        return
    before = _version_of_metadata(SQLITE_MIGRATIONS)
    with closing(store_sqlite3.connect(location)) as db:
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
        for version, sql in SQLITE_MIGRATIONS:
            if version < before:
                for statement in sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT INTO schema_migrations VALUES (?, 0)", (version,))
        columns = {str(c[1]) for c in db.execute("PRAGMA table_info(notes)")}
        for statement in _old_rows(columns):
            db.execute(statement)
        db.commit()


def test_an_index_built_before_metadata_filters_is_given_the_metadata(
    empty_store_location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _old_store(empty_store_location)
    monkeypatch.setattr(index_items, "_BACKFILL_PAGE", 2)  # a page at a time, as a large store does
    with Recall(empty_store_location, KEYWORDS) as mem:
        store = mem.service.store
        assert not store._read("SELECT 1 FROM search_state WHERE name = 'metadata_backfill'")  # type: ignore[attr-defined]
        world = mem.world("w")
        assert len(world.search("parcel")) == 5
        assert {(h.kind, h.source_id) for h in world.search("parcel", metadata={"channel": "sms"})} == {
            ("message", 1),
            ("memory", 1),
        }
        assert [h.source_id for h in world.search("parcel", metadata={"channel": {"$in": ["email"]}})] == [2]
        # What is posted since is indexed with its metadata as it comes.
        world.post("maria", "parcel found", metadata={"channel": "sms"})
        assert len(world.search("parcel", metadata={"channel": "sms"})) == 3
    with Recall(empty_store_location, KEYWORDS) as mem:  # reopened: nothing left to do, the same answers
        assert len(mem.world("w").search("parcel", metadata={"channel": "sms"})) == 3


def test_a_fresh_store_leaves_nothing_to_backfill(store_location: str) -> None:
    with Recall(store_location, KEYWORDS) as mem:
        support(mem)
        assert not mem.service.store._read("SELECT 1 FROM search_state WHERE name = 'metadata_backfill'")  # type: ignore[attr-defined]


def test_a_store_copied_to_postgres_keeps_its_metadata_filters(tmp_path: Path, postgres_url: str) -> None:
    source = str(tmp_path / "source.db")
    with Recall(source, KEYWORDS) as mem:
        support(mem)
    result = CliRunner().invoke(app, ["migrate", "--from", source, "--to", postgres_url])
    assert result.exit_code == 0, result.output
    with Recall(postgres_url, KEYWORDS) as mem:
        world = mem.world("w")
        for metadata, expected in CASES:
            assert found(world.search("parcel", k=50, metadata=metadata)) == expected, metadata


def test_an_imported_world_keeps_its_metadata_filters(tmp_path: Path) -> None:
    with Recall(tmp_path / "a.db", KEYWORDS) as mem:
        lines = list(support(mem).export())
    with Recall(tmp_path / "b.db", KEYWORDS) as mem:
        world = mem.import_world(lines)
        for metadata, expected in CASES:
            assert found(world.search("parcel", k=50, metadata=metadata)) == expected, metadata

"""Long-term memories changed in place and expiring (a TTL), through the Python API, on SQLite
and PostgreSQL: an update keeps the id and created_at and is searched by its new words; an
expired memory is never listed, searched, put in a context or exported, and is deleted. Time is
moved by replacing the clock memories expire by (`recall.app.memories.clock`): no test sleeps."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import recall.app.memories as memories_module
from recall import Recall, Settings, World
from recall.app.memories import SWEEP_INTERVAL
from recall.errors import InvalidInputError, PermissionDeniedError, UnknownMemoryError
from recall.search.indexer import BackgroundIndexer
from recall.store import open_store, postgres_schema, sqlite_schema
from recall.store.migrate import migrate
from tests.old_stores import store_before
from tests.worlds import query

#: Keyword search only, no background indexer: the tests drive the index.
QUICK = Settings(index_interval=0, embeddings="none")


class Clock:
    """The time memories expire by, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    monkeypatch.setattr(memories_module, "clock", moved)
    return moved


@pytest.fixture
def mem(store_location: str) -> Iterator[Recall]:
    with Recall(store_location, QUICK) as recall:
        world = recall.world("shop", create=True)
        world.add_agent("clerk", system_prompt="You sell bread.")
        world.add_agent("baker")
        world.add_human("maria")
        yield recall


@pytest.fixture
def world(mem: Recall) -> World:
    return mem.world("shop")


def memory_rows(location: str, memory_id: int) -> tuple[int, int]:
    """How many rows the memory has in the store and in its search index."""
    notes = query(location, "SELECT COUNT(*) FROM notes WHERE id = ?", (memory_id,))[0][0]
    items = query(location, "SELECT COUNT(*) FROM search_items WHERE kind = 'memory' AND source_id = ?", (memory_id,))
    return int(notes), int(items[0][0])


def long_term(world: World, agent: str = "clerk") -> str:
    """The relevant long-term memories of the agent's next context ('' when none)."""
    for message in world.agent(agent).context().openai():
        if str(message["content"]).startswith("Relevant context from past interactions:"):
            return str(message["content"])
    return ""


# -- updating in place --------------------------------------------------------------------------


def test_an_update_changes_the_memory_in_place(mem: Recall, world: World, clock: Clock) -> None:
    note = world.add_memory("Oven 2 runs hot", type="hunch", importance=4, chat="t1", source="baker")
    assert note.updated_at == note.created_at == clock.now and note.expires_at is None
    clock.advance(90)
    changed = world.update_memory(note, content="  Oven 2 runs cold since the repair ", importance=8)
    assert (changed.id, changed.created_at, changed.owner, changed.chat_id) == (note.id, note.created_at, "", "t1")
    assert (changed.content, changed.importance, changed.type) == ("Oven 2 runs cold since the repair", 8, "hunch")
    assert changed.metadata == {"source": "baker"}  # what is not named stays
    assert changed.updated_at == note.created_at + timedelta(seconds=90)
    again = world.update_memory(note.id, type="fact", metadata={"source": "repairman", "ticket": 12})
    assert (again.type, again.metadata, again.content) == (
        "fact",
        {"source": "repairman", "ticket": 12},
        changed.content,
    )
    assert world.memories() == [again]
    record = again.to_dict()
    assert record["updated_at"] == again.updated_at.isoformat() and record["expires_at"] is None


def test_an_updated_memory_is_found_by_its_new_words_and_not_its_old(
    mem: Recall, world: World, store_location: str
) -> None:
    note = world.add_memory("Pistachio croissants sell out by nine", importance=7)
    assert [h.source_id for h in world.search("pistachio", kinds=["memory"], method="bm25")] == [note.id]
    world.post("maria", "@clerk which pastries should I order early?")
    assert "Pistachio" in long_term(world)

    world.update_memory(note, content="Walnut bread sells out by noon")
    assert world.search("pistachio", kinds=["memory"], method="bm25") == []
    hits = world.search("walnut bread", kinds=["memory"], method="bm25")
    assert [(h.source_id, h.text) for h in hits] == [(note.id, "Walnut bread sells out by noon")]
    assert world.agent("clerk").search("walnut", kinds=["memory"], method="bm25")[0].source_id == note.id
    # One item in the index, holding the new text; and the context shows the new text only.
    assert memory_rows(store_location, note.id) == (1, 1)
    assert query(store_location, "SELECT text FROM search_items WHERE kind = 'memory'") == [
        ("Walnut bread sells out by noon",)
    ]
    block = long_term(world)
    assert "Walnut bread sells out by noon" in block and "Pistachio" not in block


def test_an_updated_memorys_vector_is_made_again_from_its_new_text(tmp_path: Path) -> None:
    with Recall(tmp_path / "vectors.db", Settings(index_interval=0)) as mem:
        world = mem.world("shop", create=True)
        old, new = "Pistachio croissants sell out by nine", "The delivery van is parked behind the church"
        note = world.add_memory(old)
        mem.refresh_index()
        world.update_memory(note, content=new)
        mem.refresh_index()
        [hit] = world.search(new, kinds=["memory"], method="vector", k=1)
        assert hit.source_id == note.id and hit.similarity is not None and hit.similarity > 0.99
        stale = world.search(old, kinds=["memory"], method="vector", k=1)
        assert all(h.similarity is not None and h.similarity < 0.8 for h in stale)


def test_an_agent_updates_and_deletes_only_its_own_memories(world: World) -> None:
    clerk, baker = world.agent("clerk"), world.agent("baker")
    shared = world.add_memory("Flour comes on Mondays", importance=6)
    own = clerk.add_memory("Maria tips well", importance=5)

    assert clerk.update_memory(own, importance=9).importance == 9
    with pytest.raises(PermissionDeniedError, match="an agent updates only its own memories"):
        clerk.update_memory(shared, content="Flour comes on Fridays")
    with pytest.raises(PermissionDeniedError, match="an agent deletes only its own memories"):
        clerk.delete_memory(shared)
    with pytest.raises(UnknownMemoryError):
        baker.update_memory(own, content="Maria never tips")
    with pytest.raises(UnknownMemoryError):
        baker.delete_memory(own)
    with pytest.raises(UnknownMemoryError):  # the world's handle reaches the shared memories only
        world.update_memory(own, content="Maria never tips")
    assert [(m.content, m.importance) for m in clerk.memories()] == [
        ("Maria tips well", 9),
        ("Flour comes on Mondays", 6),
    ]
    clerk.delete_memory(own)
    assert [m.id for m in clerk.memories()] == [shared.id]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"content": "  "}, "content"),
        ({"content": "nul \x00 byte"}, "content"),
        ({"importance": 11}, "importance"),
        ({"importance": True}, "importance"),
        ({"type": "Not A Type"}, "type"),
        ({"type": "langgraph"}, "type"),
        ({"metadata": {"score": math.nan}}, "metadata.score"),
        ({"ttl": 0}, "ttl"),
        ({"ttl": 1e-7}, "ttl"),
        ({"ttl": -60}, "ttl"),
        ({"ttl": 11 * 365 * 24 * 3600}, "ttl"),
        ({"ttl": math.inf}, "ttl"),
        ({"ttl": "3600"}, "ttl"),
        ({"expires_at": "tomorrow"}, "expires_at"),
        ({"expires_at": datetime(2001, 1, 1, tzinfo=UTC)}, "expires_at"),
        ({"expires_at": datetime(9999, 6, 1, tzinfo=UTC)}, "expires_at"),
        ({"ttl": 60, "expires_at": datetime(2099, 1, 1, tzinfo=UTC)}, "ttl"),
        ({"ttl": 60, "clear_expiry": True}, "clear_expiry"),
        ({}, "changes"),
    ],
)
def test_a_bad_update_names_its_field_and_changes_nothing(world: World, changes: dict[str, Any], field: str) -> None:
    note = world.add_memory("Oven 2 runs hot", importance=6, ttl=3600)
    with pytest.raises(InvalidInputError) as error:
        world.update_memory(note, **changes)
    assert error.value.field == field
    assert world.memories() == [note]


def test_an_update_of_what_is_not_there_or_not_a_field_is_refused(mem: Recall, world: World) -> None:
    note = world.add_memory("Oven 2 runs hot")
    with pytest.raises(UnknownMemoryError, match="unknown memory 12345"):
        world.update_memory(12345, content="x")
    with pytest.raises(InvalidInputError) as error:
        mem.service.memories.update_memory(world.key, note.id, {"colour": "red"})
    assert error.value.field == "colour" and "content, type, importance" in error.value.problem
    world.delete_memory(note)
    with pytest.raises(UnknownMemoryError):
        world.update_memory(note, content="x")


def test_the_langgraph_stores_items_change_only_through_that_store(mem: Recall, world: World) -> None:
    item = mem.service.memories.add_adapter_memory(world.key, "tea: green", type="langgraph")
    with pytest.raises(PermissionDeniedError, match="LangGraph store"):
        world.update_memory(item, content="tea: black")
    assert world.memories()[0].content == "tea: green"


# -- expiry -------------------------------------------------------------------------------------


def test_a_memory_expires_at_a_time_or_after_a_ttl(world: World, clock: Clock) -> None:
    assert world.add_memory("a", ttl=timedelta(hours=2)).expires_at == clock.now + timedelta(hours=2)
    assert world.add_memory("b", ttl=90.5).expires_at == clock.now + timedelta(seconds=90.5)
    assert world.add_memory("c", ttl=60).expires_at == clock.now + timedelta(minutes=1)
    # A naive time is UTC, as everywhere in recall; any timezone is stored as the same instant.
    naive = (clock.now + timedelta(days=1)).replace(tzinfo=None)
    assert world.add_memory("d", expires_at=naive).expires_at == clock.now + timedelta(days=1)
    lisbon = datetime(2100, 6, 1, 12, tzinfo=UTC).astimezone()
    assert world.agent("clerk").add_memory("e", expires_at=lisbon).expires_at == lisbon
    assert world.add_memory("f").expires_at is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"ttl": 0}, "ttl"),
        ({"ttl": timedelta(seconds=-1)}, "ttl"),
        ({"ttl": False}, "ttl"),
        ({"ttl": 60, "expires_at": datetime(2099, 1, 1, tzinfo=UTC)}, "ttl"),
        ({"expires_at": datetime(2020, 1, 1, tzinfo=UTC)}, "expires_at"),
        ({"expires_at": 1_900_000_000}, "expires_at"),
    ],
)
def test_a_bad_expiry_is_refused_naming_its_field(world: World, fields: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as error:
        world.add_memory("Oven 2 runs hot", **fields)
    assert error.value.field == field
    assert world.memories() == []


def test_a_memory_at_its_expiry_is_already_gone(world: World, clock: Clock) -> None:
    note = world.add_memory("Oven 2 runs hot", ttl=60)
    clock.advance(59.999)
    assert world.memories() == [note]
    clock.advance(0.001)
    assert world.memories() == []


#: Every way a memory is read, each of which leaves an expired one out and purges it.
READS: dict[str, Callable[[World], list[Any]]] = {
    "world list": lambda w: [m.id for m in w.memories()],
    "agent list": lambda w: [m.id for m in w.agent("clerk").memories()],
    "world search": lambda w: [h.source_id for h in w.search("Lyon parcels", kinds=["memory"])],
    "agent search": lambda w: [h.source_id for h in w.agent("clerk").search("Lyon parcels", kinds=["memory"])],
    "every kind searched": lambda w: [h.source_id for h in w.search("Lyon parcels") if h.kind == "memory"],
    "context": lambda w: [line for line in long_term(w).splitlines()[1:] if "Lyon" in line],
    "export": lambda w: [r["id"] for r in w.export() if r.get("record") == "memory"],
}


@pytest.mark.parametrize("read", sorted(READS))
def test_an_expired_memory_is_never_returned_and_is_deleted_by_the_read(
    mem: Recall, world: World, clock: Clock, store_location: str, read: str
) -> None:
    world.post("maria", "@clerk where do Lyon parcels go?")
    shared = world.add_memory("Lyon parcels go through the Paris depot", importance=7, ttl=600)
    own = world.agent("clerk").add_memory("Lyon parcels are late on Fridays", importance=7, ttl=900)
    assert READS[read](world), "before it expires, the read finds it"
    clock.advance(901)
    assert READS[read](world) == []
    assert memory_rows(store_location, shared.id) == memory_rows(store_location, own.id) == (0, 0)


def test_an_expired_memory_cannot_be_updated_or_deleted(world: World, clock: Clock, store_location: str) -> None:
    shared = world.add_memory("Lyon parcels go through the Paris depot", ttl=60)
    own = world.agent("clerk").add_memory("Lyon parcels are late", ttl=60)
    clock.advance(60)
    with pytest.raises(UnknownMemoryError):
        world.update_memory(shared, ttl=3600)
    with pytest.raises(UnknownMemoryError):
        world.agent("clerk").delete_memory(own)
    assert memory_rows(store_location, shared.id) == memory_rows(store_location, own.id) == (0, 0)


def test_an_update_moves_or_clears_the_expiry(world: World, clock: Clock) -> None:
    note = world.add_memory("Oven 2 runs hot", ttl=60)
    assert world.update_memory(note, ttl=3600).expires_at == clock.now + timedelta(hours=1)
    clock.advance(120)
    assert [m.id for m in world.memories()] == [note.id]
    assert world.update_memory(note, clear_expiry=True).expires_at is None
    clock.advance(365 * 24 * 3600)
    assert [m.id for m in world.memories()] == [note.id]
    later = clock.now + timedelta(minutes=5)
    assert world.update_memory(note, expires_at=later).expires_at == later
    assert world.update_memory(note, content="Oven 2 runs cold").expires_at == later  # kept when not named
    clock.advance(300)
    assert world.memories() == []


def test_the_background_sweep_deletes_expired_memories_of_every_world(
    mem: Recall, world: World, clock: Clock, store_location: str
) -> None:
    other = mem.world("depot", create=True)
    gone = [world.add_memory("a", ttl=60), other.add_memory("b", ttl=60), world.agent("baker").add_memory("c", ttl=60)]
    kept = [world.add_memory("d", ttl=600), other.add_memory("e")]
    clock.advance(60)
    assert mem.service.memories.purge_expired() == 3
    assert [memory_rows(store_location, m.id) for m in gone] == [(0, 0)] * 3
    assert [memory_rows(store_location, m.id) for m in kept] == [(1, 1)] * 2
    assert mem.service.memories.purge_expired() == 0


def test_the_service_gives_its_indexer_the_sweep(tmp_path: Path) -> None:
    with Recall(tmp_path / "r.db", Settings(embeddings="none", index_interval=60)) as mem:
        assert mem.service.indexer is not None
        chores = [(c.work, c.every) for c in mem.service.indexer._chores]
        assert chores == [(mem.service.memories.purge_expired, SWEEP_INTERVAL)]


class _Idle:
    """An index with nothing to do."""

    def step(self, batch: int = 64, should_stop: Callable[[], bool] | None = None) -> int:
        return 0

    def maintain(self) -> int:
        return 0

    def pending(self) -> int:
        return 0


def test_the_indexer_runs_its_chores_at_most_every_period_and_survives_their_failures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    indexer = BackgroundIndexer(_Idle())
    runs: list[str] = []

    def broken() -> None:
        runs.append("broken")
        raise RuntimeError("the database went away")

    indexer.add_chore(lambda: runs.append("sweep"), every=3600)
    indexer.add_chore(broken, every=3600)
    with caplog.at_level(logging.ERROR, logger="recall.indexer"):
        indexer._round_of_work()
        indexer._round_of_work()
    assert runs == ["sweep", "broken"]  # once each within the period, the failure logged
    assert "the database went away" in caplog.text and indexer._failures == 0


# -- stored, exported, copied and migrated --------------------------------------------------------


def test_an_export_carries_the_expiry_and_the_update_time(tmp_path: Path, clock: Clock) -> None:
    with Recall(tmp_path / "from.db", QUICK) as mem:
        world = mem.world("shop", create=True)
        note = world.add_memory("Oven 2 runs hot", ttl=3600)
        clock.advance(30)
        note = world.update_memory(note, content="Oven 2 runs cold")
        records = list(world.export())
    [record] = [r for r in records if r.get("record") == "memory"]
    assert (record["updated_at"], record["expires_at"]) == (note.updated_at.timestamp(), note.expires_at.timestamp())
    with Recall(tmp_path / "to.db", QUICK) as other:
        [copied] = other.import_world(records).memories()
        assert copied == note
        clock.advance(3600)
        assert other.world("shop").memories() == []


def test_an_export_of_an_earlier_recall_imports_its_memories_unchanged_and_unexpiring(tmp_path: Path) -> None:
    with Recall(tmp_path / "from.db", QUICK) as mem:
        world = mem.world("shop", create=True)
        note = world.add_memory("Oven 2 runs hot", importance=6)
        records = list(world.export())
    for record in records:
        if record.get("record") == "memory":  # as recall wrote memories before they could change
            del record["updated_at"], record["expires_at"]
    lines = [json.dumps(r) for r in records]
    with Recall(tmp_path / "to.db", QUICK) as other:
        [copied] = other.import_world(lines).memories()
        assert (copied.id, copied.content, copied.updated_at, copied.expires_at) == (
            note.id,
            "Oven 2 runs hot",
            note.created_at,
            None,
        )


def test_migrate_copies_the_expiry_and_the_update_time(tmp_path: Path, postgres_url: str, clock: Clock) -> None:
    source = str(tmp_path / "source.db")
    with Recall(source, QUICK) as mem:
        world = mem.world("shop", create=True)
        note = world.add_memory("Oven 2 runs hot", ttl=3600)
        clock.advance(30)
        note = world.update_memory(note, importance=9)
    migrate(source, postgres_url)
    with Recall(postgres_url, QUICK) as copied:
        assert copied.world("shop").memories() == [note]


#: The migration that gave memories `updated_at` and `expires_at`, on each database.
def _migration_of_expiry(migrations: list[tuple[int, str]]) -> int:
    [version] = [v for v, sql in migrations if "ADD COLUMN expires_at" in sql and "notes" in sql]
    return version


def _store_before_expiry(location: str) -> None:
    """A store as recall wrote it just before memories could change or expire: world `old` with
    a shared memory."""
    rows = (
        "INSERT INTO worlds (key, id, name, turn_limit, created_at, tenant) VALUES ('old', 'old', 'Old', NULL, 0.0, '')",
        "INSERT INTO notes (id, world_id, owner, type, content, importance, chat_id, metadata, created_at)"
        " VALUES (7, 'old', '', 'note', 'Flour comes on Mondays', 6, NULL, '{}', 1700000000.5)",
    )
    before = (_migration_of_expiry(sqlite_schema.MIGRATIONS), _migration_of_expiry(postgres_schema.MIGRATIONS))
    store_before(location, before[0] - 1, before[1] - 1, rows, {"notes.id": 8})


def test_a_store_from_before_upgrades_its_memories(empty_store_location: str, clock: Clock) -> None:
    _store_before_expiry(empty_store_location)
    store = open_store(empty_store_location)
    try:
        schema = postgres_schema if empty_store_location.startswith("postgresql://") else sqlite_schema
        assert store.schema_version() == schema.LATEST_VERSION
        old = store.get_memory("old", 7)
        assert old is not None
        created = datetime.fromtimestamp(1700000000.5, UTC)
        assert (old.content, old.created_at, old.updated_at, old.expires_at) == (
            "Flour comes on Mondays",
            created,
            created,
            None,
        )
    finally:
        store.close()
    with Recall(empty_store_location, QUICK) as mem:
        world = mem.world("old")
        changed = world.update_memory(7, content="Flour comes on Fridays", ttl=60)
        assert (changed.id, changed.created_at, changed.updated_at) == (7, created, clock.now)
        assert [h.source_id for h in world.search("Fridays flour", method="bm25")] == [7]
        clock.advance(60)
        assert world.memories() == []

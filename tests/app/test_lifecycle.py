"""Deleting a message, a participant (erasing a person) and a world through the Python API, on
SQLite and PostgreSQL: every row that belongs to it goes, the search index follows (the copy in
memory of every process, vectors included), replies keep a parent that exists, and nothing
else is touched."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from recall import NotFoundError, Recall, Settings, UnknownParticipantError, World
from recall.app.extraction import ExtractionQueue
from recall.core.models import Message, SenderType
from recall.errors import InvalidInputError
from tests.worlds import populate, query, world_rows

QUICK = Settings(index_interval=0, embeddings="none")


@pytest.fixture
def mem(store_location: str) -> Iterator[Recall]:
    with Recall(store_location, QUICK) as recall:
        yield recall


def words(world: World, text: str, kinds: tuple[str, ...] = ("message", "memory", "fact")) -> list[tuple[str, int]]:
    """What a keyword search of the world finds."""
    return [(h.kind, h.source_id) for h in world.search(text, method="bm25", k=50, kinds=kinds)]


def message_ids(world: World) -> list[int]:
    return [m.id for m in world.messages(all_chats=True, limit=1000)]


def test_a_deleted_message_leaves_no_delivery_and_its_replies_keep_a_thread(mem: Recall, store_location: str) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("agent-a")
    world.add_agent("agent-b")
    first = world.post("maria", "@agent-a where is my parcel")
    reply = world.post("agent-a", "@maria it leaves the depot tomorrow", parent=first.id)
    last = world.post("maria", "thanks for the update", parent=reply.id)
    heard = world.agent("agent-b").service.store.heard_counts(world.key, "agent-b")
    assert words(world, "depot") == [("message", reply.id), ("message", last.id)]  # `last` by its context
    other = Recall(store_location, QUICK)  # another process's copy of the index in memory
    try:
        assert words(other.world("w"), "depot")

        removed = world.delete_message(reply.id)

        assert removed["messages"] == 1 and removed["deliveries"] == 2 and removed["reparented"] == 1
        assert message_ids(world) == [first.id, last.id]
        assert world.messages()[-1].parent_id == first.id  # the reply of a reply now answers the first
        assert world.messages()[-1].metadata["thread_id"] == first.id  # the thread keeps its name
        assert query(store_location, "SELECT COUNT(*) FROM deliveries WHERE message_id = ?", (reply.id,)) == [(0,)]
        assert [m.id for m in world.agent("agent-b").inbox()] == [first.id, last.id]
        after = world.service.store.heard_counts(world.key, "agent-b")
        assert after == {None: heard[None] - 1}
        assert words(world, "depot") == [] and words(other.world("w"), "depot") == []
        assert words(world, "thanks") == [("message", last.id)]
    finally:
        other.close()


def test_deleting_a_message_that_is_not_there_says_so_and_changes_nothing(mem: Recall) -> None:
    world = populate(mem)
    elsewhere = mem.world("other", create=True)
    elsewhere.add_human("zoe")
    foreign = elsewhere.post("zoe", "hello")
    before = message_ids(world)
    for missing in (10_000, foreign.id):
        with pytest.raises(NotFoundError, match=f"no message {missing} in world 'w': nothing was deleted"):
            world.delete_message(missing)
    with pytest.raises(InvalidInputError, match="message_id"):
        world.delete_message(0)
    assert message_ids(world) == before and message_ids(elsewhere) == [foreign.id]


def test_a_deleted_agent_takes_what_was_private_to_it_and_its_messages_stay(mem: Recall, store_location: str) -> None:
    world = populate(mem)
    world.agent("agent-a").facts.add("I answer parcels")
    said = [m.id for m in world.messages(all_chats=True, limit=1000) if m.sender == "agent-a"]
    assert words(world, "prefers SMS")

    removed = world.delete_agent("agent-a")

    assert removed["participants"] == 1 and removed["memories"] == 1 and removed["facts"] == 1
    assert removed["notes"] == 1 and removed["observations"] == 2 and removed["messages"] == 0
    rows = world_rows(store_location, "w")
    for table in ("deliveries", "memory_counts", "inbox_marks", "agent_memory", "context_sessions"):
        assert not [r for r in rows[table] if r[0] == "w/agent-a"], table
    assert not [r for r in rows["turn_counters"] if r[1] == "agent-a"]
    assert not rows["observations"] and not [r for r in rows["notes"] if r[2] == "agent-a"]
    assert not [r for r in rows["facts"] if r[2] == "agent:w/agent-a"]
    assert [m.id for m in world.messages(all_chats=True, limit=1000) if m.sender == "agent-a"] == said
    assert words(world, "prefers SMS") == []
    with pytest.raises(UnknownParticipantError):
        world.agent("agent-a")
    # Registered again, it starts afresh: nothing of the old agent is delivered to it.
    world.add_agent("agent-a")
    assert world.agent("agent-a").inbox() == []
    posted = world.post("maria", "@agent-a hello again")
    assert [m.id for m in world.agent("agent-a").inbox()] == [posted.id]


def test_a_participant_deleted_elsewhere_is_not_delivered_to_by_its_old_key(store_location: str) -> None:
    with Recall(store_location, QUICK) as one, Recall(store_location, QUICK) as two:
        world = one.world("w", create=True)
        world.add_human("maria")
        world.add_agent("agent-a")
        world.add_agent("agent-b")
        seen = two.world("w")
        assert seen.agent("agent-b").inbox() == []  # `two` caches agent-b's key
        world.delete_agent("agent-b")
        world.add_agent("agent-b")
        posted = seen.post("maria", "hello both")
        assert [m.id for m in seen.agent("agent-b").inbox()] == [posted.id]
        assert [m.id for m in world.agent("agent-b").inbox()] == [posted.id]


def test_a_human_deleted_without_erase_leaves_its_messages_and_facts(mem: Recall) -> None:
    world = populate(mem)
    sent = [m.id for m in world.messages(all_chats=True, limit=1000) if m.sender == "maria"]
    removed = world.delete_human("maria")
    assert removed["participants"] == 1 and removed["messages"] == removed["facts"] == 0
    assert [h.id for h in world.humans()] == ["bob"]
    assert [m.id for m in world.messages(all_chats=True, limit=1000) if m.sender == "maria"] == sent
    assert len(mem.scope("user:maria").list()) == 2
    with pytest.raises(InvalidInputError, match="not a participant"):
        world.post("maria", "still here?")
    with pytest.raises(UnknownParticipantError, match="unknown human 'maria'"):
        world.delete_human("maria")
    with pytest.raises(UnknownParticipantError, match="unknown agent 'bob'"):
        world.delete_agent("bob")  # a human, not an agent


def test_erasing_a_person_removes_their_messages_facts_and_every_search_trace(tmp_path: object) -> None:
    from pathlib import Path

    location = str(Path(str(tmp_path)) / "erase.db")
    with Recall(location, Settings(index_interval=0)) as mem:  # with the embedding model: vectors too
        world = populate(mem)
        maria = [m for m in world.messages(all_chats=True, limit=1000) if m.sender == "maria"]
        mem.refresh_index()
        assert words(world, "parcel") and mem.search("user:maria", "green tea")
        assert any(h.source_id in {m.id for m in maria} for h in world.search("late delivery", method="vector"))

        removed = world.delete_human("maria", erase=True)

        assert removed["messages"] == len(maria) == 3 and removed["facts"] == 2
        left = world.messages(all_chats=True, limit=1000)
        assert not [m for m in left if m.sender == "maria"] and len(left) == 5
        reply = next(m for m in left if m.content.startswith("@maria it leaves"))
        assert reply.parent_id is None  # it answered maria's message, which began the thread
        assert mem.scope("user:maria").list() == [] and mem.scope("user:maria").sections == {}
        gone = [m.id for m in maria]
        marks = ", ".join("?" * len(gone))
        assert query(location, f"SELECT COUNT(*) FROM deliveries WHERE message_id IN ({marks})", tuple(gone)) == [(0,)]
        assert query(
            location,
            f"SELECT COUNT(*) FROM search_items WHERE kind = 'message' AND source_id IN ({marks})",
            tuple(gone),
        ) == [(0,)]
        assert query(location, "SELECT COUNT(*) FROM search_items WHERE space = 'user:maria'") == [(0,)]
        # Not by her words, not by the context of the replies that followed them, not by meaning.
        assert words(world, "parcel Lisbon invoice tracking", kinds=("message",)) == []
        assert mem.search("user:maria", "green tea") == []
        mem.refresh_index()
        assert not any(h.source_id in gone for h in world.search("late delivery", method="vector", kinds=["message"]))
        assert [h.id for h in world.humans()] == ["bob"]
        assert len([m for m in left if m.sender == "bob"]) == 1


def test_a_deleted_world_leaves_no_row_and_no_search_item(mem: Recall, store_location: str) -> None:
    world = populate(mem)
    other = mem.world("other", create=True)
    other.add_human("zoe")
    kept = other.post("zoe", "a parcel of another world")
    newest = max(message_ids(world))

    removed = world.delete()

    assert removed["participants"] == 4 and removed["messages"] == 8 and removed["facts"] == 2
    assert all(rows == [] for rows in world_rows(store_location, "w").values())
    assert query(store_location, "SELECT COUNT(*) FROM search_items WHERE space = 'w'") == [(0,)]
    assert [w.id for w in mem.worlds()] == ["other"]
    assert [(h.kind, h.source_id) for h in other.search("parcel", method="bm25")] == [("message", kept.id)]
    assert len(mem.scope("user:maria").list()) == 2  # a user's facts belong to the tenant
    again = mem.world("w", create=True)
    again.add_human("maria")
    assert again.post("maria", "new start").id > newest and words(again, "parcel") == []


def test_queued_extractions_of_deleted_things_are_dropped() -> None:
    queue = ExtractionQueue(object(), lambda t, s: ([], {}), lambda t, s, c: None, background=False)  # type: ignore[arg-type]

    def said(message_id: int) -> tuple[Message, ...]:
        from datetime import UTC, datetime

        return (Message(message_id, "w", "maria", SenderType.HUMAN, "hi", datetime.now(UTC)),)

    queue.submit("", "user:maria", "w/agent-a/", said(1))
    queue.submit("", "user:bob", "w/agent-b/", said(2))
    queue.submit("", "user:bob", "v/agent-a/", said(3))
    queue.submit("acme", "user:maria", "w/agent-a/", said(1))
    assert queue.discard("", scopes=["user:maria"]) == 1
    assert queue.discard("", messages=[2]) == 1
    assert queue.discard("", threads="v/") == 1
    assert queue.pending() == [("acme", "user:maria")]

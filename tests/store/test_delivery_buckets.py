"""Deliveries are kept in the order (bucket, message, agent), a bucket being 16 neighbouring agent
keys (`rows.DELIVERY_BUCKET_BITS`), on both stores: a post to many agents writes a few runs of
pages, not one per agent. What each agent reads is unchanged, and stores of the layout before
(by agent, then message) migrate with every delivery and read flag."""

from __future__ import annotations

import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from recall import Recall, Settings
from recall.store import open_store, sql_writes, world_dump
from recall.store.rows import DELIVERY_BUCKET_BITS
from tests.old_stores import store_before
from tests.worlds import query

QUICK = Settings(index_interval=0, embeddings="none")
T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_each_delivery_is_in_its_agents_bucket_and_counts_keep_the_first_heard(store_location: str) -> None:
    with Recall(store_location, QUICK) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        agents = [f"a{i:02d}" for i in range(40)]  # three buckets at least
        for agent in agents:
            world.add_agent(agent)
        first = world.post("maria", "hello everyone")
        side = world.post("maria", "@a03 over here", chat="side")
        world.post("maria", "again, everyone")
        rows = query(store_location, "SELECT bucket, agent_key, message_id FROM deliveries")
        assert len(rows) == 3 * len(agents)
        assert {bucket for bucket, _, _ in rows} == {key >> DELIVERY_BUCKET_BITS for _, key, _ in rows}
        assert all(bucket == key >> DELIVERY_BUCKET_BITS for bucket, key, _ in rows)
        assert len({bucket for bucket, _, _ in rows}) >= 3
        counts = query(store_location, "SELECT chat_id, n, first_id FROM memory_counts")
        assert sorted(set(counts)) == [("", 2, first.id), ("side", 1, side.id)]
        # Every agent still reads its own: inbox, heard counts, what it heard in a chat.
        store = mem.service.store
        for agent in ("a00", "a17", "a39"):
            assert [m.id for m, _ in store.inbox(world.key, agent, True, 10)] == [first.id, side.id, side.id + 1]
            assert store.heard_counts(world.key, agent) == {None: 2, "side": 1}
            assert [m.id for m in store.iter_heard(world.key, agent, "side")] == [side.id]


def checkpoint(db: Any, mode: str) -> int:
    """A checkpoint of `mode` run to its end: the pages in the WAL. While the store's own
    checkpointer (a thread of its own) copies the WAL, SQLite answers busy (with -1 pages): the
    call is made again once it is done. The WAL starts over only at the next write, so the
    pages a post wrote are still counted after the store's thread copied them."""
    deadline = time.monotonic() + 10
    while True:
        busy, frames, _ = db.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        if not busy and frames >= 0:
            return int(frames)
        assert time.monotonic() < deadline, f"the WAL stayed busy: {busy, frames}"
        time.sleep(0.001)


def test_a_post_to_many_agents_writes_a_few_pages_not_one_per_agent(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Recall(str(path), QUICK) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        for i in range(96):
            world.add_agent(f"agent-{i:03d}")
        for n in range(400):  # each agent has more deliveries than a page holds
            world.post("maria", f"warming up {n}")
        db = mem.service.store._db
        checkpoint(db, "TRUNCATE")
        world.post("maria", "@agent-007 one more")
        frames = checkpoint(db, "PASSIVE")
    # 96 agents are 6 buckets: the post writes 16 pages in all. Kept by agent, it wrote a
    # page of deliveries for each agent: 102 pages.
    assert 0 < frames < 40


def test_deleting_messages_takes_each_agents_deliveries_and_counts_down_by_what_it_lost(store_location: str) -> None:
    with Recall(store_location, QUICK) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        early = [f"early-{i:02d}" for i in range(20)]
        for agent in early:
            world.add_agent(agent)
        before = [world.post("maria", f"before {n}") for n in range(3)]
        world.add_agent("late")  # hears only what comes after
        after = world.post("maria", "after")
        side = world.post("maria", "in the side chat", chat="side")
        for message in (before[0], before[1], after):
            world.delete_message(message)
        store = mem.service.store
        # Early agents lost three messages of the main chat, the late one lost one.
        assert store.heard_counts(world.key, "early-07") == {None: 1, "side": 1}
        assert store.heard_counts(world.key, "late") == {"side": 1}
        assert [m.id for m in store.iter_heard(world.key, "early-19", None)] == [before[2].id]
        assert list(store.iter_heard(world.key, "late", None)) == []
        rows = query(store_location, "SELECT message_id, COUNT(*) FROM deliveries GROUP BY message_id")
        assert sorted(rows) == [(before[2].id, 20), (side.id, 21)]


def test_deleting_a_message_costs_the_same_statements_for_ten_agents_or_a_hundred(tmp_path: Path) -> None:
    """The deliveries' deletion and the counts' update are a statement per chat (and per count
    lost), never one per agent: a message of a chat of 30,000 agents took 11 s to delete."""

    def statements(agents: int) -> int:
        with Recall(str(tmp_path / f"{agents}.db"), QUICK) as mem:
            world = mem.world("w", create=True)
            world.add_human("maria")
            for i in range(agents):
                world.add_agent(f"agent-{i:03d}")
            message = world.post("maria", "hello everyone")
            seen: list[str] = []
            mem.service.store._db.set_trace_callback(seen.append)
            assert world.delete_message(message)["deliveries"] == agents
            mem.service.store._db.set_trace_callback(None)
            return len(seen)

    assert statements(10) == statements(100)


def test_a_post_after_another_process_replaced_an_agent_delivers_to_the_new_one(store_location: str) -> None:
    # A post's recipients' keys are cached; another process deleting an agent and registering
    # one of the same id must not leave this one delivering to the deleted agent's key.
    with Recall(store_location, QUICK) as one, Recall(store_location, QUICK) as two:
        world = one.world("w", create=True)
        world.add_human("maria")
        for agent in ("a", "b", "c"):
            world.add_agent(agent)
        world.post("maria", "before")
        other = two.world("w")
        other.delete_agent("b")
        other.add_agent("b")
        after = world.post("maria", "after")
        assert [m.id for m in other.agent("b").inbox()] == [after.id]
        assert [m.id for m in world.agent("b").inbox()] == [after.id]
        keys = {k for (k,) in query(store_location, "SELECT key FROM participants WHERE kind = 'agent'")}
        assert {k for (k,) in query(store_location, "SELECT DISTINCT agent_key FROM deliveries")} == keys


def test_a_world_of_more_agents_than_one_list_of_parameters_holds_is_deleted_whole(store_location: str) -> None:
    # On SQLite, more than 500 values go to a statement as one JSON array (SQLite caps the
    # parameters of a statement): the world's agents' keys here.
    with Recall(store_location, QUICK) as mem:
        world = mem.world("big", create=True)
        world.add_human("maria")
        for i in range(520):
            world.add_agent(f"agent-{i:03d}")
        world.post("maria", "hello everyone")
        kept = mem.world("small", create=True)
        kept.add_human("maria")
        kept.add_agent("alone")
        alone = kept.post("maria", "just you")
        removed = world.delete()
        assert (removed["participants"], removed["deliveries"]) == (521, 520)
        assert query(store_location, "SELECT message_id FROM deliveries") == [(alone.id,)]
        assert query(store_location, "SELECT COUNT(*) FROM memory_counts") == [(1,)]
        assert [m.id for m in kept.agent("alone").inbox()] == [alone.id]


# -- stores of the layout before ---------------------------------------------------------------

SQLITE_BEFORE = 13
POSTGRES_BEFORE = 12

#: Agents 1 and 2 (one bucket) and 20 (another) of world `w`; maria's three messages in two
#: chats; 1 read by agent 1; agent 2 heard only the side chat; agent 20 wrote message 3.
OLD_ROWS = (
    "INSERT INTO worlds (key, id, name, turn_limit, created_at, tenant) VALUES ('w', 'w', 'W', NULL, 0.0, '')",
    "INSERT INTO participants (key, world_id, id, kind, created_at) VALUES (1, 'w', 'one', 'agent', 0.0)",
    "INSERT INTO participants (key, world_id, id, kind, created_at) VALUES (2, 'w', 'two', 'agent', 0.0)",
    "INSERT INTO participants (key, world_id, id, kind, created_at) VALUES (20, 'w', 'twenty', 'agent', 0.0)",
    "INSERT INTO chats (world_id, id, created_at) VALUES ('w', '', 0.0)",
    "INSERT INTO chats (world_id, id, created_at) VALUES ('w', 'side', 0.0)",
    "INSERT INTO messages (id, world_id, chat_id, sender, sender_type, content, created_at)"
    " VALUES (1, 'w', '', 'maria', 'human', 'first', 1.0)",
    "INSERT INTO messages (id, world_id, chat_id, sender, sender_type, content, created_at)"
    " VALUES (2, 'w', 'side', 'maria', 'human', 'second', 2.0)",
    "INSERT INTO messages (id, world_id, chat_id, sender, sender_type, content, created_at)"
    " VALUES (3, 'w', '', 'twenty', 'agent', 'third', 3.0)",
    "INSERT INTO deliveries (agent_key, message_id, own, read_at) VALUES (1, 1, 0, 5.0)",
    "INSERT INTO deliveries (agent_key, message_id, own, read_at) VALUES (1, 2, 0, NULL)",
    "INSERT INTO deliveries (agent_key, message_id, own, read_at) VALUES (1, 3, 0, NULL)",
    "INSERT INTO deliveries (agent_key, message_id, own, read_at) VALUES (2, 2, 0, NULL)",
    "INSERT INTO deliveries (agent_key, message_id, own, read_at) VALUES (20, 1, 0, NULL)",
    "INSERT INTO deliveries (agent_key, message_id, own, read_at) VALUES (20, 2, 0, NULL)",
    "INSERT INTO deliveries (agent_key, message_id, own, read_at) VALUES (20, 3, 1, NULL)",
    "INSERT INTO memory_counts (agent_key, chat_id, n) VALUES (1, '', 2)",
    "INSERT INTO memory_counts (agent_key, chat_id, n) VALUES (1, 'side', 1)",
    "INSERT INTO memory_counts (agent_key, chat_id, n) VALUES (2, 'side', 1)",
    "INSERT INTO memory_counts (agent_key, chat_id, n) VALUES (20, '', 2)",
    "INSERT INTO memory_counts (agent_key, chat_id, n) VALUES (20, 'side', 1)",
)


def test_a_store_of_the_layout_before_keeps_every_delivery_and_read_flag(empty_store_location: str) -> None:
    store_before(
        empty_store_location, SQLITE_BEFORE, POSTGRES_BEFORE, OLD_ROWS, {"messages_id_seq": 4, "participants.key": 21}
    )
    with closing(open_store(empty_store_location)) as store:
        rows = query(empty_store_location, "SELECT bucket, agent_key, message_id, own, read_at FROM deliveries")
        assert sorted(rows) == [
            (0, 1, 1, 0, 5.0),
            (0, 1, 2, 0, None),
            (0, 1, 3, 0, None),
            (0, 2, 2, 0, None),
            (1, 20, 1, 0, None),
            (1, 20, 2, 0, None),
            (1, 20, 3, 1, None),
        ]
        # Each count's first message: its agent's first delivery (a floor for the walk).
        firsts = query(empty_store_location, "SELECT agent_key, chat_id, first_id FROM memory_counts")
        assert sorted(firsts) == [(1, "", 1), (1, "side", 1), (2, "side", 2), (20, "", 1), (20, "side", 1)]
        assert [(m.id, read) for m, read in store.inbox("w", "one", False, 10)] == [(1, True), (2, False), (3, False)]
        assert [m.id for m, _ in store.inbox("w", "one", True, 10)] == [2, 3]
        assert [m.id for m in store.iter_heard("w", "one", None)] == [3, 1]
        assert [m.id for m in store.iter_heard("w", "two", None)] == []
        assert [m.id for m in store.iter_heard("w", "twenty", None)] == [3, 1]  # its own included
        assert [m.id for m in store.iter_heard("w", "two", "side")] == [2]
        assert store.heard_ids("w", "twenty", [1, 2, 3]) == {1, 2, 3}
        assert store.heard_ids("w", "two", [1, 2, 3]) == {2}
        # Marking read and deleting still find the rows where they are now.
        assert store.mark_read_many("w", {"one": [2], "two": [2]}, T0 + timedelta(seconds=1)) == 2
        assert [m.id for m, _ in store.inbox("w", "one", True, 10)] == [3]
        store.delete_messages("w", [3])
        assert query(empty_store_location, "SELECT COUNT(*) FROM deliveries WHERE message_id = 3") == [(0,)]


def test_an_export_reads_each_bucket_a_page_of_messages_at_a_time(
    store_location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages of 5 rows: 3 agents of one bucket hear each message, so pages end inside messages.
    monkeypatch.setattr(world_dump, "PAGE", 5)
    with Recall(store_location, QUICK) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        for agent in ("a", "b", "c"):
            world.add_agent(agent)
        posted = [world.post("maria", f"message {n}").id for n in range(7)]
        world.agent("b").inbox(mark_read=True, limit=2)
        exported = [r for r in world.export() if r.get("record") == "delivery"]
    assert sorted((r["agent"], r["message_id"], r["read_at"] is not None) for r in exported) == sorted(
        (agent, message_id, agent == "b" and message_id in posted[:2])
        for agent in ("a", "b", "c")
        for message_id in posted
    )


def test_an_import_counts_each_agents_memory_again_from_its_deliveries(tmp_path: Path) -> None:
    # Counts are derived rows: an export without them (or with stale ones) imports whole.
    with Recall(str(tmp_path / "from.db"), QUICK) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("a")
        first = world.post("maria", "hello")
        side = world.post("maria", "over here", chat="side")
        records = [r for r in world.export() if r.get("record") != "memory_count"]
    end = records[-1]
    end["counts"].pop("memory_count", None)
    with Recall(str(tmp_path / "to.db"), QUICK) as mem:
        world = mem.import_world(records)
        store = mem.service.store
        assert store.heard_counts(world.key, "a") == {None: 1, "side": 1}
        assert [m.id for m in store.iter_heard(world.key, "a", "side")] == [side.id]
        assert [m.id for m in store.iter_heard(world.key, "a", None)] == [first.id]


def test_the_recipient_lists_kept_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each sender's post goes to every other agent: a list per sender, each as long as the world.
    monkeypatch.setattr(sql_writes, "GROUP_LISTS_KEPT", 4)
    with Recall(str(tmp_path / "s.db"), QUICK) as mem:
        world = mem.world("w", create=True)
        agents = [f"agent-{i}" for i in range(10)]
        for agent in agents:
            world.add_agent(agent)
        for agent in agents:
            world.post(agent, f"hello from {agent}")
        assert 0 < len(mem.service.store._groups) <= 4
        # Delivered alike before and after the lists were dropped.
        assert all(len(world.agent(agent).inbox()) == len(agents) - 1 for agent in agents)

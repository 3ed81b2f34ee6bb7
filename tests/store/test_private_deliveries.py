"""Stores written before recall delivered a message for one agent to that agent alone (issue 43,
point 1): opening one takes the deliveries of its tool results and LangChain system messages to
every other agent, and keeps everything else. Both stores."""

from __future__ import annotations

from contextlib import closing

import psycopg

from recall import Recall, Settings
from recall.store import postgres_schema, sqlite_schema
from recall.store.sqlite import sqlite3 as store_sqlite3
from tests.worlds import query

QUICK = Settings(index_interval=0, embeddings="none")


def write(location: str, statements: list[str]) -> None:
    if location.startswith("postgresql://"):
        with psycopg.connect(location) as conn:
            for statement in statements:
                conn.execute(statement.encode())
        return
    with closing(store_sqlite3.connect(location)) as db:
        for statement in statements:
            db.execute(statement)
        db.commit()


def test_old_deliveries_of_private_messages_to_other_agents_go(store_location: str) -> None:
    with Recall(store_location, QUICK) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        for agent in ("a", "B"):
            world.add_agent(agent)
        public = world.post("maria", "hello everyone")
        result = world.agent("a").post_tool_result("the vault code is 7781", call_id="call_1")
        call = world.agent("B").context(record=True).call_id  # no copy of the messages (call_copies "ids")
        mem.service.calls.writer.flush()
        keys = dict(query(store_location, "SELECT id, key FROM participants WHERE kind = 'agent'"))
    assert query(store_location, "SELECT senders FROM model_calls WHERE id = ?", (call,)) == [("\tmaria\t",)]
    # As an older recall stored them: a tool result and a LangChain system message of `a`,
    # delivered to every agent (b too), with the metadata recall wrote then.
    old_system = result.id + 1
    # The migration under test; it and those after it run again when the store is opened.
    migration = "16" if not store_location.startswith("postgresql://") else "14"
    bucket = keys["B"] >> 4
    write(
        store_location,
        [
            f"INSERT INTO deliveries (bucket, agent_key, message_id, own) VALUES ({bucket}, {keys['B']}, {result.id}, 0)",
            "INSERT INTO messages (id, world_id, chat_id, sender, sender_type, content, metadata, created_at)"
            f" VALUES ({old_system}, 'w', '', 'system', 'system', 'be terse',"
            ' \'{"langchain_system_for": "A"}\', 1.0)',
            *(
                f"INSERT INTO deliveries (bucket, agent_key, message_id, own) VALUES ({k >> 4}, {k}, {old_system}, 0)"
                for k in keys.values()
            ),
            # Each delivery counted in its agent's memory of the chat, as posting counts it.
            f"UPDATE memory_counts SET n = n + 2 WHERE agent_key = {keys['B']}",
            f"UPDATE memory_counts SET n = n + 1 WHERE agent_key = {keys['a']}",
            f"DELETE FROM schema_migrations WHERE version >= {migration}",
        ],
    )
    assert {
        r[0] for r in query(store_location, "SELECT agent_key FROM deliveries WHERE message_id = ?", (result.id,))
    } == {keys["a"], keys["B"]}
    with Recall(store_location, QUICK) as mem:
        store = mem.service.store
        assert store.heard_ids("w", "B", [public.id, result.id, old_system]) == {public.id}
        assert store.heard_ids("w", "a", [public.id, result.id, old_system]) == {public.id, result.id, old_system}
        # Their memory counts lost what they lost: b heard one message of the chat, a three.
        assert store.heard_counts("w", "B") == {None: 1} and store.heard_counts("w", "a") == {None: 3}
        # Calls stored before may hold a copy: each is marked, and a deletion takes the mark off
        # those without one.
        marked = query(store_location, "SELECT senders FROM model_calls WHERE id = ?", (call,))
        assert marked == [("\tmaria\t#full\t",)]
        mem.world("w").delete_message(public)
        assert query(store_location, "SELECT senders FROM model_calls WHERE id = ?", (call,)) == [("\tmaria\t",)]
    assert int(query(store_location, "SELECT MAX(version) FROM schema_migrations")[0][0]) == (
        sqlite_schema.LATEST_VERSION
        if not store_location.startswith("postgresql://")
        else postgres_schema.LATEST_VERSION
    )

"""A world with a row in every table a world owns, and readers of a store's tables, for the
tests of deleting, exporting and importing worlds."""

from __future__ import annotations

from contextlib import closing
from datetime import UTC, datetime
from typing import Any

import psycopg

from recall import PostRequest, Recall, World
from recall.store.sqlite import sqlite3 as store_sqlite3

T0 = datetime(2025, 5, 8, 13, 56, 7, 123457, tzinfo=UTC)

#: Tables no world owns, or only the search index's (derived: an import indexes what it stored,
#: vectors are made again), each with why it is not compared.
NOT_COMPARED = {
    "schema_migrations": "the store's own migrations",
    "store_version": "PostgreSQL's counter of writes for other replicas' caches",
    "rate_buckets": "PostgreSQL's rate-limit tokens: request counting, not data",
    "sqlite_sequence": "SQLite's AUTOINCREMENT counters (checked: a new post gets a higher id)",
    "search_items": "the search index, derived from messages, memories and facts (checked by searching)",
    "search_deleted": "the search index's log of deleted items",
    "search_state": "the search index's progress",
    "fact_sources": "which messages extracted facts were read from: not exported (an imported fact records none)",
    "model_calls": "recorded model calls, a log of what contexts held: not exported (tests/test_calls.py)",
    "extraction_jobs": "queued fact extractions, work to do: not exported (tests/llm/test_extraction_kept.py)",
}
#: Internal surrogate keys, compared through what they name (world_id, agent_key), and what is
#: worked out from them (a delivery's bucket, from its agent's key).
SURROGATES = {("worlds", "key"), ("participants", "key"), ("deliveries", "bucket")}


def query(location: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read a store with a connection of its own."""
    if location.startswith("postgresql://"):
        with psycopg.connect(location) as conn:
            return [tuple(r) for r in conn.execute(sql.replace("?", "%s"), params).fetchall()]
    with closing(store_sqlite3.connect(location)) as db:
        return [tuple(r) for r in db.execute(sql, params).fetchall()]


def tables(location: str) -> dict[str, list[str]]:
    """Every table of the store with its columns, by name (a table rebuilt on one store and
    altered on the other holds them in another order)."""
    if location.startswith("postgresql://"):
        rows = query(
            location,
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
            " ORDER BY table_name, ordinal_position",
        )
        found: dict[str, list[str]] = {}
        for table, column in rows:
            found.setdefault(str(table), []).append(str(column))
        return {table: sorted(columns) for table, columns in found.items()}
    names = [r[0] for r in query(location, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {name: sorted(r[1] for r in query(location, f"PRAGMA table_info({name})")) for name in names}


def world_rows(location: str, world: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the store that belongs to world `world` (by id), table by table and column
    by column (but the search index's tables and the surrogate keys: NOT_COMPARED,
    SURROGATES), with the world's and agents' keys replaced by their ids, sorted."""
    dumped: dict[str, list[tuple[Any, ...]]] = {}
    humans = {r[0].lower() for r in query(location, _PEOPLE + " AND p.kind = 'human'", (world,))}
    agents = {r[0].lower() for r in query(location, _PEOPLE + " AND p.kind = 'agent'", (world,))}
    scopes = {f"world:{world}"} | {f"agent:{world}/{a}" for a in agents} | {f"user:{h}" for h in humans}
    for table, columns in tables(location).items():
        if table in NOT_COMPARED:
            continue
        picked = []
        for column in columns:
            if (table, column) in SURROGATES:
                continue
            if column == "world_id":
                picked.append("(SELECT w.id FROM worlds w WHERE w.key = t.world_id)")
            elif column == "agent_key":
                picked.append(
                    "(SELECT w.id || '/' || p.id FROM participants p JOIN worlds w ON w.key = p.world_id"
                    " WHERE p.key = t.agent_key)"
                )
            else:
                picked.append(f"t.{column}")
        rows = query(location, f"SELECT {', '.join(picked)} FROM {table} t")
        kept = []
        for row in rows:
            values = dict(zip([c for c in columns if (table, c) not in SURROGATES], row, strict=True))
            if table == "worlds":
                mine = values["id"].lower() == world
            elif "world_id" in values:
                mine = str(values["world_id"]).lower() == world
            elif "agent_key" in values:
                mine = str(values["agent_key"]).lower().startswith(f"{world}/")
            else:
                mine = values["scope"] in scopes
            if mine:
                kept.append(tuple(row))
        dumped[table] = sorted(kept, key=repr)
    return dumped


_PEOPLE = "SELECT p.id FROM participants p JOIN worlds w ON w.key = p.world_id WHERE w.id = ?"


def populate(mem: Recall, world_id: str = "w", tenant: str = "") -> World:
    """A world with rows in every table it owns: two agents with settings, two humans, two chats,
    threads, imported (read) history, read and unread deliveries, context sessions, turn
    counters, observations and actions, notes with and without expiry, shared and private
    memories (one expiring, one changed since it was written), and facts and sections of the world's, an agent's and a user's scopes."""
    world = mem.world(world_id, create=True, tenant=tenant, turn_limit=3, name="Support team")
    world.add_agent("agent-a", system_prompt="You are A.", goals=["help"], history_limit=7, channel="sms")
    world.add_agent("agent-b", system_prompt="You are B.", context_filter="all")
    world.add_human("maria")
    world.add_human("bob")
    world.import_messages(
        [
            PostRequest("maria", "Earlier: my invoice for March was doubled", created_at=T0),
            PostRequest("agent-a", "Earlier: we refunded the double charge", created_at=T0.timestamp() + 60.5),
        ]
    )
    first = world.post("maria", "@agent-a my parcel to Lisbon is late", channel="sms", metadata={"tag": "é ✓"})
    reply = world.post("agent-a", "@maria it leaves the depot tomorrow", parent=first.id, idempotency_key="k1")
    world.post("maria", "thanks! and the tracking number?", parent=reply.id)
    world.post("bob", "@agent-b my laptop screen cracked", chat="t1")
    world.post("agent-b", "@bob a courier comes on Monday", chat="t1")
    world.post("system", "maintenance tonight", chat="t1")
    agent_a, agent_b = world.agent("agent-a"), world.agent("agent-b")
    agent_a.inbox(mark_read=True, limit=2)
    service = mem.service
    service.deliveries.check(world.key, "agent-b", include_context=True, session="s1", chat_id="t1")
    agent_a.record_llm_call()
    agent_b.record_llm_call()
    agent_b.record_llm_call()
    agent_a.observe({"time": 1.5, "position": [2, 1], "collected": 1, "items": {"coin": [[2, 1.6]]}})
    agent_a.act({"time": 2.0, "kind": "move", "position": [2.4, 0.4]})
    service.agent_state.remember(world.key, "agent-a", "mood", {"calm": True, "level": 0.25})
    service.agent_state.remember(world.key, "agent-b", "cache", [1, 2, 3], ttl=3600)
    world.add_memory("Invoices are re-issued within 2 days", importance=7, chat="t1", source="policy", ttl=86400 * 365)
    sms = agent_a.add_memory("Maria prefers texts", type="preference", importance=5)
    agent_a.update_memory(sms, content="Maria prefers SMS", importance=6)  # changed in place: updated_at moves
    world.facts.add("The team works from Lisbon", category="context", confidence=0.9)
    agent_b.facts.add("I handle hardware tickets", category="behavior")
    maria = mem.scope("user:maria", tenant=tenant)
    maria.add("Drinks only green tea", category="preference", confidence=0.95)
    maria.add("Say 'Maria', not 'Mary'", category="correction", avoid="Mary", source=str(first.id))
    maria.set_sections(work_context="Runs the Lisbon office", top_of_mind="a late parcel")
    return world

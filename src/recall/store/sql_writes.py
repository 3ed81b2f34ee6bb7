"""The writes both stores share: the same SQL on SQLite and PostgreSQL, written once with `?`
placeholders (`_execute` gives each database its own). Writes that truly differ (message ids
and fan-out, locks, world creation) stay in each store."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import Any

from recall.core.facts import Fact, NewFact
from recall.core.models import Message
from recall.errors import ConflictError
from recall.store.base import AlsoWrite
from recall.store.records import (
    ContextSession,
    FactWrite,
    Memory,
    NewMemory,
    NewMessage,
    Note,
    ParticipantRecord,
    WorldRecord,
)
from recall.store.rows import (
    FACT_COLUMNS,
    MESSAGE_COLUMNS,
    NOTE_COLUMNS,
    chat_key,
    fact_record,
    merged_sections,
    message_record,
    new_world_key,
    note_record,
    recipient_key,
    ts,
    world_id_of,
)
from recall.store.sql_reads import SQLReads
from recall.store.world_records import AlsoRemove, Removed

#: Recipient lists whose keys are kept (`SQLWrites._group_keys`): a list of 10,000 agents holds
#: ~150 KB, and a world where each agent posts has a list per sender.
GROUP_LISTS_KEPT = 256


class SQLWrites(SQLReads):
    """Mixed into both stores, after their connection handling."""

    #: What a read inside a write transaction appends to lock the rows it will change ('' where
    #: the whole database is locked for the transaction, as on SQLite).
    LOCK_ROWS = ""
    #: The same for rows a transaction only needs to stay (a delete of them waits for it).
    KEEP_ROWS = ""
    #: The store's version (`change_version`) that this process's caches of worlds and
    #: participants were last checked against.
    _seen_version: int | None

    def _write(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _key_array(self, keys: Sequence[int]) -> str:
        """Keys as one statement parameter: a JSON array (SQLite's `json_each`) or an array
        literal (PostgreSQL's `unnest`)."""
        raise NotImplementedError

    def _agent_keys(self, db: Any, world_id: str, agents: Iterable[str]) -> dict[str, int]:
        """Keys of the world's agents by lowercased id, cached; read again when one of `agents`
        is missing (added since, perhaps by another process). A deleted agent's key goes with
        every cached key (`_forget_cached_keys`, also when another process changed the store)."""
        keys = self._world_keys.get(world_id.lower())
        if keys is None or any(a.lower() not in keys for a in agents):
            rows = self._execute(
                db, "SELECT id, key FROM participants WHERE world_id = ? AND kind = 'agent'", (world_id,)
            ).fetchall()
            keys = self._world_keys[world_id.lower()] = {str(r[0]).lower(): int(r[1]) for r in rows}
        return keys

    def _group_keys(self, db: Any, world_id: str, agents: tuple[str, ...]) -> str:
        """The keys of a recipient list as one statement parameter, cached: the posts of a world
        reuse a few lists (every agent but the sender), and a list of a thousand agents took a
        read of the world's agents and ~1 ms of Python per post."""
        cache_key = (world_id.lower(), agents)
        found = self._groups.get(cache_key)
        if found is None:
            if len(self._groups) >= GROUP_LISTS_KEPT:
                self._groups.clear()  # each of 10,000 agents posting has a list of its own
            keys = self._agent_keys(db, world_id, agents)
            found = self._groups[cache_key] = self._key_array([recipient_key(keys, agent) for agent in agents])
        return found

    def _reset_turns(self, db: Any, world_id: str, agents: Collection[str]) -> None:
        """Give `agents` their turns back (counters to 0). The world's counters above zero are
        the agents that answered since the last human message, a few: they are read and
        matched here, where looking up each of a post's thousand recipients took 0.46 ms."""
        running = self._execute(
            db, "SELECT agent_id FROM turn_counters WHERE world_id = ? AND count != 0", (world_id,)
        ).fetchall()
        wanted = {agent.lower() for agent in agents}
        reset = [row[0] for row in running if row[0].lower() in wanted]
        if reset:
            agent_is, params = self._one_of("agent_id", reset)
            self._execute(
                db, f"UPDATE turn_counters SET count = 0 WHERE world_id = ? AND {agent_is}", (world_id, *params)
            )

    def _stored_by_idempotency_key(self, db: Any, world_id: str, batch: Sequence[NewMessage]) -> dict[str, Message]:
        """The world's stored messages whose idempotency keys the batch names, by key."""
        keys = sorted({new.idempotency_key for new in batch if new.idempotency_key is not None})
        if not keys:
            return {}
        key_is, params = self._one_of("m.idempotency_key", keys)
        rows = self._execute(
            db, f"SELECT {MESSAGE_COLUMNS}, m.idempotency_key FROM messages m WHERE m.world_id = ? AND {key_is}",
            (world_id, *params),
        ).fetchall()  # fmt: skip
        return {row[12]: message_record(row) for row in rows}

    def mark_read(self, world_id: str, agent_id: str, message_ids: Sequence[int], at: datetime) -> int:
        """Mark one agent's messages read (`mark_read_many`); how many were unread."""
        return self.mark_read_many(world_id, {agent_id: message_ids}, at)

    def mark_read_many(self, world_id: str, marks: Mapping[str, Sequence[int]], at: datetime) -> int:
        """Mark each agent's messages read, all in one transaction; how many were unread."""
        raise NotImplementedError

    def _write_pipelined(self) -> AbstractContextManager[Any]:
        """`_write`, with its statements sent without waiting for each one's result where the
        database allows it (PostgreSQL's pipeline): a result is waited for only where it is
        read (`fetchone`, `fetchall`), so a transaction whose statements read nothing between
        them costs one round trip. Only for transactions that read no `rowcount`, which is not
        known until the results come."""
        return self._write()

    def _execute(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement written with `?` placeholders in the open write transaction `db`;
        the cursor (for fetchone, fetchall, rowcount)."""
        raise NotImplementedError

    def _lock_worlds(self, db: Any) -> None:
        """Create one world at a time across processes (SQLite's write lock already does)."""

    def _changed(self, db: Any) -> None:
        """Tell other processes' caches of worlds and participants to drop: they compare the
        store's version (`change_version`) and re-read when it moved."""
        version = int(
            self._execute(db, "UPDATE store_version SET version = version + 1 RETURNING version").fetchone()[0]
        )
        if self._seen_version == version - 1:
            # This process's own change, after every other it has seen: its callers drop what
            # they cached themselves, so the move is not another process's to react to.
            self._seen_version = version

    def _saw_version(self, version: int) -> int:
        """The store's version as just read: when it moved since the last, another process
        changed worlds or participants, and every cached key may be stale."""
        if version != self._seen_version:
            self._seen_version = version
            self._forget_cached_keys()
        return version

    def _forget_cached_keys(self) -> None:
        raise NotImplementedError

    def schema_version(self) -> int:
        return int(self._read("SELECT MAX(version) FROM schema_migrations")[0][0])

    # -- worlds and participants ----------------------------------------------------------

    def create_world(
        self, world_id: str, name: str, turn_limit: int | None, created_at: datetime, tenant: str = ""
    ) -> WorldRecord:
        with self._write() as db:
            self._lock_worlds(db)
            if self._execute(db, "SELECT 1 FROM worlds WHERE tenant = ? AND id = ?", (tenant, world_id)).fetchone():
                # Says how to get the world instead, so a setup script that runs twice is easy to fix.
                raise ConflictError(
                    f"world {world_id!r} already exists: to use it, open it (Recall.world({world_id!r}, "
                    "create=True) creates it only when missing; `recall world create --exist-ok`)"
                )
            key = new_world_key(
                world_id,
                tenant,
                lambda k: self._execute(db, "SELECT 1 FROM worlds WHERE key = ?", (k,)).fetchone() is not None,
            )
            self._execute(
                db,
                "INSERT INTO worlds (key, id, name, turn_limit, created_at, tenant) VALUES (?, ?, ?, ?, ?, ?)",
                (key, world_id, name, turn_limit, ts(created_at), tenant),
            )
            self._changed(db)
        return WorldRecord(world_id, name, created_at, turn_limit, tenant, key)

    def add_participant(self, record: ParticipantRecord) -> ParticipantRecord:
        with self._write() as db:
            self._execute(
                db,
                "INSERT INTO participants (world_id, id, kind, profile, created_at) VALUES (?, ?, ?, ?, ?)",
                (record.world_id, record.id, record.kind, json.dumps(record.profile), ts(record.created_at)),
            )
            self._changed(db)
        return replace(record, world_id=world_id_of(record.world_id))

    def set_profile(self, world_id: str, participant_id: str, profile: dict[str, Any]) -> bool:
        with self._write() as db:
            cursor = self._execute(
                db,
                "UPDATE participants SET profile = ? WHERE world_id = ? AND id = ?",
                (json.dumps(profile), world_id, participant_id),
            )
            self._changed(db)
        return bool(cursor.rowcount)

    # -- turn counters --------------------------------------------------------------------

    def set_turn_count(self, world_id: str, agent_id: str, count: int) -> None:
        with self._write() as db:
            self._execute(
                db,
                "INSERT INTO turn_counters (world_id, agent_id, count) VALUES (?, ?, ?)"
                " ON CONFLICT (world_id, agent_id) DO UPDATE SET count = excluded.count",
                (world_id, agent_id, count),
            )

    def increment_turns(self, world_id: str, agent_id: str) -> int:
        with self._write() as db:
            row = self._execute(
                db,
                "INSERT INTO turn_counters (world_id, agent_id, count) VALUES (?, ?, 1)"
                " ON CONFLICT (world_id, agent_id) DO UPDATE SET count = turn_counters.count + 1 RETURNING count",
                (world_id, agent_id),
            ).fetchone()
            return int(row[0])

    # -- observations and actions ---------------------------------------------------------

    def add_observation(
        self, world_id: str, agent_id: str, kind: str, sim_time: float, data: dict[str, Any], created_at: datetime
    ) -> int:
        with self._write() as db:
            row = self._execute(
                db,
                "INSERT INTO observations (world_id, agent_id, kind, sim_time, data, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (world_id, agent_id, kind, sim_time, json.dumps(data), ts(created_at)),
            ).fetchone()
            return int(row[0])

    # -- an agent's notes (private key-value entries) ----------------------------------------

    def set_note(self, world_id: str, agent_id: str, item: Note) -> None:
        key = self._memory_key(world_id, agent_id)
        expires = None if item.expires_at is None else ts(item.expires_at)
        with self._write() as db:
            self._execute(
                db,
                "INSERT INTO agent_memory (agent_key, key, value, updated_at, expires_at) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (agent_key, key) DO UPDATE SET value = excluded.value,"
                " updated_at = excluded.updated_at, expires_at = excluded.expires_at",
                (key, item.key, json.dumps(item.value), ts(item.updated_at), expires),
            )

    def delete_note(self, world_id: str, agent_id: str, key: str, now: datetime) -> bool:
        agent = self._memory_key(world_id, agent_id)
        with self._write() as db:
            # Expired entries go too, but only a live one counts as forgotten.
            rows = self._execute(
                db, "DELETE FROM agent_memory WHERE agent_key = ? AND key = ? RETURNING expires_at", (agent, key)
            ).fetchall()
        return bool(rows) and (rows[0][0] is None or rows[0][0] > ts(now))

    # -- context once ---------------------------------------------------------------------

    def set_context_session(
        self, world_id: str, agent_id: str, session: str, chat_id: str | None, state: ContextSession
    ) -> None:
        agent = self._memory_key(world_id, agent_id)
        with self._write() as db:
            self._execute(
                db,
                "INSERT INTO context_sessions (agent_key, session, chat_id, last_sent_id, refreshed_at, recalled_digest)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent_key, session, chat_id) DO UPDATE SET"
                " last_sent_id = excluded.last_sent_id, refreshed_at = excluded.refreshed_at,"
                " recalled_digest = excluded.recalled_digest",
                (agent, session, chat_key(chat_id), state.last_sent_id, ts(state.refreshed_at), state.recalled_digest),
            )

    # -- facts and their scope's sections ---------------------------------------------------

    def change_facts(
        self,
        tenant: str,
        scope: str,
        now: datetime,
        *,
        add: Sequence[NewFact] = (),
        remove_ids: Sequence[int] = (),
        update: Mapping[int, NewFact] | None = None,
        sections: Mapping[str, str] | None = None,
        clear: bool = False,
        sources: Sequence[int] = (),
        then: Callable[[Any, Sequence[int]], None] | None = None,
    ) -> FactWrite:
        """Every change to a scope's facts in one transaction: clear, remove, update, add, and
        merge sections (an empty text deletes a section). `sources` are the messages the change
        was read from (an extraction's): each added or updated fact records them, and should
        one of them be gone (erased meanwhile), nothing is written (`FactWrite.stale`). `then`
        runs in the same transaction with the ids of the facts removed, when any were."""
        at = ts(now)
        wanted = sorted({int(i) for i in sources})
        with self._write() as db:

            def returned(sql: str, params: Sequence[Any]) -> Iterator[Any]:
                yield from self._execute(db, sql, params).fetchall()

            # The sources are kept until this commits: an erase deleting one waits, then finds these facts.
            found = sum(
                len(list(returned(f"SELECT id FROM messages WHERE {one_of}{self.KEEP_ROWS}", params)))
                for one_of, params in self._ids_in("id", wanted)
            )
            if found < len(wanted):
                return FactWrite(stale=True)

            removed: list[int] = []
            if clear:
                removed += [
                    r[0]
                    for r in returned("DELETE FROM facts WHERE tenant = ? AND scope = ? RETURNING id", (tenant, scope))
                ]
                self._execute(db, "DELETE FROM fact_sections WHERE tenant = ? AND scope = ?", (tenant, scope))
            for fact_id in remove_ids:
                removed += [r[0] for r in returned(
                    "DELETE FROM facts WHERE tenant = ? AND scope = ? AND id = ? RETURNING id", (tenant, scope, fact_id)
                )]  # fmt: skip
            updated: list[Fact] = []
            for fact_id, new in (update or {}).items():
                updated += [fact_record(r) for r in returned(
                    "UPDATE facts SET content = ?, category = ?, confidence = ?, source = ?, avoid = ?, updated_at = ?"
                    f" WHERE tenant = ? AND scope = ? AND id = ? RETURNING {FACT_COLUMNS}",
                    (new.content, new.category, new.confidence, new.source, new.avoid, at, tenant, scope, fact_id),
                )]  # fmt: skip
            added: list[Fact] = []
            for new in add:
                added += [fact_record(r) for r in returned(
                    "INSERT INTO facts (tenant, scope, content, category, confidence, source, avoid, created_at,"
                    f" updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {FACT_COLUMNS}",
                    (tenant, scope, new.content, new.category, new.confidence, new.source, new.avoid, at, at),
                )]  # fmt: skip
            if sections:
                current = self._execute(
                    db,
                    f"SELECT sections FROM fact_sections WHERE tenant = ? AND scope = ?{self.LOCK_ROWS}",
                    (tenant, scope),
                ).fetchone()
                self._execute(
                    db,
                    "INSERT INTO fact_sections (tenant, scope, sections, updated_at) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (tenant, scope) DO UPDATE SET sections = excluded.sections,"
                    " updated_at = excluded.updated_at",
                    (tenant, scope, merged_sections(current[0] if current else None, sections), at),
                )
            for fact in (*added, *updated):
                for message_id in wanted:
                    self._execute(
                        db,
                        "INSERT INTO fact_sources (fact_id, message_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                        (fact.id, message_id),
                    )
            if then is not None and removed:
                then(db, removed)
        return FactWrite(tuple(added), tuple(updated), tuple(removed))

    # -- long-term memories ---------------------------------------------------------------

    def add_memory(self, world_id: str, note: NewMemory) -> Memory:
        expires = None if note.expires_at is None else ts(note.expires_at)
        with self._write() as db:
            row = self._execute(
                db,
                "INSERT INTO notes (world_id, owner, type, content, importance, chat_id, metadata, created_at,"
                f" updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {NOTE_COLUMNS}",
                (
                    world_id, note.owner, note.type, note.content, note.importance, note.chat_id,
                    json.dumps(note.metadata), ts(note.created_at), ts(note.created_at), expires,
                ),
            ).fetchone()  # fmt: skip
        return note_record(row)

    def update_memory(self, world_id: str, memory: Memory, then: AlsoWrite | None = None) -> Memory | None:
        expires = None if memory.expires_at is None else ts(memory.expires_at)
        with self._write() as db:
            row = self._execute(
                db,
                "UPDATE notes SET type = ?, content = ?, importance = ?, metadata = ?, updated_at = ?, expires_at = ?"
                f" WHERE world_id = ? AND id = ? RETURNING {NOTE_COLUMNS}",
                (
                    memory.type, memory.content, memory.importance, json.dumps(memory.metadata),
                    ts(memory.updated_at), expires, world_id, memory.id,
                ),
            ).fetchone()  # fmt: skip
            if row is None:
                return None
            stored = note_record(row)
            if then is not None:
                then(db, stored)
        return stored

    def delete_memory(self, world_id: str, note_id: int, then: Callable[[Any], None] | None = None) -> bool:
        """Delete one memory; `then` runs in the same transaction when it went."""
        with self._write() as db:
            gone = self._execute(db, "DELETE FROM notes WHERE world_id = ? AND id = ?", (world_id, note_id)).rowcount
            if gone and then is not None:
                then(db)
            return bool(gone)

    def delete_expired_memories(self, world_id: str | None, now: datetime, then: AlsoRemove | None = None) -> Removed:
        # `expires_at IS NOT NULL` spelt out: the condition of the partial index notes_by_expiry.
        where = "expires_at IS NOT NULL AND expires_at <= ?"
        params: tuple[Any, ...] = (ts(now),)
        if world_id is not None:
            where, params = f"{where} AND world_id = ?", (*params, world_id)
        if not self._read(f"SELECT 1 FROM notes WHERE {where} LIMIT 1", params):
            return Removed()
        with self._write() as db:
            ids = tuple(
                int(r[0]) for r in self._execute(db, f"DELETE FROM notes WHERE {where} RETURNING id", params).fetchall()
            )
            removed = Removed(memories=ids)
            if ids and then is not None:
                then(db, removed)
        return removed

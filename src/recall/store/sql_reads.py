"""The reads both stores share: the same SQL on SQLite and PostgreSQL, written with `?`
placeholders (the PostgreSQL store turns them into `%s`). Writes differ more (ids, arrays,
locks) and stay in each store, but for the inbox's low-water mark (`RAISE_INBOX_MARKS`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from recall.core.facts import Fact
from recall.core.models import Message
from recall.errors import RecallError
from recall.store.records import ContextSession, Memory, Note, ParticipantRecord, WorldRecord
from recall.store.rows import (
    FACT_COLUMNS,
    MEMORY_PAGE,
    MESSAGE_COLUMNS,
    NOTE_COLUMNS,
    WORLD_COLUMNS,
    chat_id_of,
    chat_key,
    dt,
    fact_record,
    load_json,
    memory_item,
    message_record,
    note_record,
    of_agent,
    participant_record,
    ts,
    world_record,
)

#: An agent's oldest unread deliveries from its inbox mark up: `{key}` is the expression of the
#: agent's key (three times), and the one parameter the limit. The scan passes the rows of the
#: agent's bucket-mates above the mark too (`rows.DELIVERY_BUCKET_BITS`).
UNREAD_OF_AGENT = (
    f"SELECT message_id FROM deliveries WHERE {of_agent('{key}')} AND own = 0 AND read_at IS NULL"
    " AND message_id >= COALESCE((SELECT low FROM inbox_marks WHERE agent_key = {key}), 0)"
    " ORDER BY message_id LIMIT ?"
)

#: After agents read some deliveries: raise each one's inbox low-water mark (every delivery
#: below it is read) to its first unread delivery at or above the mark, or to one past its last
#: delivery when all are read. The unread scan starts there, so it passes each read row once
#: over the agent's life instead of at every inbox check. The mark never falls: on PostgreSQL a
#: concurrent ack may see this one's rows still unread and compute a lower mark (still true,
#: since rows only ever become read and new deliveries get higher ids). `{key}` is the
#: expression of an agent's key, `{source}` where the keys come from: one statement for all.
RAISE_INBOX_MARKS = (
    "INSERT INTO inbox_marks (agent_key, low) SELECT {key}, COALESCE("
    f" (SELECT d.message_id FROM deliveries d WHERE {of_agent('{key}', 'd.')} AND d.own = 0 AND d.read_at IS NULL"
    "  AND d.message_id >= COALESCE((SELECT i.low FROM inbox_marks i WHERE i.agent_key = {key}), 0)"
    "  ORDER BY d.message_id LIMIT 1),"
    f" COALESCE((SELECT d.message_id FROM deliveries d WHERE {of_agent('{key}', 'd.')}"
    "  ORDER BY d.message_id DESC LIMIT 1), 0) + 1){source}"
    " WHERE true ON CONFLICT (agent_key) DO UPDATE SET low = excluded.low WHERE excluded.low > inbox_marks.low"
)


#: Ids one statement names at most (each a parameter on SQLite).
ID_BATCH = 500


class SQLReads:
    """Read methods of the store protocol over `_read(sql, params)`."""

    _keys: dict[tuple[str, str], int]
    #: Each world's agents' keys by lowercased id, and recipient lists' keys as one statement
    #: parameter (`SQLWrites._group_keys`); dropped with `_keys`.
    _world_keys: dict[str, dict[str, int]]
    _groups: dict[tuple[str, tuple[str, ...]], str]

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def _one_of(self, column: str, values: Sequence[Any], cast: str = "") -> tuple[str, tuple[Any, ...]]:
        """A condition that `column` is one of `values`, and its parameters (`cast`: the
        PostgreSQL type of the list, e.g. '::citext[]')."""
        raise NotImplementedError

    def _ids_in(self, column: str, ids: Iterable[int]) -> Iterator[tuple[str, tuple[Any, ...]]]:
        """Conditions that `column` is one of `ids` (each once, in the order given) and their
        parameters, ID_BATCH ids a statement."""
        unique = list(dict.fromkeys(int(i) for i in ids))
        for start in range(0, len(unique), ID_BATCH):
            yield self._one_of(column, unique[start : start + ID_BATCH], "::bigint[]")

    def _heard_floor(self, key: int, chat: str) -> int | None:
        """The lowest message id the agent `key` can have heard in `chat` (None: nothing heard
        there): where a walk for what it heard there stops. Its memory count of the chat keeps
        it (a count is there exactly while the agent has deliveries in the chat)."""
        rows = self._read("SELECT first_id FROM memory_counts WHERE agent_key = ? AND chat_id = ?", (key, chat))
        return int(rows[0][0]) if rows else None

    #: The join that walks the chat's messages first (SQLite's CROSS JOIN keeps the order written).
    _WALK_JOIN = "JOIN"

    def _heard_page(self, key: int, world_id: str, chat: str, before: int, floor: int) -> list[Any]:
        """One page of what the agent `key` heard in a chat, ids below `before` (and from
        `floor`), newest first: down the chat's messages, each one's delivery looked up.
        (Driven from the deliveries instead, the agent's bucket by message, PostgreSQL with a
        plan made before a freshly loaded table had statistics read the whole bucket for each
        page: ~100 ms at 10,000 messages.)"""
        return self._read(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m {self._WALK_JOIN} deliveries d"
            f" ON {of_agent('?', 'd.')} AND d.message_id = m.id"
            " WHERE m.world_id = ? AND m.chat_id = ? AND m.id < ? AND m.id >= ?"
            " ORDER BY m.id DESC LIMIT ?",
            (key, key, world_id, chat, before, floor, MEMORY_PAGE),
        )

    def iter_heard(
        self, world_id: str, agent_id: str, chat_id: str | None, before: int | None = None
    ) -> Iterator[Message]:
        """What the agent heard in one chat (its deliveries and own messages), newest first,
        read a page at a time."""
        key = self._agent_key(world_id, agent_id)
        if key is None:
            return
        chat = chat_key(chat_id)
        floor = self._heard_floor(key, chat)
        if floor is None:
            return
        cursor_id = before if before is not None else 2**63 - 1
        while True:
            rows = self._heard_page(key, world_id, chat, cursor_id, floor)
            for row in rows:
                yield message_record(row)
            if len(rows) < MEMORY_PAGE:
                return
            cursor_id = rows[-1][0]

    def heard_among(self, world_id: str, agent_id: str, message_ids: Sequence[int]) -> dict[int, Message]:
        """The messages among `message_ids` that the agent heard (its deliveries, own messages
        included), by id: one look-up of the deliveries' key per id."""
        key = self._agent_key(world_id, agent_id)
        if key is None:
            return {}
        found: dict[int, Message] = {}
        for one_of, params in self._ids_in("d.message_id", message_ids):
            rows = self._read(
                f"SELECT {MESSAGE_COLUMNS} FROM deliveries d JOIN messages m ON m.id = d.message_id"
                f" WHERE {of_agent('?', 'd.')} AND {one_of} AND m.world_id = ?",
                (key, key, *params, world_id),
            )
            found.update((row[0], message_record(row)) for row in rows)
        return found

    def heard_ids(self, world_id: str, agent_id: str, message_ids: Sequence[int]) -> set[int]:
        """Which of `message_ids` the agent heard: what `heard_among` checks, from the
        deliveries alone (an agent's key is its world's, as are the messages delivered to it)."""
        key = self._agent_key(world_id, agent_id)
        heard: set[int] = set()
        if key is None:
            return heard
        for one_of, params in self._ids_in("message_id", message_ids):
            rows = self._read(
                f"SELECT message_id FROM deliveries WHERE {of_agent('?')} AND {one_of}", (key, key, *params)
            )
            heard.update(int(row[0]) for row in rows)
        return heard

    def messages_among(self, world_id: str, message_ids: Sequence[int]) -> dict[int, Message]:
        """The world's messages among `message_ids`, by id (each looked up by its id)."""
        found: dict[int, Message] = {}
        for one_of, params in self._ids_in("m.id", message_ids):
            # The world is checked on the rows (as in `turns_before`).
            rows = self._read(f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE {one_of}", params)
            found.update((row[0], message_record(row)) for row in rows if row[1] == world_id)
        return found

    def turns_before(self, world_id: str, message_ids: Sequence[int]) -> dict[int, int]:
        """For each message, the id of the message just before it in its chat (none for the
        first), by message id."""
        found: dict[int, int] = {}
        for one_of, params in self._ids_in("m.id", message_ids):
            # The world is checked on the rows: as a condition it led SQLite to walk the world's
            # whole (world_id, chat_id, id) index instead of looking each id up.
            rows = self._read(
                "SELECT m.id, (SELECT MAX(p.id) FROM messages p"
                " WHERE p.world_id = m.world_id AND p.chat_id = m.chat_id AND p.id < m.id), m.world_id"
                f" FROM messages m WHERE {one_of}",
                params,
            )
            found.update({int(r[0]): int(r[1]) for r in rows if r[1] is not None and r[2] == world_id})
        return found

    def list_facts_in(self, tenant: str, scopes: Sequence[str]) -> list[Fact]:
        if not scopes:
            return []
        scope_is, params = self._one_of("scope", scopes)
        rows = self._read(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE tenant = ? AND {scope_is} ORDER BY id", (tenant, *params)
        )
        return [fact_record(r) for r in rows]

    def list_memories(
        self,
        world_id: str,
        owners: Sequence[str],
        min_importance: int = 1,
        limit: int = 100,
        now: datetime | None = None,
    ) -> list[Memory]:
        """Memories visible to `owners` ('' = shared), most important first, then newest; with
        `now`, those expired by then left out."""
        owner_is, params = self._one_of("owner", owners, "::citext[]")
        live, at = ("", ()) if now is None else (" AND (expires_at IS NULL OR expires_at > ?)", (ts(now),))
        rows = self._read(
            f"SELECT {NOTE_COLUMNS} FROM notes WHERE world_id = ? AND {owner_is} AND importance >= ?{live}"
            " ORDER BY importance DESC, id DESC LIMIT ?",
            (world_id, *params, min_importance, *at, limit),
        )
        return [note_record(r) for r in rows]

    def get_world(self, world_id: str) -> WorldRecord | None:
        """The world whose key is `world_id`."""
        rows = self._read(f"SELECT {WORLD_COLUMNS} FROM worlds WHERE key = ?", (world_id,))
        return world_record(rows[0]) if rows else None

    def find_worlds(self, world_id: str, tenant: str | None = None) -> list[WorldRecord]:
        if tenant is None:
            rows = self._read(f"SELECT {WORLD_COLUMNS} FROM worlds WHERE id = ? ORDER BY tenant", (world_id,))
        else:
            rows = self._read(f"SELECT {WORLD_COLUMNS} FROM worlds WHERE tenant = ? AND id = ?", (tenant, world_id))
        return [world_record(r) for r in rows]

    def list_worlds(self, tenant: str | None = None) -> list[WorldRecord]:
        if tenant is None:
            rows = self._read(f"SELECT {WORLD_COLUMNS} FROM worlds ORDER BY id, tenant")
        else:
            rows = self._read(f"SELECT {WORLD_COLUMNS} FROM worlds WHERE tenant = ? ORDER BY id", (tenant,))
        return [world_record(r) for r in rows]

    def get_participant(self, world_id: str, participant_id: str) -> ParticipantRecord | None:
        rows = self._read(
            "SELECT world_id, id, kind, profile, created_at FROM participants WHERE world_id = ? AND id = ?",
            (world_id, participant_id),
        )
        return participant_record(rows[0]) if rows else None

    def list_participants(self, world_id: str) -> list[ParticipantRecord]:
        rows = self._read(
            "SELECT world_id, id, kind, profile, created_at FROM participants WHERE world_id = ? ORDER BY kind, id",
            (world_id,),
        )
        return [participant_record(r) for r in rows]

    def _agent_key(self, world_id: str, agent_id: str) -> int | None:
        """The key of an agent, or None for anyone else. Keys never change, so they are cached (a
        deleted participant's go with every cached key: `_forget_cached_keys`)."""
        cache_key = (world_id.lower(), agent_id.lower())
        key = self._keys.get(cache_key)
        if key is None:
            rows = self._read(
                "SELECT key FROM participants WHERE world_id = ? AND id = ? AND kind = 'agent'", (world_id, agent_id)
            )
            if not rows:
                return None
            key = self._keys[cache_key] = int(rows[0][0])
        return key

    def get_message(self, world_id: str, message_id: int) -> Message | None:
        rows = self._read(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.world_id = ? AND m.id = ?", (world_id, message_id)
        )
        return message_record(rows[0]) if rows else None

    def list_messages(
        self, world_id: str, chat_id: str | None = None, after: int = 0, limit: int = 100, any_chat: bool = False
    ) -> list[Message]:
        if any_chat:
            sql = f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.world_id = ? AND m.id > ? ORDER BY m.id LIMIT ?"
            params: tuple[Any, ...] = (world_id, after, limit)
        else:
            sql = (
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.world_id = ? AND m.chat_id = ? AND m.id > ?"
                " ORDER BY m.id LIMIT ?"
            )
            params = (world_id, chat_key(chat_id), after, limit)
        return [message_record(r) for r in self._read(sql, params)]

    def newest_messages(
        self,
        world_id: str,
        chat_id: str | None,
        *,
        before: int,
        after: int = 0,
        limit: int = 100,
        excluding: Sequence[int] = (),
    ) -> list[Message]:
        """The chat's messages with `after` < id < `before`, newest first, at most `limit` (the
        chat's index read from its end), but those in `excluding` (passed over by the database,
        never read: an adapter's hidden items)."""
        skip, skipped = self._one_of("m.id", list(excluding), "::bigint[]") if excluding else ("", ())
        return [
            message_record(r)
            for r in self._read(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.world_id = ? AND m.chat_id = ? AND m.id < ?"
                f" AND m.id > ?{f' AND NOT ({skip})' if skip else ''} ORDER BY m.id DESC LIMIT ?",
                (world_id, chat_key(chat_id), before, after, *skipped, limit),
            )
        ]

    def inbox(
        self, world_id: str, agent_id: str, unread_only: bool = True, limit: int = 100, after: int = 0
    ) -> list[tuple[Message, bool]]:
        """Deliveries to the agent with ids above `after`, oldest first (FIFO), each with whether it was read."""
        key = self._agent_key(world_id, agent_id)
        if key is None:
            return []
        if unread_only:
            sql = (
                f"SELECT {MESSAGE_COLUMNS}, 0 FROM deliveries d JOIN messages m ON m.id = d.message_id"
                f" WHERE {of_agent('?', 'd.')} AND d.message_id > ? AND d.own = 0 AND d.read_at IS NULL"
                " ORDER BY d.message_id LIMIT ?"
            )
            after = max(after, self._inbox_low(key) - 1)
        else:
            sql = (
                f"SELECT {MESSAGE_COLUMNS}, d.read_at IS NOT NULL FROM deliveries d"
                " JOIN messages m ON m.id = d.message_id"
                f" WHERE {of_agent('?', 'd.')} AND d.message_id > ? AND d.own = 0 ORDER BY d.message_id LIMIT ?"
            )
        rows = self._read(sql, (key, key, after, limit))
        return [(message_record(r), bool(r[12])) for r in rows]

    def unread_inboxes(self, world_id: str, agent_ids: Sequence[str], limit: int) -> dict[str, list[Message]]:
        """Each agent's oldest `limit` unread deliveries (what `inbox(unread_only=True)` reads),
        for many agents at once: the checks one post wakes. A message many of them share is
        read and decoded once."""
        keys: dict[str, int] = {}
        for agent in agent_ids:
            key = self._agent_key(world_id, agent)
            if key is not None:
                keys[agent] = key
        pairs = self._unread_pairs(list(keys.values()), limit)
        messages = self.messages_among(world_id, sorted({message_id for _, message_id in pairs}))
        by_key: dict[int, list[Message]] = {key: [] for key in keys.values()}
        for key, message_id in pairs:
            if message_id in messages:
                by_key[key].append(messages[message_id])
        return {agent: by_key[key] for agent, key in keys.items()}

    def _unread_pairs(self, keys: Sequence[int], limit: int) -> list[tuple[int, int]]:
        """(agent key, message id) of each agent's oldest `limit` unread deliveries, oldest first."""
        raise NotImplementedError

    def _inbox_low(self, key: int) -> int:
        """Every delivery to the agent below this message id is read (see `RAISE_INBOX_MARKS`)."""
        rows = self._read("SELECT low FROM inbox_marks WHERE agent_key = ?", (key,))
        return int(rows[0][0]) if rows else 0

    def list_chats(self, world_id: str) -> list[tuple[str | None, int]]:
        rows = self._read(
            "SELECT c.id, (SELECT COUNT(*) FROM messages m WHERE m.world_id = c.world_id AND m.chat_id = c.id)"
            " FROM chats c WHERE c.world_id = ? ORDER BY c.created_at, c.id",
            (world_id,),
        )
        return [(chat_id_of(r[0]), int(r[1])) for r in rows]

    def heard_counts(self, world_id: str, agent_id: str) -> dict[str | None, int]:
        key = self._agent_key(world_id, agent_id)
        if key is None:
            return {}
        rows = self._read("SELECT chat_id, n FROM memory_counts WHERE agent_key = ?", (key,))
        return {chat_id_of(r[0]): int(r[1]) for r in rows}

    def turn_count(self, world_id: str, agent_id: str) -> int:
        rows = self._read("SELECT count FROM turn_counters WHERE world_id = ? AND agent_id = ?", (world_id, agent_id))
        return int(rows[0][0]) if rows else 0

    def recent_observations(self, world_id: str, agent_id: str, kind: str, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` observations (or actions) of the agent, oldest first."""
        rows = self._read(
            "SELECT data FROM observations WHERE world_id = ? AND agent_id = ? AND kind = ? ORDER BY id DESC LIMIT ?",
            (world_id, agent_id, kind, limit),
        )
        return [load_json(r[0]) for r in reversed(rows)]

    def _memory_key(self, world_id: str, agent_id: str) -> int:
        key = self._agent_key(world_id, agent_id)
        if key is None:
            raise RecallError(f"{agent_id!r} is not an agent of world {world_id!r}")
        return key

    def get_note(self, world_id: str, agent_id: str, key: str, now: datetime) -> Note | None:
        rows = self._read(
            "SELECT key, value, updated_at, expires_at FROM agent_memory WHERE agent_key = ? AND key = ?"
            " AND (expires_at IS NULL OR expires_at > ?)",
            (self._memory_key(world_id, agent_id), key, ts(now)),
        )
        return memory_item(rows[0]) if rows else None

    def list_memory(self, world_id: str, agent_id: str, now: datetime) -> list[Note]:
        rows = self._read(
            "SELECT key, value, updated_at, expires_at FROM agent_memory WHERE agent_key = ?"
            " AND (expires_at IS NULL OR expires_at > ?) ORDER BY key",
            (self._memory_key(world_id, agent_id), ts(now)),
        )
        return [memory_item(r) for r in rows]

    def get_context_session(
        self, world_id: str, agent_id: str, session: str, chat_id: str | None
    ) -> ContextSession | None:
        rows = self._read(
            "SELECT last_sent_id, refreshed_at, recalled_digest FROM context_sessions WHERE agent_key = ? AND session = ? AND chat_id = ?",
            (self._memory_key(world_id, agent_id), session, chat_key(chat_id)),
        )
        return ContextSession(int(rows[0][0]), dt(rows[0][1]), str(rows[0][2])) if rows else None

    def list_facts(self, tenant: str, scope: str) -> list[Fact]:
        rows = self._read(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE tenant = ? AND scope = ? ORDER BY id", (tenant, scope)
        )
        return [fact_record(r) for r in rows]

    def get_fact(self, tenant: str, scope: str, fact_id: int) -> Fact | None:
        rows = self._read(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE tenant = ? AND scope = ? AND id = ?",
            (tenant, scope, fact_id),
        )
        return fact_record(rows[0]) if rows else None

    def get_sections(self, tenant: str, scope: str) -> dict[str, str]:
        rows = self._read("SELECT sections FROM fact_sections WHERE tenant = ? AND scope = ?", (tenant, scope))
        return dict(json.loads(rows[0][0])) if rows else {}

    def list_fact_scopes(self, tenant: str) -> list[tuple[str, int]]:
        rows = self._read("SELECT scope, COUNT(*) FROM facts WHERE tenant = ? GROUP BY scope ORDER BY scope", (tenant,))
        return [(r[0], int(r[1])) for r in rows]

    def get_memory(self, world_id: str, note_id: int) -> Memory | None:
        rows = self._read(f"SELECT {NOTE_COLUMNS} FROM notes WHERE world_id = ? AND id = ?", (world_id, note_id))
        return note_record(rows[0]) if rows else None

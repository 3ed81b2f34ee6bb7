"""Deleting a world, a participant or messages with every row that belongs to them, in one
transaction: the same SQL on SQLite and PostgreSQL (`?` placeholders, `_one_of` for lists).

What goes with what (docs/http-api.md, "Deleting and exporting"):

- a world: its participants, chats, messages, deliveries and read state (inbox marks, memory
  counts, context sessions), agents' notes, turn counters, observations, long-term memories,
  and the facts of the scopes the service names (the world's and its agents');
- an agent: its deliveries and read state, notes, turn counter, observations, private
  long-term memories and the facts of its scope; the messages it wrote stay (others heard them)
  unless erased;
- a human: the participant; with `erase`, also every message it sent and the facts of the
  scopes the service names (its `user:ID`);
- a message: its deliveries (no agent keeps a read or unread copy of it), one less in each
  memory count; replies to it become replies to its parent (or to nothing, when it began its
  thread), so every `parent_id` names a message that exists. A thread keeps its `thread_id`
  (in the replies' metadata): it names the thread, not a message to fetch.

The search index is the service's to update: every deletion returns the ids it removed
(`Removed`), and the messages whose indexed context quoted a removed one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recall.store.call_log import SQLCalls
from recall.store.rows import delivery_bucket
from recall.store.world_records import AlsoRemove, FactScopes, Removed

#: Tables keyed by an agent's key (`participants.key`) besides `deliveries` and `agent_memory`.
_KEYED_BY_AGENT = ("inbox_marks", "memory_counts", "context_sessions", "model_calls")


@dataclass(frozen=True)
class _Gone:
    messages: tuple[int, ...] = ()
    deliveries: int = 0
    successors: tuple[int, ...] = ()
    reparented: tuple[int, ...] = ()


class SQLDeletes(SQLCalls):
    """Deletions shared by both stores."""

    def _forget_world_rows(self, db: Any, world_id: str, agent_id: str | None) -> None:
        """Rows one database keeps besides the shared tables (PostgreSQL's rate buckets), of a
        world or of one of its agents."""

    def _forget_cached_keys(self) -> None:
        """Drop the caches of participants' keys: a deleted participant's key must not be used
        for a participant of the same id registered later."""
        self._keys.clear()
        self._world_keys.clear()
        self._groups.clear()

    def _scrub(self) -> None:
        """After a deletion committed: what the database can do so that no copy of the deleted
        text stays readable on disk (SQLite: `SQLiteStore._scrub`; PostgreSQL: see
        docs/postgresql.md)."""

    def _column_of(self, db: Any, sql: str, params: Sequence[Any]) -> tuple[int, ...]:
        return tuple(int(r[0]) for r in self._execute(db, sql, params).fetchall())

    # -- worlds ---------------------------------------------------------------------------

    def delete_world(self, world_id: str, facts: FactScopes, then: AlsoRemove | None = None) -> Removed | None:
        """Delete the world whose key is `world_id` with everything in it, and the facts of
        `facts`; None when there is no such world. `then` runs in the same transaction."""
        with self._write() as db:
            if not self._execute(db, f"SELECT 1 FROM worlds WHERE key = ?{self.LOCK_ROWS}", (world_id,)).fetchone():
                return None
            keys = self._column_of(db, "SELECT key FROM participants WHERE world_id = ?", (world_id,))
            messages = self._column_of(db, "SELECT id FROM messages WHERE world_id = ? ORDER BY id", (world_id,))
            deliveries, notes = self._delete_agent_rows(db, keys)
            memories = self._column_of(db, "DELETE FROM notes WHERE world_id = ? RETURNING id", (world_id,))
            observations = self._execute(db, "DELETE FROM observations WHERE world_id = ?", (world_id,)).rowcount
            for table in ("turn_counters", "messages", "chats", "participants"):
                self._execute(db, f"DELETE FROM {table} WHERE world_id = ?", (world_id,))
            removed_facts = self._delete_facts(db, facts)
            self._forget_world_rows(db, world_id, None)
            self._execute(db, "DELETE FROM worlds WHERE key = ?", (world_id,))
            self._changed(db)
            removed = Removed(len(keys), messages, deliveries, memories, removed_facts, notes, int(observations))
            if then is not None:
                then(db, removed)
        self._forget_cached_keys()
        self._scrub()
        return removed

    # -- participants ---------------------------------------------------------------------

    def delete_participant(
        self,
        world_id: str,
        participant_id: str,
        *,
        erase: bool = False,
        facts: FactScopes | None = None,
        then: AlsoRemove | None = None,
    ) -> Removed | None:
        """Delete a participant of the world (by key) with what belongs to it (see the module's
        notes); with `erase`, every message it sent too; and the facts of `facts`. None when
        the world has no participant of that id. `then` runs in the same transaction."""
        with self._write() as db:
            row = self._execute(
                db, f"SELECT key, id, kind FROM participants WHERE world_id = ? AND id = ?{self.LOCK_ROWS}",
                (world_id, participant_id),
            ).fetchone()  # fmt: skip
            if row is None:
                return None
            key, stored_id, kind = int(row[0]), str(row[1]), str(row[2])
            gone = _Gone()
            if erase:
                sent = self._column_of(
                    db,
                    "SELECT id FROM messages WHERE world_id = ? AND lower(sender) = lower(?) AND sender_type = ?"
                    " ORDER BY id",
                    (world_id, stored_id, kind),
                )
                gone = self._delete_messages(db, world_id, sent)
            deliveries = notes = observations = 0
            memories: tuple[int, ...] = ()
            if kind == "agent":
                deliveries, notes = self._delete_agent_rows(db, (key,))
                observations = int(
                    self._execute(
                        db, "DELETE FROM observations WHERE world_id = ? AND agent_id = ?", (world_id, stored_id)
                    ).rowcount
                )
                self._execute(
                    db, "DELETE FROM turn_counters WHERE world_id = ? AND agent_id = ?", (world_id, stored_id)
                )
                memories = self._column_of(
                    db, "DELETE FROM notes WHERE world_id = ? AND owner = ? RETURNING id", (world_id, stored_id)
                )
                self._forget_world_rows(db, world_id, stored_id)
            removed_facts = self._delete_facts(db, facts) if facts is not None else ()
            if erase:  # and what was extracted from its messages, in whatever scope it went
                removed_facts = tuple(sorted({*removed_facts, *self._delete_facts_read_from(db, gone.messages)}))
            self._execute(db, "DELETE FROM participants WHERE key = ?", (key,))
            self._changed(db)
            removed = Removed(
                1, gone.messages, gone.deliveries + deliveries, memories, removed_facts, notes, observations,
                gone.successors, gone.reparented,
            )  # fmt: skip
            if then is not None:
                then(db, removed)
        self._forget_cached_keys()
        self._scrub()
        return removed

    def _buckets_of(self, keys: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
        """The condition that a delivery is in the buckets of these agents (the table's order
        starts with the bucket: `rows.DELIVERY_BUCKET_BITS`), and its parameters."""
        return self._one_of("bucket", sorted({delivery_bucket(int(key)) for key in keys}), "::bigint[]")

    def _delete_agent_rows(self, db: Any, keys: Sequence[int]) -> tuple[int, int]:
        """Every row keyed by these agents' keys; (deliveries, notes) removed."""
        if not keys:
            return 0, 0
        key_is, params = self._one_of("agent_key", keys, "::bigint[]")
        bucket_is, buckets = self._buckets_of(keys)
        deliveries = int(
            self._execute(db, f"DELETE FROM deliveries WHERE {bucket_is} AND {key_is}", (*buckets, *params)).rowcount
        )
        notes = int(self._execute(db, f"DELETE FROM agent_memory WHERE {key_is}", params).rowcount)
        for table in _KEYED_BY_AGENT:
            self._execute(db, f"DELETE FROM {table} WHERE {key_is}", params)
        return deliveries, notes

    def _delete_facts(self, db: Any, facts: FactScopes) -> tuple[int, ...]:
        if not facts.scopes:
            return ()
        scope_is, params = self._one_of("scope", facts.scopes)
        removed = self._column_of(
            db, f"DELETE FROM facts WHERE tenant = ? AND {scope_is} RETURNING id", (facts.tenant, *params)
        )
        self._execute(db, f"DELETE FROM fact_sections WHERE tenant = ? AND {scope_is}", (facts.tenant, *params))
        return tuple(sorted(removed))

    def _delete_facts_read_from(self, db: Any, message_ids: Sequence[int]) -> tuple[int, ...]:
        """Delete the facts an extraction read any of these messages for (`fact_sources`)."""
        removed: list[int] = []
        for one_of, params in self._ids_in("message_id", message_ids):
            removed += self._column_of(
                db,
                f"DELETE FROM facts WHERE id IN (SELECT fact_id FROM fact_sources WHERE {one_of}) RETURNING id",
                params,
            )
        return tuple(removed)

    # -- messages -------------------------------------------------------------------------

    def delete_messages(self, world_id: str, message_ids: Sequence[int], then: AlsoRemove | None = None) -> Removed:
        """Delete these messages of the world (by key) with their deliveries; replies to them
        move up to the nearest parent that stays. Ids of other worlds, or of no message, are
        left alone (`Removed.messages` says which went). `then` runs in the same transaction."""
        with self._write() as db:
            gone = self._delete_messages(db, world_id, sorted({int(i) for i in message_ids}))
            removed = Removed(0, gone.messages, gone.deliveries, successors=gone.successors, reparented=gone.reparented)
            if then is not None and removed.messages:
                then(db, removed)
        if removed.messages:
            self._scrub()
        return removed

    def _delete_messages(self, db: Any, world_id: str, message_ids: Sequence[int]) -> _Gone:
        found: dict[int, tuple[str, int | None]] = {}
        for id_is, params in self._ids_in("id", message_ids):
            for r in self._execute(
                db, f"SELECT id, chat_id, parent_id FROM messages WHERE world_id = ? AND {id_is}", (world_id, *params)
            ).fetchall():
                found[int(r[0])] = (str(r[1]), None if r[2] is None else int(r[2]))
        if not found:
            return _Gone()
        gone = sorted(found)
        deliveries = self._delete_deliveries(db, world_id, found)
        reparented = self._reparent(db, world_id, found)
        for id_is, params in self._ids_in("id", gone):
            self._execute(db, f"DELETE FROM messages WHERE world_id = ? AND {id_is}", (world_id, *params))
        successors: set[int] = set()
        for message_id in gone:
            after = self._execute(
                db,
                "SELECT MIN(id) FROM messages WHERE world_id = ? AND chat_id = ? AND id > ?",
                (world_id, found[message_id][0], message_id),
            ).fetchone()
            if after is not None and after[0] is not None:
                successors.add(int(after[0]))
        return _Gone(tuple(gone), deliveries, tuple(sorted(successors)), reparented)

    def _delete_deliveries(self, db: Any, world_id: str, found: dict[int, tuple[str, int | None]]) -> int:
        """Delete the messages' deliveries (found in the buckets of the world's agents, where the
        table's key starts), each agent's memory count of the chat down by what it lost."""
        keys = self._column_of(db, "SELECT key FROM participants WHERE world_id = ? AND kind = 'agent'", (world_id,))
        if not keys:
            return 0
        # A message id is the store's, so (bucket, message) finds its deliveries; naming the
        # agents too made SQLite probe every (bucket, message, agent) combination.
        bucket_is, buckets = self._buckets_of(keys)
        per_chat: Counter[tuple[int, str]] = Counter()
        for id_is, id_params in self._ids_in("message_id", sorted(found)):
            rows = self._execute(
                db,
                f"DELETE FROM deliveries WHERE {bucket_is} AND {id_is} RETURNING agent_key, message_id",
                (*buckets, *id_params),
            ).fetchall()
            per_chat.update((int(r[0]), found[int(r[1])][0]) for r in rows)
        # One statement per chat and count removed (in the usual case every agent of a chat lost
        # the same number), not two per agent: a message of a chat of 30,000 agents took 11 s.
        lost: dict[tuple[str, int], list[int]] = {}
        for (key, chat), n in per_chat.items():
            lost.setdefault((chat, n), []).append(key)
        for (chat, n), agent_keys in lost.items():
            for agent_is, params in self._ids_in("agent_key", agent_keys):
                self._execute(
                    db, f"UPDATE memory_counts SET n = n - ? WHERE chat_id = ? AND {agent_is}", (n, chat, *params)
                )
                self._execute(
                    db, f"DELETE FROM memory_counts WHERE chat_id = ? AND {agent_is} AND n <= 0", (chat, *params)
                )
        return sum(per_chat.values())

    def _reparent(self, db: Any, world_id: str, found: dict[int, tuple[str, int | None]]) -> tuple[int, ...]:
        """Replies to removed messages that stay become replies to the nearest ancestor that stays."""

        def staying(parent: int | None) -> int | None:
            while parent is not None and parent in found:
                parent = found[parent][1]
            return parent

        moved: list[int] = []
        first = min(found)
        for parent_is, params in self._ids_in("parent_id", sorted(found)):
            replies = self._execute(
                db,
                # `parent_id IS NOT NULL` spelt out: the condition of the partial index messages_by_parent.
                f"SELECT id, parent_id FROM messages WHERE world_id = ? AND id > ? AND parent_id IS NOT NULL AND {parent_is}",
                (world_id, first, *params),
            ).fetchall()
            for reply, parent in replies:
                if int(reply) not in found:
                    self._execute(db, "UPDATE messages SET parent_id = ? WHERE id = ?", (staying(int(parent)), reply))
                    moved.append(int(reply))
        return tuple(sorted(moved))

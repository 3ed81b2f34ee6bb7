"""Keyed memories: long-term memories an adapter addresses by a namespace and a key, unique per
world and owner (the LangGraph store's items), found through the index on that address:

- one by its address (`keyed_memory`), written over in place (`put_keyed_memories`: an upsert,
  so two processes writing the same address at once leave one memory; a batch in one transaction);
- a namespace and everything below it as one range of the index: a namespace is its labels
  joined by '.', which no label holds, so the namespaces below `a.b` are those from `a.b.` up
  to `a.b/` ('/' follows '.');
- newest write first (`keyed_memories`, a page at a time), and the distinct namespaces, each found
  by one step down the index (`keyed_namespaces`), never by reading every item.

The same SQL on SQLite and PostgreSQL (`?` placeholders, as `SQLWrites`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from recall.store.records import NAMESPACE_SEPARATOR, Address, Memory, NewMemory
from recall.store.rows import NOTE_COLUMNS, note_record, ts
from recall.store.sql_writes import SQLWrites

_KEYED = "item_key IS NOT NULL"  # spelt as the partial indexes' condition, so they serve


def _below(prefix: str, column: str = "namespace") -> tuple[str, tuple[Any, ...]]:
    """The condition that a namespace is `prefix` or below it ('': any), and its parameters:
    one range of the index, [prefix, prefix + '/'), less the siblings inside it (`a.b-c`)."""
    if not prefix:
        return "", ()
    return (
        f" AND {column} >= ? AND {column} < ? AND ({column} = ? OR {column} >= ?)",
        (prefix, prefix + "/", prefix, prefix + NAMESPACE_SEPARATOR),
    )


class SQLKeyed(SQLWrites):
    """Keyed memories on both stores."""

    def put_keyed_memories(
        self,
        world_id: str,
        notes: Sequence[tuple[Address, NewMemory]],
        then: Callable[[Any, list[Memory]], None] | None = None,
    ) -> list[Memory]:
        """Write each note at its address, in order, in one transaction: a new memory, or over the
        one there (its id stays, and its created_at unless it had expired; its type, content,
        importance, chat, metadata, expiry and updated_at become the note's). `then` runs in the
        same transaction with the memories as stored."""
        stored: list[Memory] = []
        # BEGIN goes with the first insert, the search items' writes with COMMIT.
        with self._write_pipelined() as db:
            for address, note in notes:
                expires = None if note.expires_at is None else ts(note.expires_at)
                written = note.updated_at or note.created_at
                row = self._execute(
                    db,
                    "INSERT INTO notes (world_id, owner, type, content, importance, chat_id, metadata, created_at,"
                    " updated_at, expires_at, namespace, item_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    f" ON CONFLICT (world_id, owner, namespace, item_key) WHERE {_KEYED} DO UPDATE SET"
                    # What had expired (and not been swept yet) is written anew.
                    " created_at = CASE WHEN notes.expires_at IS NOT NULL AND notes.expires_at <= excluded.updated_at"
                    " THEN excluded.created_at ELSE notes.created_at END,"
                    " type = excluded.type, content = excluded.content, importance = excluded.importance,"
                    " chat_id = excluded.chat_id, metadata = excluded.metadata, updated_at = excluded.updated_at,"
                    f" expires_at = excluded.expires_at RETURNING {NOTE_COLUMNS}",
                    (
                        world_id, note.owner, note.type, note.content, note.importance, note.chat_id,
                        json.dumps(note.metadata), ts(note.created_at), ts(written), expires,
                        address.namespace, address.key,
                    ),
                ).fetchone()  # fmt: skip
                stored.append(note_record(row))
            if then is not None:
                then(db, stored)
        return stored

    def keyed_memory(self, world_id: str, owner: str, address: Address) -> Memory | None:
        """The memory at `address`, expired or not (the caller compares `expires_at`)."""
        rows = self._read(
            f"SELECT {NOTE_COLUMNS} FROM notes WHERE world_id = ? AND owner = ? AND namespace = ? AND item_key = ?"
            f" AND {_KEYED}",
            (world_id, owner, address.namespace, address.key),
        )
        return note_record(rows[0]) if rows else None

    def keyed_memories(
        self,
        world_id: str,
        owner: str,
        prefix: str = "",
        *,
        before: tuple[datetime, int] | None = None,
        limit: int = 100,
    ) -> list[Memory]:
        """The keyed memories of a namespace and those below it ('': all), newest write first
        (then highest id), from just after `before` (the last one's (updated_at, id)) on."""
        where, params = _below(prefix)
        if before is not None:
            at, memory_id = ts(before[0]), before[1]
            where += " AND (updated_at < ? OR (updated_at = ? AND id < ?))"
            params = (*params, at, at, memory_id)
        rows = self._read(
            f"SELECT {NOTE_COLUMNS} FROM notes WHERE world_id = ? AND owner = ? AND {_KEYED}{where}"
            " ORDER BY updated_at DESC, id DESC LIMIT ?",
            (world_id, owner, *params, limit),
        )
        return [note_record(r) for r in rows]

    def keyed_namespaces(self, world_id: str, owner: str, prefix: str = "", limit: int = 10_000) -> list[str]:
        """The distinct namespaces of keyed memories at or below `prefix` ('': all), in order, at
        most `limit`: each the least one above the last (a step down the index, not a scan)."""
        where, params = _below(prefix, "n.namespace")
        scope = f"n.world_id = ? AND n.owner = ? AND n.{_KEYED}{where}"
        rows = self._read(
            "WITH RECURSIVE found (namespace) AS ("
            f" SELECT MIN(n.namespace) FROM notes n WHERE {scope}"
            " UNION ALL"
            f" SELECT (SELECT MIN(n.namespace) FROM notes n WHERE {scope} AND n.namespace > found.namespace)"
            " FROM found WHERE found.namespace IS NOT NULL"
            ") SELECT namespace FROM found WHERE namespace IS NOT NULL LIMIT ?",
            (world_id, owner, *params, world_id, owner, *params, limit),
        )
        return [str(r[0]) for r in rows]

    def unkeyed_memories(self, world_id: str, owner: str, limit: int = 1000) -> list[Memory]:
        """The LangGraph store's items an older recall wrote, without an address, oldest first
        (`type` spelt out: the condition of the partial index that finds them)."""
        rows = self._read(
            f"SELECT {NOTE_COLUMNS} FROM notes WHERE world_id = ? AND owner = ? AND type = 'langgraph'"
            " AND item_key IS NULL ORDER BY id LIMIT ?",
            (world_id, owner, limit),
        )
        return [note_record(r) for r in rows]

    def memories_among(self, world_id: str, memory_ids: Sequence[int]) -> dict[int, Memory]:
        """The world's memories among `memory_ids`, by id."""
        found: dict[int, Memory] = {}
        for one_of, params in self._ids_in("id", memory_ids):
            # Each looked up by its id, the world checked on the rows: with `world_id = ?` in the
            # query SQLite chose to walk the world's index instead (8.8 ms among 100,000 memories).
            rows = self._read(f"SELECT {NOTE_COLUMNS} FROM notes WHERE {one_of}", params)
            found.update((int(r[0]), note_record(r)) for r in rows if r[1] == world_id)
        return found

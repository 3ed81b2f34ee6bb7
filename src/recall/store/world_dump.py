"""A whole world's rows out (an export) and in (an import), the same SQL on both stores.

Rows travel in the portable form of `world_records.WORLD_TABLES`: the world's key and the
agents' keys (which differ from store to store) are replaced by the world and the agent's id;
every other id (messages, observations, long-term memories, facts), every time (epoch seconds,
as stored) and every read flag is kept as it is. An import refuses, writing nothing, a world
the tenant has already and any id the store holds already.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from recall.errors import ConflictError
from recall.store.records import WorldRecord
from recall.store.rows import delivery_bucket, dt, new_world_key
from recall.store.world_delete import SQLDeletes
from recall.store.world_records import WORLD_TABLES, FactScopes, WorldImport

#: Rows read per statement while exporting a large table.
PAGE = 2000

#: Per table of an export: the SELECT of its rows for one world (parameters: the world's key),
#: in the columns of WORLD_TABLES. Tables keyed by an agent name it through `participants`.
_AGENT_JOIN = "JOIN participants p ON p.key = t.agent_key WHERE p.world_id = ?"
_SMALL_TABLES: dict[str, str] = {
    "participants": "SELECT id, kind, profile, created_at FROM participants WHERE world_id = ? ORDER BY key",
    "chats": "SELECT id, created_at FROM chats WHERE world_id = ? ORDER BY created_at, id",
    "inbox_marks": f"SELECT p.id, t.low FROM inbox_marks t {_AGENT_JOIN} ORDER BY p.key",
    "memory_counts": f"SELECT p.id, t.chat_id, t.n FROM memory_counts t {_AGENT_JOIN} ORDER BY p.key, t.chat_id",
    "turn_counters": "SELECT agent_id, count FROM turn_counters WHERE world_id = ? ORDER BY agent_id",
    "agent_memory": (
        f"SELECT p.id, t.key, t.value, t.updated_at, t.expires_at FROM agent_memory t {_AGENT_JOIN}"
        " ORDER BY p.key, t.key"
    ),
    # Not the recalled past's digest: an imported session sends its recalled past once more.
    "context_sessions": (
        f"SELECT p.id, t.session, t.chat_id, t.last_sent_id, t.refreshed_at FROM context_sessions t {_AGENT_JOIN}"
        " ORDER BY p.key, t.session, t.chat_id"
    ),
}
#: Tables read a page at a time, by id (parameters: the world's key, then the last id read).
_PAGED_TABLES: dict[str, str] = {
    "observations": (
        "SELECT id, agent_id, kind, sim_time, data, created_at FROM observations WHERE world_id = ? AND id > ?"
    ),
    "notes": (
        "SELECT id, owner, type, content, importance, chat_id, metadata, created_at, updated_at, expires_at"
        " FROM notes WHERE world_id = ? AND id > ?"
    ),
}
#: The INSERT of each table, by the columns it is given (agents' ids already turned into keys).
_INSERTS: dict[str, tuple[str, ...]] = {
    "chats": ("world_id", "id", "created_at"),
    "messages": ("world_id", *WORLD_TABLES["messages"]),
    "deliveries": ("agent_key", "message_id", "own", "read_at", "bucket"),
    "inbox_marks": ("agent_key", "low"),
    "memory_counts": ("agent_key", "chat_id", "n", "first_id"),
    "turn_counters": ("world_id", "agent_id", "count"),
    "observations": ("world_id", *WORLD_TABLES["observations"]),
    "agent_memory": ("agent_key", "key", "value", "updated_at", "expires_at"),
    "context_sessions": ("agent_key", "session", "chat_id", "last_sent_id", "refreshed_at"),
    "notes": ("world_id", *WORLD_TABLES["notes"]),
    "facts": ("tenant", *WORLD_TABLES["facts"]),
    "fact_sections": ("tenant", *WORLD_TABLES["fact_sections"]),
}


def _completed(table: str, rows: Mapping[str, Sequence[tuple[Any, ...]]]) -> Sequence[tuple[Any, ...]]:
    """A table's rows of an export as the store keeps them (`_INSERTS`). A delivery's bucket is
    worked out from its agent's key later (`_insert_rows`). The memory counts are counted again
    from the deliveries, with the first message each agent heard in each chat: derived rows,
    which an export taken while messages were deleted, or written by hand, may not match (and
    a walk for what an agent heard in a chat starts from its count's row)."""
    if table != "memory_counts":
        return rows.get(table, ())
    chat_at = WORLD_TABLES["messages"].index("chat_id")
    chat_of = {int(m[0]): m[chat_at] for m in rows.get("messages", ())}
    counts: dict[tuple[str, Any], tuple[str, int, int]] = {}
    for agent, message_id, *_ in rows.get("deliveries", ()):
        chat = chat_of.get(int(message_id))
        if chat is None:
            continue
        place = (str(agent).lower(), chat)
        _, n, first = counts.get(place, (agent, 0, int(message_id)))
        counts[place] = (agent, n + 1, min(first, int(message_id)))
    return [(agent, chat, n, first) for (_, chat), (agent, n, first) in counts.items()]


#: Ids an import keeps, which no row of the store may hold already: (table, what it is called).
_KEPT_IDS = (("messages", "message"), ("observations", "observation"), ("notes", "memory"), ("facts", "fact"))


class SQLWorlds(SQLDeletes):
    """Export and import whole worlds (and delete them: `SQLDeletes`), shared by both stores."""

    def _execute_many(self, db: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement written with `?` placeholders for each of `rows`."""
        db.executemany(sql, rows)

    def _lock_for_import(self, db: Any) -> None:
        """Keep worlds from being created and messages from being stored meanwhile (SQLite's write
        lock already does)."""

    def _continue_sequences(self, db: Any) -> None:
        """Make new ids follow the imported ones (SQLite's AUTOINCREMENT and rowids already do)."""

    # -- export ---------------------------------------------------------------------------

    def export_world(self, world_id: str, facts: FactScopes) -> Iterator[tuple[str, tuple[Any, ...]]]:
        """(table, row) of every row of the world whose key is `world_id` (first 'worlds', its
        own row; nothing when there is none) and of the facts of `facts`, in WORLD_TABLES' order
        and columns. Messages and deliveries are read up to the newest message there was when
        the export began, so a post meanwhile is left out whole."""
        world = self._read("SELECT id, name, turn_limit, created_at, tenant FROM worlds WHERE key = ?", (world_id,))
        if not world:
            return
        yield "worlds", tuple(world[0])
        newest = self._read("SELECT COALESCE(MAX(id), 0) FROM messages WHERE world_id = ?", (world_id,))[0][0]
        agents = self._read(
            "SELECT key, id FROM participants WHERE world_id = ? AND kind = 'agent' ORDER BY key", (world_id,)
        )
        for table in WORLD_TABLES:
            if table in _SMALL_TABLES:
                for row in self._read(_SMALL_TABLES[table], (world_id,)):
                    yield table, tuple(row)
            elif table in _PAGED_TABLES:
                for row in self._paged(_PAGED_TABLES[table], (world_id,)):
                    yield table, row
            elif table == "messages":
                columns = ", ".join(WORLD_TABLES["messages"])
                sql = f"SELECT {columns} FROM messages WHERE world_id = ? AND id <= ? AND id > ?"
                for row in self._paged(sql, (world_id, newest)):
                    yield table, row
            elif table == "deliveries":
                yield from ((table, row) for row in self._deliveries_of(agents, newest))
            elif facts.scopes:
                scope_is, params = self._one_of("scope", facts.scopes)
                columns = ", ".join(WORLD_TABLES[table])
                order = "id" if table == "facts" else "scope"
                sql = f"SELECT {columns} FROM {table} WHERE tenant = ? AND {scope_is} ORDER BY {order}"
                for row in self._read(sql, (facts.tenant, *params)):
                    yield table, tuple(row)

    def _deliveries_of(self, agents: Sequence[Any], newest: int) -> Iterator[tuple[Any, ...]]:
        """(agent id, message id, own, read_at) of the agents' deliveries up to message `newest`:
        a bucket at a time, in the table's order (a bucket's rows are read once, not once for
        each of its agents), a page of messages at a time."""
        by_bucket: dict[int, dict[int, str]] = {}
        for key, agent in agents:
            by_bucket.setdefault(delivery_bucket(int(key)), {})[int(key)] = str(agent)
        for bucket, names in sorted(by_bucket.items()):
            key_is, keys = self._one_of("agent_key", sorted(names), "::bigint[]")
            after = 0
            while True:
                rows = self._read(
                    "SELECT message_id, agent_key, own, read_at FROM deliveries"
                    f" WHERE bucket = ? AND message_id > ? AND message_id <= ? AND {key_is}"
                    " ORDER BY message_id, agent_key LIMIT ?",
                    (bucket, after, newest, *keys, PAGE),
                )
                full = len(rows) == PAGE
                if full:
                    # The last message's rows may go on in the next page: it is read again there
                    # (a message has at most one row per agent of the bucket, far under a page).
                    last = rows[-1][0]
                    rows = [r for r in rows if r[0] != last]
                for message_id, key, own, read_at in rows:
                    yield names[int(key)], message_id, own, read_at
                if not full:
                    break
                after = int(rows[-1][0])

    def _paged(self, sql: str, params: tuple[Any, ...], column: str = "id") -> Iterator[tuple[Any, ...]]:
        """The rows of `sql` (which ends with a condition `column > ?`, the cursor, and selects
        `column` first) a page at a time, in `column`'s order."""
        after = 0
        while True:
            rows = self._read(f"{sql} ORDER BY {column} LIMIT ?", (*params, after, PAGE))
            yield from (tuple(r) for r in rows)
            if len(rows) < PAGE:
                return
            after = int(rows[-1][0])

    # -- import ---------------------------------------------------------------------------

    def import_world(self, data: WorldImport) -> WorldRecord:
        """Store a whole world under `data.tenant` in one transaction. ConflictError, writing
        nothing, when the tenant has a world of that id or the store holds any of the ids kept."""
        world, rows = data.world, data.rows
        with self._write() as db:
            self._lock_worlds(db)
            self._lock_for_import(db)
            self._refuse_conflicts(db, data)
            key = new_world_key(
                str(world["id"]),
                data.tenant,
                lambda k: self._execute(db, "SELECT 1 FROM worlds WHERE key = ?", (k,)).fetchone() is not None,
            )
            self._execute(
                db,
                "INSERT INTO worlds (key, id, name, turn_limit, created_at, tenant) VALUES (?, ?, ?, ?, ?, ?)",
                (key, world["id"], world["name"], world["turn_limit"], world["created_at"], data.tenant),
            )
            agents: dict[str, int] = {}
            for participant in rows.get("participants", ()):
                added = self._execute(
                    db,
                    "INSERT INTO participants (world_id, id, kind, profile, created_at) VALUES (?, ?, ?, ?, ?)"
                    " RETURNING key",
                    (key, *participant),
                ).fetchone()
                if participant[1] == "agent":
                    agents[str(participant[0]).lower()] = int(added[0])
            for table, columns in _INSERTS.items():
                values = self._insert_rows(table, _completed(table, rows), key, data.tenant, agents)
                if values:
                    marks = ", ".join("?" * len(columns))
                    self._execute_many(db, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", values)
            self._continue_sequences(db)
            self._changed(db)
        return WorldRecord(
            str(world["id"]), str(world["name"]), dt(world["created_at"]), world["turn_limit"], data.tenant, key
        )

    @staticmethod
    def _insert_rows(
        table: str, rows: Sequence[tuple[Any, ...]], world_key: str, tenant: str, agents: dict[str, int]
    ) -> list[tuple[Any, ...]]:
        """Rows of a table as its INSERT takes them: with the world's key or the tenant first,
        or with the agent's key in place of its id."""
        first = _INSERTS[table][0]
        if first == "world_id":
            return [(world_key, *row) for row in rows]
        if first == "tenant":
            return [(tenant, *row) for row in rows]
        keyed = [(agents[str(row[0]).lower()], *row[1:]) for row in rows]
        if table == "deliveries":
            return [(*row, delivery_bucket(row[0])) for row in keyed]
        return keyed

    def _refuse_conflicts(self, db: Any, data: WorldImport) -> None:
        world_id = str(data.world["id"])
        if self._execute(db, "SELECT 1 FROM worlds WHERE tenant = ? AND id = ?", (data.tenant, world_id)).fetchone():
            raise ConflictError(
                f"world {world_id!r} already exists{' in tenant ' + repr(data.tenant) if data.tenant else ''}:"
                " delete it first, or import into another store; nothing was imported"
            )
        for table, what in _KEPT_IDS:
            ids = [int(row[0]) for row in data.rows.get(table, ())]
            taken: list[int] = []
            for id_is, params in self._ids_in("id", ids):
                taken += [
                    int(r[0]) for r in self._execute(db, f"SELECT id FROM {table} WHERE {id_is}", params).fetchall()
                ]
            if taken:
                shown = ", ".join(str(i) for i in sorted(taken)[:5]) + (", …" if len(taken) > 5 else "")
                raise ConflictError(
                    f"this store already holds {len(taken)} {what} id(s) the import keeps ({shown}): import a world"
                    " into a store that does not hold it (ids are kept as they are); nothing was imported"
                )
        scopes = [str(row[0]) for row in data.rows.get("fact_sections", ())]
        if scopes:
            scope_is, params = self._one_of("scope", scopes)
            taken_scopes = self._execute(
                db, f"SELECT scope FROM fact_sections WHERE tenant = ? AND {scope_is}", (data.tenant, *params)
            ).fetchall()
            if taken_scopes:
                raise ConflictError(
                    f"scope {taken_scopes[0][0]!r} already has summary sections in this store: clear it first"
                    " (recall facts clear …); nothing was imported"
                )

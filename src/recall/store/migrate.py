"""Copy a whole store to an empty PostgreSQL database, losslessly, and prove it.

Both stores have the same tables and columns (postgres_schema.py mirrors sqlite_schema.py), so
rows are copied table by table, parents first, ids kept; the target's sequences then continue
after the highest copied id. Every table is verified afterwards: the same number of rows and
the same checksum (SHA-256 over its rows, in a canonical order) on both sides.

Vectors are not copied: the target's index worker embeds the copied search items again (the
source may hold another model's vectors, or none). Nor is the items' metadata: the target's
index reads it again from the copied messages and memories when it is first opened.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from recall.errors import InvalidInputError
from recall.store import is_postgres_url, open_store
from recall.store.postgres import PostgresStore

#: (table, the columns copied and compared, the order rows are read in) — parents first.
TABLES: tuple[tuple[str, str, str], ...] = (
    ("worlds", "key, id, name, turn_limit, created_at, tenant", "key"),
    ("participants", "key, world_id, id, kind, profile, created_at", "key"),
    ("chats", "world_id, id, created_at", "world_id, id"),
    (
        "messages",
        "id, world_id, chat_id, sender, sender_type, channel, parent_id, content, mentions, addressed, metadata,"
        " created_at, idempotency_key",
        "id",
    ),
    ("deliveries", "bucket, message_id, agent_key, own, read_at", "bucket, message_id, agent_key"),
    ("inbox_marks", "agent_key, low", "agent_key"),
    ("memory_counts", "agent_key, chat_id, n, first_id", "agent_key, chat_id"),
    ("turn_counters", "world_id, agent_id, count", "world_id, agent_id"),
    ("observations", "id, world_id, agent_id, kind, sim_time, data, created_at", "id"),
    ("agent_memory", "agent_key, key, value, updated_at, expires_at", "agent_key, key"),
    (
        "context_sessions",
        "agent_key, session, chat_id, last_sent_id, refreshed_at, recalled_digest",
        "agent_key, session, chat_id",
    ),
    ("facts", "id, tenant, scope, content, category, confidence, source, avoid, created_at, updated_at", "id"),
    ("fact_sections", "tenant, scope, sections, updated_at", "tenant, scope"),
    ("fact_sources", "fact_id, message_id", "fact_id, message_id"),
    (
        "notes",
        "id, world_id, owner, type, content, importance, chat_id, metadata, created_at, updated_at, expires_at",
        "id",
    ),
    (
        "search_items",
        "id, tenant, space, kind, source_id, owner, chat_id, sender, importance, created_at, text, context",
        "id",
    ),
    (
        "model_calls",
        "id, world_id, agent_key, chat_id, trigger_id, created_at, source, digest, senders, body, outcome, error",
        "id",
    ),
    (
        "extraction_jobs",
        "tenant, scope, thread, world_id, agent_id, chat_id, token, owner, due_at, queued_at",
        "tenant, scope, thread",
    ),
)
#: Id columns backed by a sequence on PostgreSQL: (table, column, sequence).
SEQUENCES = (
    ("messages", "id", "messages_id_seq"),
    ("participants", "key", None),
    ("observations", "id", None),
    ("facts", "id", None),
    ("notes", "id", None),
    ("search_items", "id", None),
)
#: Rows read and written per round trip.
PAGE = 5000


@dataclass(frozen=True)
class TableCopy:
    table: str
    rows: int
    checksum: str


def migrate(source: str, target: str, progress: Callable[[str, int], None] | None = None) -> list[TableCopy]:
    """Copy the store at `source` (a SQLite file or a URL) into the empty PostgreSQL database at
    `target`; the verified counts and checksums, one per table. Raises `InvalidInputError`
    when the target is not PostgreSQL or not empty, and `RecallError` when a check fails."""
    if not is_postgres_url(target):
        raise InvalidInputError("to", "must be a postgresql:// URL (the store to copy into)")
    if source == target:
        raise InvalidInputError("to", "must differ from --from")
    src = open_store(source)
    try:
        dst = PostgresStore(target)
        try:
            if dst._read("SELECT (SELECT COUNT(*) FROM worlds) + (SELECT COUNT(*) FROM messages)")[0][0]:
                raise InvalidInputError(
                    "to", f"{dst.path} already holds worlds or messages; copy into an empty database"
                )
            for table, columns, order in TABLES:
                copied = 0
                for page in _pages(src, table, columns, order):
                    marks = ", ".join(["%s"] * len(page[0]))
                    with dst._write() as cur:
                        cur.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", page)
                    copied += len(page)
                    if progress is not None:
                        progress(table, copied)
            _finish(src, dst)
            return _verify(src, dst)
        finally:
            dst.close()
    finally:
        src.close()


def _pages(store: Any, table: str, columns: str, order: str) -> Iterator[list[tuple[Any, ...]]]:
    offset = 0
    while True:
        rows = store._read(f"SELECT {columns} FROM {table} ORDER BY {order} LIMIT {PAGE} OFFSET {offset}")
        if not rows:
            return
        yield [tuple(r) for r in rows]
        offset += len(rows)


def _finish(src: Any, dst: PostgresStore) -> None:
    """Continue the target's sequences after the copied ids; carry the indexing watermark (the
    copied search items are embedded again by the target)."""
    with dst._write() as cur:
        for table, column, sequence in SEQUENCES:
            name = sequence or f"pg_get_serial_sequence('{table}', '{column}')"
            seq = f"'{name}'" if sequence else name
            cur.execute(f"SELECT setval({seq}, COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)")
        mark = src._read("SELECT value FROM search_state WHERE name = 'messages'")
        if mark:
            cur.execute(
                "INSERT INTO search_state (name, value) VALUES ('messages', %s)"
                " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (int(mark[0][0]),),
            )
        # The items' metadata (the source's is a text column, the target's JSONB) is read again
        # from the copied messages and memories when the target's index is first opened.
        cur.execute(
            "INSERT INTO search_state (name, value) VALUES ('metadata_backfill', 0)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value"
        )
        cur.execute("UPDATE store_version SET version = version + 1")


def _checksum(store: Any, table: str, columns: str, order: str) -> tuple[int, str]:
    """Rows and SHA-256 of a table, over its rows sorted by their text form (the two databases
    order text differently, so the order is made here)."""
    lines = sorted(repr(row) for page in _pages(store, table, columns, order) for row in page)
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode())
        digest.update(b"\n")
    return len(lines), digest.hexdigest()


def _verify(src: Any, dst: PostgresStore) -> list[TableCopy]:
    from recall.errors import RecallError

    copies: list[TableCopy] = []
    for table, columns, order in TABLES:
        source = _checksum(src, table, columns, order)
        target = _checksum(dst, table, columns, order)
        if source != target:
            raise RecallError(
                f"the copy of {table} differs: {source[0]} rows (sha256 {source[1][:12]}…) in the source,"
                f" {target[0]} rows (sha256 {target[1][:12]}…) in the target"
            )
        copies.append(TableCopy(table, source[0], source[1]))
    return copies

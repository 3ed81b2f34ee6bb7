"""The PostgreSQL store: the same store protocol as SQLite, on a server database, so several
recall servers (replicas) can share one world.

psycopg 3 with a connection pool; each write is one transaction. Messages get their ids under
a transaction-level advisory lock, so ids follow commit order on every replica (the search
index and the inbox cursors rely on it, as they do with SQLite's single writer). The tables
mirror the SQLite store's (`postgres_schema.py`), and the same row mappers read both.
"""

# ruff: noqa: E402 (the extra is checked before psycopg loads, so the imports follow the check)
from __future__ import annotations

import json
import logging
import math
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from recall.extras import require

require("postgres")  # before psycopg: one line naming the extra, not a traceback about psycopg

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from recall.core.models import Message
from recall.errors import StoreOpenError, StoreVersionError
from recall.store.base import PostAnnouncer, PostListener, SharedRateLimits
from recall.store.extraction_jobs import SQLExtractionJobs
from recall.store.postgres_schema import LATEST_VERSION, MIGRATIONS
from recall.store.records import NewMessage
from recall.store.rows import (
    DELIVERY_BUCKET_BITS,
    INSERT_MESSAGE,
    of_agent,
    plan_batch,
    ts,
)
from recall.store.sql_reads import RAISE_INBOX_MARKS, UNREAD_OF_AGENT
from recall.store.urls import redacted_text, redacted_url

#: Advisory lock keys (any constant numbers, unique to recall).
_MESSAGES_LOCK = 7_311_001
_MIGRATION_LOCK = 7_311_000
_WORLDS_LOCK = 7_311_003
#: Connections per process.
POOL_SIZE = 8
#: Seconds the first, direct connection may take (libpq's least is 2), unless the URL says.
PROBE_TIMEOUT = 5
#: The channel posts are announced on, so servers on other machines wake their long polls.
NOTIFY_CHANNEL = "recall_messages"
#: Message ids one announcement names at most (a NOTIFY payload is limited to 8000 bytes);
#: beyond that it says "more" and listeners wake every waiter of the world.
_NOTIFY_IDS = 200

logger = logging.getLogger("recall.store.postgres")


def _int_array(values: Iterable[int]) -> str:
    """A PostgreSQL array literal of integers, for a `%s::bigint[]` parameter."""
    return "{" + ",".join(map(str, values)) + "}"


_RAISE_INBOX_MARKS = RAISE_INBOX_MARKS.format(key="k.key", source=" FROM unnest(%s::bigint[]) AS k(key)")

#: The sequences of the ids an import keeps: new ids continue after the imported ones.
_KEPT_ID_SEQUENCES = (
    ("messages", "messages_id_seq"),
    ("observations", "observations_id_seq"),
    ("notes", "notes_id_seq"),
    ("facts", "facts_id_seq"),
)

#: What a server without citext needs (recall does without pgvector, but not without citext).
_MISSING_CITEXT_HINT = (
    ": recall needs the citext extension, one of PostgreSQL's contrib modules: install them on the"
    " server (package postgresql-contrib on Debian and Ubuntu, postgresqlNN-contrib on Red Hat)"
)


def _setup_error(path: str, exc: BaseException) -> StoreOpenError | None:
    """One line for what stops recall setting up its tables and cannot be fixed from here: an
    extension the server lacks, or a role without the right to create. None for the rest."""
    if not isinstance(exc, psycopg.Error):
        return None
    # PostgreSQL's message on one line; its hint, if any, is replaced by recall's own.
    reason = " ".join(str(exc.diag.message_primary or exc).split())
    if isinstance(exc, (psycopg.errors.FeatureNotSupported, psycopg.errors.UndefinedFile)):
        hint = _MISSING_CITEXT_HINT if "citext" in reason else ""
        return StoreOpenError(f"cannot set up {path}: {reason}{hint}")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreOpenError(
            f"cannot set up {path}: {reason}: connect once as the database's owner"
            " (or grant this role CREATE on the database and its schema public)"
        )
    return None


#: Called by the listener with (world id, the new message ids, or None for "too many to name").


def _autocommit(conn: psycopg.Connection[Any]) -> None:
    conn.autocommit = True


class PostgresStore(SQLExtractionJobs):
    LOCK_ROWS = " FOR UPDATE"
    KEEP_ROWS = " FOR KEY SHARE"

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE, connect_timeout: float = 30.0) -> None:
        self.url = url
        self.rate_buckets: SharedRateLimits | None = self
        self.announcer: PostAnnouncer | None = self
        self.path = redacted_url(url)
        self._keys: dict[tuple[str, str], int] = {}
        self._world_keys: dict[str, dict[str, int]] = {}
        self._groups: dict[tuple[str, tuple[str, ...]], str] = {}
        self._seen_version: int | None = None
        #: Names this process in its own announcements, so its listener skips them.
        self.token = uuid.uuid4().hex
        self._probe(min(PROBE_TIMEOUT, connect_timeout))
        # Autocommit: a read is one statement, one round trip (in a transaction it took three,
        # BEGIN and ROLLBACK around it: 0.36-0.44 ms against 0.17-0.20 for a one-row read);
        # writes open their transaction themselves (`_write`).
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=False,
            timeout=connect_timeout,
            configure=_autocommit,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise StoreOpenError(
                f"cannot connect to PostgreSQL at {self.path} within {connect_timeout:g} s: is the server up,"
                " and are the host, port, database and credentials right?"
            ) from exc
        try:
            self._migrate()
        except BaseException as exc:
            self._pool.close()  # a store that failed to open leaves no connection behind
            error = _setup_error(self.path, exc)
            if error is not None:
                raise error from None
            raise

    def _probe(self, timeout: float) -> None:
        """One direct connection before the pool: a wrong password, an unknown host, a refused
        port or a malformed URL ends here at once with libpq's reason, instead of in the
        pool's half a minute of logged retries."""
        try:
            conninfo = self.url
            if "connect_timeout" not in conninfo_to_dict(self.url):  # the URL's own wins
                conninfo = make_conninfo(self.url, connect_timeout=max(2, math.ceil(timeout)))
            psycopg.connect(conninfo).close()
        except psycopg.Error as exc:
            reason = redacted_text(" ".join(str(exc).split()), self.url)  # libpq's reasons span lines
            raise StoreOpenError(f"cannot connect to PostgreSQL at {self.path}: {reason}") from None

    # -- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[psycopg.Cursor[Any]]:
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def _write_pipelined(self) -> Iterator[psycopg.Cursor[Any]]:
        if not psycopg.Pipeline.is_supported():  # libpq before 14
            with self._write() as cur:
                yield cur
            return
        with self._pool.connection() as conn, conn.pipeline(), conn.transaction(), conn.cursor() as cur:
            yield cur

    def _execute(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        # The SQL shared with SQLite (sql_writes.py) is written with `?`; no SQL of recall's
        # holds a literal question mark.
        return db.execute(sql.replace("?", "%s"), params)

    def _one_of(self, column: str, values: Sequence[Any], cast: str = "") -> tuple[str, tuple[Any, ...]]:
        return f"{column} = ANY(?{cast})", (list(values),)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        # The reads shared with SQLite (sql_reads.py) are written with `?`; no SQL of recall's
        # holds a literal question mark.
        with self._pool.connection() as conn:
            rows: list[Any] = conn.execute(sql.replace("?", "%s"), params).fetchall()
            return rows

    def _migrate(self) -> None:
        with self._write() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
            current = cur.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
            version = int(current[0]) if current else 0
            if version > LATEST_VERSION:
                raise StoreVersionError(
                    f"{self.path} has schema version {version}, newer than this recall's {LATEST_VERSION}: "
                    "upgrade recall to open it"
                )
            for number, sql in MIGRATIONS:
                if number > version:
                    cur.execute(sql.encode())  # a script of several statements, no parameters
                    cur.execute("INSERT INTO schema_migrations VALUES (%s, extract(epoch from now()))", (number,))

    def change_version(self) -> int:
        return self._saw_version(int(self._read("SELECT version FROM store_version")[0][0]))

    def close(self) -> None:
        self._pool.close()

    def _lock_worlds(self, db: Any) -> None:
        # One world created at a time across replicas: the check and the key stay true.
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_WORLDS_LOCK,))

    # -- whole worlds: deleted, imported (world_delete.py, world_dump.py) ----------------------

    def _forget_world_rows(self, db: Any, world_id: str, agent_id: str | None) -> None:
        if agent_id is None:
            db.execute("DELETE FROM rate_buckets WHERE world_id = %s", (world_id,))
        else:
            db.execute("DELETE FROM rate_buckets WHERE world_id = %s AND agent_id = %s", (world_id, agent_id))

    def _execute_many(self, db: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        db.executemany(sql.replace("?", "%s"), rows)

    def _lock_for_import(self, db: Any) -> None:
        # Imported message ids are checked and written while no post takes one.
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_MESSAGES_LOCK,))

    def _continue_sequences(self, db: Any) -> None:
        for table, sequence in _KEPT_ID_SEQUENCES:
            db.execute(
                f"SELECT setval('{sequence}', GREATEST((SELECT MAX(id) FROM {table}), (SELECT last_value FROM {sequence})))"
            )

    # -- worlds and participants ----------------------------------------------------------

    def _key_array(self, keys: Sequence[int]) -> str:
        # One array literal, not a list: psycopg dumps a list element by element, ~2 ms for
        # the thousand recipients of a post to a large chat.
        return _int_array(keys)

    # -- messages and deliveries ----------------------------------------------------------

    def append_messages(self, world_id: str, batch: Sequence[NewMessage]) -> list[Message]:
        """Store messages with their deliveries, chats, memory counts and turn resets, atomically;
        a message whose idempotency key is already stored is returned instead of stored again."""
        with self._write() as cur:
            # Ids in commit order across every replica: one writer of messages at a time.
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MESSAGES_LOCK,))
            by_key = self._stored_by_idempotency_key(cur, world_id, batch)
            fresh = sum(1 for new in batch if new.idempotency_key is None or new.idempotency_key not in by_key)
            new_ids = cur.execute("SELECT nextval('messages_id_seq') FROM generate_series(1, %s)", (fresh,)).fetchall()
            plan = plan_batch(world_id, batch, by_key, (int(r[0]) for r in new_ids))
            rows, fanout, per_chat, resets, chats = plan.rows, plan.fanout, plan.per_chat, plan.resets, plan.chats
            if not rows:
                return plan.stored
            self._execute_many(cur, INSERT_MESSAGE, rows)

            def keys_of(agents: tuple[str, ...]) -> str:
                return self._group_keys(cur, world_id, agents)

            for (agents, own, read_at), message_ids in fanout.items():
                cur.execute(
                    "INSERT INTO deliveries (bucket, message_id, agent_key, own, read_at)"
                    f" SELECT a >> {DELIVERY_BUCKET_BITS}, m, a, %s, %s"
                    " FROM unnest(%s::bigint[]) AS m CROSS JOIN unnest(%s::bigint[]) AS a",
                    (own, read_at, message_ids, keys_of(agents)),
                )
            for (agents, chat), n in per_chat.items():
                # The counts there are raised, and only the missing ones inserted: an upsert of
                # every recipient tries each insert first (1,000 agents: 4.4 ms against 2.8).
                cur.execute(
                    "WITH raised AS (UPDATE memory_counts SET n = n + %(n)s"
                    " WHERE chat_id = %(chat)s AND agent_key = ANY(%(keys)s::bigint[]) RETURNING agent_key)"
                    " INSERT INTO memory_counts (agent_key, chat_id, n, first_id)"
                    " SELECT a, %(chat)s, %(n)s, %(first)s FROM unnest(%(keys)s::bigint[]) AS a"
                    " WHERE a NOT IN (SELECT agent_key FROM raised)"
                    " ON CONFLICT (agent_key, chat_id) DO UPDATE SET n = memory_counts.n + excluded.n",
                    {"chat": chat, "n": n, "first": plan.first_in_chat[(agents, chat)], "keys": keys_of(agents)},
                )
            if resets:
                self._reset_turns(cur, world_id, resets)
            cur.executemany(
                "INSERT INTO chats (world_id, id, created_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(world_id, chat, ts(at)) for chat, at in chats.items()],
            )
            # Delivered to listeners when (and only if) this transaction commits.
            ids = [int(r[0]) for r in rows]
            payload = {"t": self.token, "w": world_id, "ids": ids[:_NOTIFY_IDS], "more": len(ids) > _NOTIFY_IDS}
            cur.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, json.dumps(payload)))
        return plan.stored

    def listen(self, on_post: PostListener, stop: threading.Event) -> threading.Thread:
        """Call `on_post` for every post another process commits, from a thread of its own (with
        its own connection, reconnecting after a failure) until `stop` is set."""

        def run() -> None:
            while not stop.is_set():
                try:
                    with psycopg.connect(self.url, autocommit=True) as conn:
                        conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                        while not stop.is_set():
                            for note in conn.notifies(timeout=0.5):
                                self._announce(note.payload, on_post)
                except Exception:  # the loop must outlive a dropped connection
                    logger.exception("listening for posts failed; retrying in 1 s")
                    stop.wait(1.0)

        thread = threading.Thread(target=run, name="recall-pg-listen", daemon=True)
        thread.start()
        return thread

    def _announce(self, payload: str, on_post: PostListener) -> None:
        try:
            data = json.loads(payload)
        except ValueError:
            return
        if data.get("t") == self.token:
            return  # this process's own post: its server woke its waiters already
        on_post(str(data["w"]), None if data.get("more") else [int(i) for i in data.get("ids", [])])

    def mark_read_many(self, world_id: str, marks: Mapping[str, Sequence[int]], at: datetime) -> int:
        """Mark each agent's messages read, all in one transaction; how many were unread."""
        keyed = [(key, ids) for agent, ids in marks.items() if ids and (key := self._agent_key(world_id, agent))]
        if not keyed:
            return 0
        pairs = [(key, int(i)) for key, ids in keyed for i in ids]
        with self._write() as cur:
            # One statement for every agent's rows (a woken crowd's acks: one round trip, not one each).
            changed = cur.execute(
                "UPDATE deliveries d SET read_at = %s FROM unnest(%s::bigint[], %s::bigint[]) AS m(agent_key, id)"
                f" WHERE {of_agent('m.agent_key', 'd.')} AND d.message_id = m.id AND d.own = 0 AND d.read_at IS NULL"
                " RETURNING d.agent_key",
                (ts(at), _int_array(key for key, _ in pairs), _int_array(i for _, i in pairs)),
            ).fetchall()
            raised = sorted({int(row[0]) for row in changed})
            if raised:
                # One statement for every agent's mark (a statement each: ~16 ms of this
                # process's time for a crowd of 1,000, while it is answering them).
                cur.execute(_RAISE_INBOX_MARKS, (_int_array(raised),))
        return len(changed)

    def _unread_pairs(self, keys: Sequence[int], limit: int) -> list[tuple[int, int]]:
        if not keys:
            return []
        rows = self._read(
            "SELECT k.key, d.message_id FROM unnest(?::bigint[]) AS k(key)"
            f" CROSS JOIN LATERAL ({UNREAD_OF_AGENT.format(key='k.key')}) d ORDER BY k.key, d.message_id",
            (_int_array(keys), limit),
        )
        return [(int(key), int(message_id)) for key, message_id in rows]

    # -- rate limits shared by the replicas ---------------------------------------------------

    def rate_hit(self, world_id: str, agent_id: str, per_minute: int, now: float) -> float | None:
        """Take one token from the agent's bucket (`per_minute` tokens, refilled continuously),
        atomically for every replica. None when allowed, else the seconds until a token is back."""
        rate = per_minute / 60.0
        with self._write() as cur:
            cur.execute(
                "INSERT INTO rate_buckets (world_id, agent_id, tokens, at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (world_id, agent_id) DO NOTHING",
                (world_id, agent_id, float(per_minute), now),
            )
            row = cur.execute(
                "SELECT LEAST(%s, tokens + GREATEST(0, %s - at) * %s) FROM rate_buckets"
                " WHERE world_id = %s AND agent_id = %s FOR UPDATE",
                (float(per_minute), now, rate, world_id, agent_id),
            ).fetchone()
            tokens = float(row[0]) if row else float(per_minute)
            allowed = tokens >= 1.0
            cur.execute(
                "UPDATE rate_buckets SET tokens = %s, at = %s WHERE world_id = %s AND agent_id = %s",
                (tokens - 1.0 if allowed else tokens, now, world_id, agent_id),
            )
        return None if allowed else (1.0 - tokens) / rate

    # -- long-term memories (notes) -------------------------------------------------------

"""The embedded store: one SQLite file in WAL mode, zero set-up.

One connection guarded by a lock serves every thread of the process; WAL lets other
processes read while it writes. Every write runs in an explicit `BEGIN IMMEDIATE`
transaction, so a crash leaves either all of a write or none of it.
"""

from __future__ import annotations

import itertools
import json
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

try:  # the stdlib sqlite3 of some Python builds cannot load extensions; pysqlite3 can
    import pysqlite3.dbapi2 as sqlite3
except ImportError:  # pragma: no cover - a platform without the wheel
    import sqlite3  # type: ignore[no-redef,unused-ignore]

from recall.core.models import Message
from recall.errors import InvalidInputError, StoreBusyError, StoreOpenError, StoreVersionError
from recall.store.base import PostAnnouncer, SharedRateLimits
from recall.store.extraction_jobs import SQLExtractionJobs
from recall.store.records import NewMessage
from recall.store.rows import (
    DELIVERY_BUCKET_BITS,
    INSERT_MESSAGE,
    delivery_bucket,
    plan_batch,
    ts,
)
from recall.store.sql_reads import RAISE_INBOX_MARKS, UNREAD_OF_AGENT
from recall.store.sqlite_checkpoints import Checkpointer
from recall.store.sqlite_posts import PostWatch
from recall.store.sqlite_schema import LATEST_VERSION, MIGRATIONS
from recall.store.urls import (
    foreign_scheme,
    foreign_url_error,
    is_collapsed_postgres_url,
    is_postgres_url,
    redacted_url,
)

#: Values an `IN (?, ...)` list takes at most; a longer one is one JSON array (`_one_of`).
_IN_CHUNK = 500
#: Raises the inbox marks of the agents whose keys are the JSON array parameter.
_RAISE_INBOX_MARKS = RAISE_INBOX_MARKS.format(key="k.value", source=" FROM json_each(?) AS k")


def _refuse_url(path: str) -> None:
    """A PostgreSQL URL is never a file name: opened as one, it would create a folder named
    after the URL, password included."""
    if is_postgres_url(path):
        raise InvalidInputError(
            "db", f"{redacted_url(path)} is a PostgreSQL URL, not a SQLite file: open it with Recall(url) or open_store"
        )
    if foreign_scheme(path) is not None:
        raise InvalidInputError("db", foreign_url_error(path))
    if is_collapsed_postgres_url(path):
        raise InvalidInputError(
            "db",
            f"{redacted_url(path)} looks like a PostgreSQL URL whose '//' became '/' (str(Path(url)) does that): "
            "pass the URL as a str, 'postgresql://…', not as a Path",
        )


def _make_folders(path: str) -> None:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreOpenError(f"cannot create {path}: {exc.strerror or exc} ({exc.filename})") from None


def _open_error(path: str, exc: Exception) -> StoreOpenError:
    """The reason a file cannot be opened as a store, in words that say what to do."""
    if Path(path).is_dir():
        return StoreOpenError(f"cannot open {path}: it is a directory, not a store file")
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
        return StoreOpenError(f"cannot open {path}: the file is not a recall store (not a SQLite database)")
    if "unable to open" in str(exc):
        return StoreOpenError(f"cannot open {path}: {exc} (does its folder exist, and may recall write there?)")
    return StoreOpenError(f"cannot open {path}: {exc}")


#: Seconds a write waits for another process's write (`Settings.busy_timeout`).
DEFAULT_BUSY_TIMEOUT = 5.0
#: The connection's page cache, at most (filled only as pages are read).
PAGE_CACHE_KIB = 64 * 1024


class SQLiteStore(SQLExtractionJobs):
    #: Neither ability: one process's in-memory buckets and notifier serve (see server/).
    rate_buckets: SharedRateLimits | None = None
    announcer: PostAnnouncer | None = None
    #: A walk down a chat's messages looks up each one's delivery; SQLite's planner might
    #: otherwise start from the deliveries.
    _WALK_JOIN = "CROSS JOIN"

    def __init__(self, path: str | Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        """Open the file, creating it (and its folders) when missing; a `StoreOpenError` when
        the place cannot hold a store or the file is not one. A write waits `busy_timeout`
        seconds for another process's before it is a `StoreBusyError`."""
        self.path = str(path)
        self.busy_timeout = busy_timeout
        _refuse_url(self.path)
        if self.path != ":memory:":
            _make_folders(self.path)
        self._lock = threading.RLock()
        self._keys: dict[tuple[str, str], int] = {}
        self._world_keys: dict[str, dict[str, int]] = {}
        self._groups: dict[tuple[str, tuple[str, ...]], str] = {}
        self._seen_version: int | None = None
        self._seen_data_version: int | None = None
        #: Checkpoints beside the writer (a file's store, once open).
        self._checkpoints: Checkpointer | None = None
        self._stop_checkpoints: weakref.finalize[[], SQLiteStore] | None = None
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise _open_error(self.path, exc) from None
        try:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            # Deleted rows are overwritten with zeros, not left in free pages: an erase leaves
            # no readable copy (with `_scrub`, which empties the WAL of older page images).
            self._db.execute("PRAGMA secure_delete = ON")
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            # The writer checkpoints only past ~32 MB of WAL, not 4 MB: the checkpointer below
            # copies the WAL beside it, and this bound holds while writes never pause.
            self._db.execute("PRAGMA wal_autocheckpoint = 8000")
            # A context build looks up a few hundred messages and deliveries by key, spread over
            # the whole file: SQLite's default 2 MiB page cache holds little of a large store.
            self._db.execute(f"PRAGMA cache_size = {-PAGE_CACHE_KIB}")
            self._migrate()
        except sqlite3.Error as exc:
            self._db.close()
            raise _open_error(self.path, exc) from None
        except BaseException:
            self._db.close()
            raise
        if self.path != ":memory:":  # no WAL in memory
            self._checkpoints = Checkpointer(
                lambda: sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            )
            # Its thread stops at `close`, or when the store is dropped without one.
            self._stop_checkpoints = weakref.finalize(self, self._checkpoints.close)
            # Other processes (a script, the CLI) post to the file too: the server looks for them.
            self.announcer = PostWatch(self)

    # -- plumbing -------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Any]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):  # SQLITE_BUSY after busy_timeout
                    raise StoreBusyError(self.busy_timeout) from None
                raise
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        if self._checkpoints is not None:
            self._checkpoints.committed()

    def _execute(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return db.execute(sql, params)

    def _one_of(self, column: str, values: Sequence[Any], cast: str = "") -> tuple[str, tuple[Any, ...]]:
        if len(values) <= _IN_CHUNK:
            return f"{column} IN ({', '.join('?' * len(values))})", tuple(values)
        # A long list (every agent of a large world) is one JSON parameter: SQLite caps the
        # parameters of a statement (32,766 in most builds).
        return f"{column} IN (SELECT value FROM json_each(?))", (json.dumps(list(values)),)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            rows: list[Any] = self._db.execute(sql, params).fetchall()
            return rows

    def _migrate(self) -> None:
        with self._write() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
            current = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
            if current > LATEST_VERSION:
                raise StoreVersionError(
                    f"{self.path} has schema version {current}, newer than this recall's {LATEST_VERSION}: "
                    "upgrade recall to open it"
                )
            for version, sql in MIGRATIONS:
                if version > current:
                    for statement in sql.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.execute(
                        "INSERT INTO schema_migrations VALUES (?, ?)",
                        (version, datetime.now(UTC).timestamp()),
                    )

    def change_version(self) -> int:
        # SQLite bumps data_version when another connection commits anything (our own commits
        # do not): the index worker's vectors too, and a roster of 1,000 agents took 22 ms to
        # read again. Only then is store_version, which worlds and participants move, read.
        data_version = int(self._read("PRAGMA data_version")[0][0])
        if data_version != self._seen_data_version or self._seen_version is None:
            self._seen_data_version = data_version
            return self._saw_version(int(self._read("SELECT version FROM store_version")[0][0]))
        return self._seen_version

    def _scrub(self) -> None:
        # The WAL still holds the pages as they were before the deletion: copy the new ones into
        # the database and empty it. Best effort: a reader of another process may hold frames
        # back until its next checkpoint.
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def close(self) -> None:
        if self._stop_checkpoints is not None:
            self._stop_checkpoints()
        with self._lock:
            self._db.close()

    # -- worlds and participants ----------------------------------------------------------

    def _key_array(self, keys: Sequence[int]) -> str:
        return json.dumps(list(keys))

    # -- messages and deliveries ----------------------------------------------------------

    def append_messages(self, world_id: str, batch: Sequence[NewMessage]) -> list[Message]:
        """Store messages with their deliveries, chats, memory counts and turn resets, atomically.

        A message whose idempotency key is already stored (or earlier in the batch) is not
        stored again; the stored one is returned in its place. Ids are assigned here, under
        the write lock, so the whole batch goes in with one `executemany` per table.
        """
        with self._write() as db:
            by_key = self._stored_by_idempotency_key(db, world_id, batch)
            seq = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
            plan = plan_batch(world_id, batch, by_key, itertools.count((int(seq[0]) if seq else 0) + 1))
            rows, fanout, per_chat, resets, chats = plan.rows, plan.fanout, plan.per_chat, plan.resets, plan.chats
            self._execute_many(db, INSERT_MESSAGE, rows)

            def keys_of(agents: tuple[str, ...]) -> str:
                return self._group_keys(db, world_id, agents)

            for (agents, own, read_at), ids in fanout.items():
                db.execute(
                    "INSERT INTO deliveries (bucket, message_id, agent_key, own, read_at)"
                    f" SELECT a.value >> {DELIVERY_BUCKET_BITS}, m.value, a.value, ?, ?"
                    " FROM json_each(?) AS m CROSS JOIN json_each(?) AS a",
                    (own, read_at, json.dumps(ids), keys_of(agents)),
                )
            for (agents, chat), n in per_chat.items():
                db.execute(
                    "INSERT INTO memory_counts (agent_key, chat_id, n, first_id) SELECT a.value, ?, ?, ?"
                    " FROM json_each(?) AS a"
                    " WHERE true ON CONFLICT (agent_key, chat_id) DO UPDATE SET n = n + excluded.n",
                    (chat, n, plan.first_in_chat[(agents, chat)], keys_of(agents)),
                )
            if resets:
                self._reset_turns(db, world_id, resets)
            db.executemany(
                "INSERT OR IGNORE INTO chats (world_id, id, created_at) VALUES (?, ?, ?)",
                [(world_id, chat, ts(at)) for chat, at in chats.items()],
            )
        return plan.stored

    def mark_read_many(self, world_id: str, marks: Mapping[str, Sequence[int]], at: datetime) -> int:
        """Mark each agent's messages read, all in one transaction; how many were unread."""
        keyed = [(key, ids) for agent, ids in marks.items() if ids and (key := self._agent_key(world_id, agent))]
        if not keyed:
            return 0
        when = ts(at)
        with self._write() as db:
            cursor = db.executemany(
                "UPDATE deliveries SET read_at = ? WHERE bucket = ? AND message_id = ? AND agent_key = ? AND own = 0"
                " AND read_at IS NULL",
                [(when, delivery_bucket(key), int(i), key) for key, ids in keyed for i in ids],
            )
            marked = int(cursor.rowcount)
            if marked:
                db.execute(_RAISE_INBOX_MARKS, (json.dumps([key for key, _ in keyed]),))
        return marked

    def _unread_pairs(self, keys: Sequence[int], limit: int) -> list[tuple[int, int]]:
        # One short indexed range per agent, under one hold of the connection: no round trips here.
        pairs: list[tuple[int, int]] = []
        with self._lock:
            for key in keys:
                rows = self._db.execute(UNREAD_OF_AGENT.format(key="?"), (key, key, key, limit)).fetchall()
                pairs.extend((key, int(row[0])) for row in rows)
        return pairs

    # -- long-term memories (notes) -------------------------------------------------------

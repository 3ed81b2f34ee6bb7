"""Storage: one protocol (`base.Store`), an embedded SQLite implementation and PostgreSQL."""

from __future__ import annotations

from recall.store.base import Store
from recall.store.records import NewMessage, ParticipantRecord, WorldRecord
from recall.store.sqlite import DEFAULT_BUSY_TIMEOUT, SQLiteStore
from recall.store.urls import is_postgres_url

__all__ = [
    "NewMessage",
    "ParticipantRecord",
    "SQLiteStore",
    "Store",
    "WorldRecord",
    "is_postgres_url",
    "open_store",
]


def open_store(location: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Store:
    """Open the store a location names: a `postgresql://` URL, a SQLite file path, or `:memory:`
    (`busy_timeout`: seconds a SQLite write waits for another process's)."""
    if is_postgres_url(location):
        from recall.store.postgres import PostgresStore  # psycopg loads only when asked for

        return PostgresStore(location)
    return SQLiteStore(location, busy_timeout)

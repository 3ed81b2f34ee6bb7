"""Storage: one protocol (`base.Store`), an embedded SQLite implementation and PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall.settings import Settings
from recall.store.base import NewMessage, ParticipantRecord, Store, WorldRecord
from recall.store.sqlite import SQLiteStore
from recall.store.urls import is_postgres_url

if TYPE_CHECKING:
    from recall.search.index import SearchIndex
    from recall.search.indexer import BackgroundIndexer

__all__ = [
    "NewMessage",
    "ParticipantRecord",
    "SQLiteStore",
    "Store",
    "WorldRecord",
    "is_postgres_url",
    "open_search_index",
    "open_store",
]


def open_store(location: str) -> Store:
    """Open the store a location names: a `postgresql://` URL, a SQLite file path, or `:memory:`."""
    if is_postgres_url(location):
        from recall.store.postgres import PostgresStore  # psycopg loads only when asked for

        return PostgresStore(location)
    return SQLiteStore(location)


def open_search_index(store: Store, settings: Settings) -> tuple[SearchIndex | None, BackgroundIndexer | None]:
    """Transition: moved to `recall.search.open_search_index` (store/ knows no search; the lead
    points the callers there and deletes this)."""
    from recall.search import open_search_index as open_index

    return open_index(store, settings)

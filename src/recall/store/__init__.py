"""Storage: one protocol (`base.Store`), an embedded SQLite implementation and PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recall.settings import Settings
from recall.store.base import NewMessage, ParticipantRecord, Store, WorldRecord
from recall.store.sqlite import SQLiteStore
from recall.store.urls import is_postgres_url

if TYPE_CHECKING:  # the search stack (numpy, the embedder) loads when a store opens its index
    from recall.retrieval.indexer import BackgroundIndexer
    from recall.store.sqlite_search import SQLiteSearchIndex

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


def open_search_index(store: Store, settings: Settings) -> tuple[SQLiteSearchIndex | None, BackgroundIndexer | None]:
    """The search index of a store, with the embedder the settings name, and its background
    indexer (started) unless `settings.index_interval` is 0. (None, None) for a store
    without one."""
    from recall.retrieval.embeddings import embedder_for
    from recall.retrieval.indexer import BackgroundIndexer
    from recall.store.sqlite_search import SQLiteSearchIndex

    embedder = embedder_for(settings.embeddings)
    index: SQLiteSearchIndex
    if isinstance(store, SQLiteStore):
        index = SQLiteSearchIndex(store, embedder)
    else:
        from recall.store.postgres import PostgresStore
        from recall.store.postgres_search import PostgresSearchIndex

        if not isinstance(store, PostgresStore):
            return None, None
        index = PostgresSearchIndex(store, embedder)
    if not settings.index_interval > 0:
        return index, None
    return index, BackgroundIndexer(index, batch=settings.embed_batch, interval=settings.index_interval).start()

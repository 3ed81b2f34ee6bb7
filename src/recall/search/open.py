"""Opening a store's search index: the backend its database needs, the embedder the settings
name, and the background indexer. The search stack (numpy, the model) loads only here, when a
store opens its index, not when `recall` is imported."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recall.search.embeddings import Embedder
    from recall.search.index import SearchIndex
    from recall.search.indexer import BackgroundIndexer
    from recall.settings import Settings
    from recall.store.base import Store


def search_index(store: Store, embedder: Embedder | None) -> SearchIndex | None:
    """The search index of a store, on its database's primitives; None for a store without one."""
    from recall.search.index import SearchIndex
    from recall.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        from recall.search.sqlite import SQLiteSearch

        return SearchIndex(SQLiteSearch(store), embedder)
    from recall.store.postgres import PostgresStore  # psycopg loads only for a PostgreSQL store

    if isinstance(store, PostgresStore):
        from recall.search.postgres import PostgresSearch

        return SearchIndex(PostgresSearch(store), embedder)
    return None


def open_search_index(store: Store, settings: Settings) -> tuple[SearchIndex | None, BackgroundIndexer | None]:
    """The search index of a store, with the embedder the settings name, and its background
    indexer (started) unless `settings.index_interval` is 0. (None, None) for a store
    without one."""
    from recall.search.embeddings import embedder_for
    from recall.search.indexer import BackgroundIndexer

    index = search_index(store, embedder_for(settings.embeddings))
    if index is None:
        return None, None
    if not settings.index_interval > 0:
        return index, None
    return index, BackgroundIndexer(index, batch=settings.embed_batch, interval=settings.index_interval).start()

"""Moved to recall.search; the index class is recall.search.index.SearchIndex on the PostgreSQL
primitives (recall.search.postgres.PostgresSearch). Transition shim: the lead deletes it."""

from recall.search.index import SearchIndex as PostgresSearchIndex

__all__ = ["PostgresSearchIndex"]

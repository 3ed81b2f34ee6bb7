"""Moved to recall.search; the index class is recall.search.index.SearchIndex on the SQLite
primitives (recall.search.sqlite.SQLiteSearch). Transition shim: the lead deletes it."""

from recall.search.base import IndexItem, SearchHit, message_text
from recall.search.index import SearchIndex as SQLiteSearchIndex

__all__ = ["IndexItem", "SQLiteSearchIndex", "SearchHit", "message_text"]

"""Moved to recall.search.indexer (transition shim: the lead deletes it)."""

from recall.search.indexer import BackgroundIndexer

__all__ = ["BackgroundIndexer"]

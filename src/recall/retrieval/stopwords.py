"""Moved to recall.search.stopwords (transition shim: the lead deletes it)."""

from recall.search.stopwords import STOP_WORDS, content_terms

__all__ = ["STOP_WORDS", "content_terms"]

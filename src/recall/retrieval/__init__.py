"""Moved to recall.search (transition shim: the lead rewrites the imports and deletes it)."""

"""Moved to recall.search.embeddings (transition shim: the lead deletes it)."""

from recall.search.embeddings import Embedder, bundled_model_dir, default_embedder, embedder_for

__all__ = ["Embedder", "bundled_model_dir", "default_embedder", "embedder_for"]

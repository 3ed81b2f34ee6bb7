"""Retrieval: embeddings, rank fusion and the background indexer behind semantic search."""

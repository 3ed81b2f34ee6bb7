"""Moved to recall.search.fusion (transition shim: the lead deletes it)."""

from recall.search.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion

__all__ = ["DEFAULT_RRF_K", "reciprocal_rank_fusion"]

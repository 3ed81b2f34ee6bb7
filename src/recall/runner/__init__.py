"""Agents that answer: the runner loop, reply post-processing and history summaries (spec §7)."""

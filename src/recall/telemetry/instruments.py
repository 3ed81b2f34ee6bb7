"""The metrics recall records (docs/opentelemetry.md lists them), and the names of its spans.

Durations are in seconds, as OpenTelemetry's semantic conventions measure them. A metric's
labels are few values each (an outcome, a kind): never an id, which would make a series per
world or agent.
"""

from __future__ import annotations

#: Each metric: "histogram" or "counter", its unit, what it measures.
INSTRUMENTS: dict[str, tuple[str, str, str]] = {
    "recall.context.duration": ("histogram", "s", "Time to build one context"),
    "recall.context.tokens": ("histogram", "{token}", "Tokens one context used"),
    "recall.context.budget": ("histogram", "{token}", "The token budget of one context"),
    "recall.context.budget_used": ("histogram", "1", "Tokens used over the budget (0..1) of one context"),
    "recall.context.dropped": (
        "counter",
        "{item}",
        "Evidence (messages, facts, memories) left out of contexts for the budget, by kind",
    ),
    "recall.search.duration": ("histogram", "s", "Time of one search"),
    "recall.post.duration": ("histogram", "s", "Time to store one post of one or more messages"),
    "recall.inbox.wait.duration": ("histogram", "s", "Time an inbox check waited (woken or timed out)"),
    "recall.extraction.duration": ("histogram", "s", "Time of one fact extraction's model call"),
    "recall.index.batch.duration": ("histogram", "s", "Time of one batch of the search index worker"),
    "recall.index.batch.size": ("histogram", "{item}", "Items one batch of the search index worker indexed"),
}

#: The spans: a context build's phases are children of its span.
CONTEXT = "recall.context"
CONTEXT_SCAN = "recall.context.scan"
CONTEXT_SEARCH = "recall.context.search"
CONTEXT_RANKING = "recall.context.ranking"
CONTEXT_PACKING = "recall.context.packing"
SEARCH = "recall.search"
POST = "recall.post"
INBOX_WAIT = "recall.inbox.wait"
INBOX_WAKE = "recall.inbox.wake"
EXTRACTION = "recall.extraction"
INDEX_BATCH = "recall.index.batch"

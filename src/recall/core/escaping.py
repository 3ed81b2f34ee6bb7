"""Stored text inside the context messages recall builds (spec §4).

Facts, summary sections, long-term memories, similar past messages, observations and history
summaries all come from stored text that anyone with write access could have chosen. Passed
through `escape`, such text can neither open nor close a tag of ours (`<memory>`, `</memory>`,
or any other), so one agent's stored words cannot forge a block in another agent's context.
"""

from __future__ import annotations

import html


def escape(text: str) -> str:
    """`<`, `>` and `&` as HTML entities: no tag can start or end inside `text`, and text that
    already looks like an entity (`&lt;`) stays distinguishable from a real `<`."""
    return html.escape(text, quote=False)

"""Provider formats: OpenAI chat messages, and Anthropic's `system` + alternating messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recall.core.context_parts import ContextMessage

#: Anthropic's messages must start with a user turn; this stands in for older history.
ANTHROPIC_OPENING = "(conversation continues)"


def to_openai(messages: Sequence[ContextMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.name:
            item["name"] = m.name
        item.update(m.extra)
        out.append(item)
    return out


def _anthropic_text(m: ContextMessage) -> str:
    # Anthropic has no `name` field: attribute other speakers in the text.
    if m.role == "user" and m.name:
        return f"{m.name}: {m.content}"
    if m.role == "tool":
        return f"tool result: {m.content}"
    return m.content


def to_anthropic(messages: Sequence[ContextMessage]) -> dict[str, Any]:
    """System-role messages join into `system`; consecutive same-role turns merge."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "assistant" if m.role == "assistant" else "user"
        text = _anthropic_text(m)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": ANTHROPIC_OPENING})
    return {"system": system, "messages": turns}

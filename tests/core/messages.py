"""Stored messages for core tests, built the way the store builds them (type, mentions parsed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from recall.core.models import Message
from recall.core.routing import mentions, paragraph_mentions, sender_type

HUMANS = frozenset({"maria"})
AGENTS = frozenset({"agent-a", "agent-b", "test-agent", "other-agent"})
T0 = datetime(2025, 10, 27, 9, 0, tzinfo=UTC)

#: (sender, content) or (sender, content, metadata)
Turn = tuple[str, str] | tuple[str, str, dict[str, Any]]


def make_message(
    sender: str, content: str, msg_id: int = 1, *, chat_id: str | None = None, metadata: dict[str, Any] | None = None
) -> Message:
    kind = sender_type(sender, HUMANS, AGENTS)
    assert kind is not None, f"test bug: unknown sender {sender!r}"
    return Message(
        id=msg_id,
        world_id="w",
        sender=sender,
        sender_type=kind,
        content=content,
        created_at=T0 + timedelta(seconds=msg_id),
        chat_id=chat_id,
        mentions=tuple(mentions(content)),
        addressed=tuple(paragraph_mentions(content)),
        metadata=dict(metadata or {}),
    )


def conversation(*turns: Turn, chat_id: str | None = None) -> list[Message]:
    """Messages oldest first, ids 1, 2, …"""
    out = []
    for i, turn in enumerate(turns, start=1):
        metadata = turn[2] if len(turn) == 3 else None
        out.append(make_message(turn[0], turn[1], i, chat_id=chat_id, metadata=metadata))
    return out

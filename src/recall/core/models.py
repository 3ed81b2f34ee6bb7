"""The plain data the core works on: participants, messages, observations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class SenderType(StrEnum):
    HUMAN = "human"
    AGENT = "agent"
    SYSTEM = "system"
    WORLD = "world"


class ContextFilter(StrEnum):
    #: Only what the agent was addressed in (the would-respond rule), plus its own messages.
    ADDRESSED = "addressed"
    #: Everything it heard, for moderators and observers.
    ALL = "all"


CHANNELS = ("chat", "call", "sms", "email")


@dataclass(frozen=True)
class AgentProfile:
    """An agent: the parts of its static system prompt and its context settings.

    `None` settings fall back to the world's and then the global defaults.
    """

    id: str
    system_prompt: str = ""
    identity: str = ""
    personality: str = ""
    knowledge: str = ""
    goals: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    guidelines: tuple[str, ...] = ()
    channel: str | None = None
    history_limit: int | None = None
    max_tokens: int | None = None
    context_filter: ContextFilter = ContextFilter.ADDRESSED
    model: str | None = None
    #: The recalled past (see `Settings.recalled_*`): tokens at most, the score-adaptive
    #: cutoff, passages at most, the least similarity, and "world" or "chat".
    recalled_max_tokens: int | None = None
    recalled_cutoff: float | None = None
    recalled_limit: int | None = None
    recalled_min_similarity: float | None = None
    recalled_scope: str | None = None


@dataclass(frozen=True)
class Message:
    """One stored message. `chat_id` None is the world's default chat."""

    id: int
    world_id: str
    sender: str
    sender_type: SenderType
    content: str
    created_at: datetime
    chat_id: str | None = None
    channel: str | None = None
    parent_id: int | None = None
    mentions: tuple[str, ...] = ()
    addressed: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """The message `to_dict` (and the HTTP API) wrote."""
        return cls(
            id=int(data["id"]),
            world_id=str(data["world_id"]),
            sender=str(data["sender"]),
            sender_type=SenderType(data["sender_type"]),
            content=str(data["content"]),
            created_at=datetime.fromisoformat(str(data["created_at"])),
            chat_id=data.get("chat_id"),
            channel=data.get("channel"),
            parent_id=data.get("parent_id"),
            mentions=tuple(data.get("mentions") or ()),
            addressed=tuple(data.get("addressed") or ()),
            metadata=dict(data.get("metadata") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "world_id": self.world_id,
            "chat_id": self.chat_id,
            "sender": self.sender,
            "sender_type": self.sender_type.value,
            "channel": self.channel,
            "parent_id": self.parent_id,
            "content": self.content,
            "mentions": list(self.mentions),
            "addressed": list(self.addressed),
            "created_at": self.created_at.isoformat(),
            "metadata": self.metadata,
        }


def with_caption(content: str, metadata: Mapping[str, Any]) -> str:
    """A message's text with a shared image's caption, as it is searched and recalled: a search
    for "the photo of the beach" finds the message that shared it."""
    caption = metadata.get("image_caption") or metadata.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        return f"{content} [shares an image: {caption.strip()}]"
    return content

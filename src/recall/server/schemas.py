"""Request bodies of the REST API. Unknown fields are refused so a typo never passes silently."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Id = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_]+(?:[-_][A-Za-z0-9_]+)*$")


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorldIn(Body):
    id: str = Id
    name: str | None = Field(default=None, max_length=200)
    turn_limit: int | None = Field(default=None, ge=1, le=1000)


class AgentIn(Body):
    id: str = Id
    system_prompt: str = Field(default="", max_length=100_000)
    identity: str = Field(default="", max_length=100_000)
    personality: str = Field(default="", max_length=100_000)
    knowledge: str = Field(default="", max_length=100_000)
    goals: list[str] = Field(default_factory=list, max_length=100)
    constraints: list[str] = Field(default_factory=list, max_length=100)
    guidelines: list[str] = Field(default_factory=list, max_length=100)
    channel: Literal["chat", "call", "sms", "email"] | None = None
    history_limit: int | None = Field(default=None, ge=0, le=10_000)
    max_tokens: int | None = Field(default=None, ge=1, le=10_000_000)
    context_filter: Literal["addressed", "all"] = "addressed"
    model: str | None = Field(default=None, max_length=200)


class HumanIn(Body):
    id: str = Id


class MessageIn(Body):
    sender: str = Field(min_length=1, max_length=64)
    content: str = Field(min_length=1)
    chat_id: str | None = Field(default=None, max_length=64)
    channel: Literal["chat", "call", "sms", "email"] | None = None
    parent_id: int | None = Field(default=None, ge=1, le=2**62)
    created_at: datetime | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    metadata: dict[str, Any] | None = None


class SendIn(Body):
    content: str = Field(min_length=1)
    chat_id: str | None = Field(default=None, max_length=64)
    parent_id: int | None = Field(default=None, ge=1, le=2**62)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)


class ContextIn(Body):
    chat_id: str | None = Field(default=None, max_length=64)
    max_tokens: int | None = Field(default=None, ge=1, le=10_000_000)
    history_limit: int | None = Field(default=None, ge=0, le=10_000)
    message_id: int | None = Field(default=None, ge=1, le=2**62)
    channel: Literal["chat", "call", "sms", "email"] | None = None
    format: Literal["openai", "anthropic"] = "openai"


class AckIn(Body):
    ids: list[Annotated[int, Field(ge=1, le=2**62)]] = Field(min_length=1, max_length=1000)


class MemoryIn(Body):
    value: Any
    ttl: float | None = Field(default=None, gt=0, le=10 * 365 * 24 * 3600, description="seconds until it expires")


class ObservationIn(Body):
    time: float
    position: tuple[float, float] | None = None
    collected: int | None = Field(default=None, ge=0)
    items: dict[str, list[tuple[float, float]]] = Field(default_factory=dict)
    agents: list[str | dict[str, Any]] = Field(default_factory=list)
    note: str = ""


class ActionIn(Body):
    time: float
    kind: str = Field(min_length=1, max_length=64)
    position: tuple[float, float] | None = None
    target: str | None = None
    utterance: str | None = None
    description: str = ""

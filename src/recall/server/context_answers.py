"""The JSON of contexts, inbox checks and recorded model calls, described for the OpenAPI schema.

Documentation only, like `answers.py`: the routes send what `views.py` and the records' `to_dict`s
build. An item of a context's report or of a recorded call carries its scores as extra fields
(`rank`, `score`, `similarity`, `scope`, `excerpt`, …: which ones depend on its section), so
those two shapes allow fields beyond the ones they name.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, NotRequired

from pydantic import ConfigDict, Field, JsonValue, with_config
from typing_extensions import TypedDict

from recall.server.answers import Message

#: An item's id: a message's or memory's number, a fact's, or a block's name (null: none).
ItemId = int | str | None


@with_config(ConfigDict(extra="allow"))
class ReportItem(TypedDict):
    """One item of a context's report: a message, fact, memory or block, in or left out, and why."""

    kind: str
    id: ItemId
    included: bool
    section: NotRequired[str | None]
    reason: NotRequired[Annotated[str | None, Field(description="Why it is left out (or in, if not by its rank)")]]
    tokens: NotRequired[int]
    sender: NotRequired[str]
    chat_id: NotRequired[str | None]


class ContextReport(TypedDict):
    """What went into a context and what was left out: tokens per section, every item and why."""

    agent_id: str
    chat_id: str | None
    encoding: str
    budget: int
    total_tokens: int
    sections: dict[str, int]
    history_limit: int
    context_filter: str
    incoming_count: int
    excluded: Annotated[
        dict[str, int], Field(description="Left-out candidates by reason (`not-addressed`, `over-budget`, …)")
    ]
    items: list[ReportItem]
    notes: list[str]


class OpenAIMessage(TypedDict):
    """A chat message of OpenAI's Chat Completions API."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    name: NotRequired[str]
    tool_calls: NotRequired[
        Annotated[JsonValue, Field(description="The agent's own tool calls, as its message's metadata held them")]
    ]
    tool_call_id: NotRequired[str]


class AnthropicMessage(TypedDict):
    """A message of Anthropic's Messages API."""

    role: Literal["user", "assistant"]
    content: str


CallId = Annotated[str, Field(description="With `record`: the id of the model call it was recorded as")]


class OpenAIContext(TypedDict):
    """A context in OpenAI's shape (`format: openai`): `messages` go straight to the model."""

    messages: list[OpenAIMessage]
    report: ContextReport
    call_id: NotRequired[CallId]


class AnthropicContext(TypedDict):
    """A context in Anthropic's shape (`format: anthropic`): `system` and `messages` go straight to the model."""

    system: str
    messages: list[AnthropicMessage]
    report: ContextReport
    call_id: NotRequired[CallId]


class RecalledPast(TypedDict):
    """The recalled past sent with an inbox check (context once: `unchanged` when sent before)."""

    content: str | None
    tokens: int
    unchanged: bool
    passages: list[ReportItem]


class ContextMetadata(TypedDict):
    chat_id: str | None
    total_messages: int
    oldest_id: int | None
    newest_id: int | None
    truncated: Annotated[bool, Field(description="Older context was left out by `context_limit`")]
    delta: Annotated[bool, Field(description="Only what this session was not sent before (context once)")]


class InboxCheck(TypedDict):
    """One inbox check: unread messages the agent should answer, with context when asked."""

    new_mentions: list[Message]
    context: list[Message]
    context_metadata: ContextMetadata
    recalled: NotRequired[
        Annotated[RecalledPast, Field(description="With `include_context`: the recalled past of the newest mention")]
    ]
    call_id: NotRequired[CallId]


# -- recorded calls -----------------------------------------------------------------------------


@with_config(ConfigDict(extra="allow"))
class CallItem(TypedDict):
    """One item of a recorded call: what it was, its version, rank and scores, in or left out and why."""

    section: str
    kind: str
    id: ItemId
    included: bool
    rank: int
    tokens: NotRequired[int]
    reason: NotRequired[str | None]
    version: NotRequired[Annotated[str, Field(description="What a fact or memory said then (8 hex digits)")]]


class CallCounts(TypedDict):
    included: int
    left_out: int


class Call(TypedDict):
    """A recorded model call: ids and versions of what its context held, never a second copy of the
    text (unless the server keeps full copies: `messages`)."""

    id: str
    world_id: str
    agent_id: str
    chat_id: str | None
    trigger_id: Annotated[int | None, Field(description="The message it answered (null: erased since, or none)")]
    at: datetime
    source: str
    model: str
    encoding: str
    settings: dict[str, JsonValue]
    sections: dict[str, int]
    total_tokens: int
    excluded: dict[str, int]
    counts: CallCounts
    digest: Annotated[str, Field(description="sha256 of the context as the model got it")]
    through: int
    erased: int
    trigger_erased: bool
    outcome: Literal["answered", "failed"] | None
    error: str | None
    items: NotRequired[Annotated[list[CallItem], Field(description="Read one call for its items; not in a listing")]]
    messages: NotRequired[list[OpenAIMessage]]


class Calls(TypedDict):
    calls: list[Call]


class Outcome(TypedDict):
    id: str
    outcome: Literal["answered", "failed"]
    error: str | None


class ItemChange(TypedDict):
    change: Literal["added", "removed", "moved", "edited", "rescored"]
    kind: str
    id: ItemId
    a: CallItem | None
    b: CallItem | None
    why: str | None


class Pair(TypedDict):
    a: JsonValue
    b: JsonValue


class TokenPair(TypedDict):
    a: int
    b: int


class CallDiff(TypedDict):
    identical: bool
    settings: Annotated[dict[str, Pair], Field(description="The settings that differ")]
    items: list[ItemChange]
    tokens: TokenPair
    notes: list[str]


class Replay(TypedDict):
    """A call rebuilt from the store (replay) or beside another (compare)."""

    call: Call
    identical: Annotated[bool, Field(description="The model would get the same bytes")]
    now: Call | None
    diff: CallDiff | None
    messages: list[OpenAIMessage] | None
    notes: list[str]

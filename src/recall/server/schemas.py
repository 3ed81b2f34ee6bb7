"""Request bodies of the REST API. Unknown fields are refused so a typo never passes silently."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recall.app.memories import NOTE_TYPE
from recall.app.validation import ID_PATTERN, MAX_CONTEXT_TOKENS, MAX_ID_LENGTH, check_id
from recall.errors import InvalidInputError
from recall.limits import MAX_MODEL_NAME

#: The patterns the schemas below hold, the same the Python API checks; OpenAPI shows them to
#: machines, `pattern_in_words` says what they want to people.
ID_REGEX = rf"^{ID_PATTERN.pattern}$"
NOTE_TYPE_REGEX = rf"^{NOTE_TYPE.pattern}$"

Id = Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=ID_REGEX)


def _id_in_words(value: object) -> str:
    """What `check_id` says of the value: the Python API's and the CLI's words for a bad id."""
    try:
        check_id("id", value)
    except InvalidInputError as exc:
        return exc.problem
    return f"{value!r} is not a valid id"  # not reached: the schema and check_id share one pattern


def _note_type_in_words(value: object) -> str:
    return f"a lowercase word of at most 40 characters (e.g. note, episode), got {value!r}"


#: Every pattern of the API's schemas, and what it asks for in words (a test checks that each
#: pattern in /openapi.json has its words here).
PATTERN_WORDS = {ID_REGEX: _id_in_words, NOTE_TYPE_REGEX: _note_type_in_words}


def pattern_in_words(pattern: str, value: object) -> str:
    """Why `value` does not match `pattern`, in words: a client is told what to send, never a regex."""
    words = PATTERN_WORDS.get(pattern)
    return words(value) if words is not None else f"{value!r} is not in the form this field takes"


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
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_CONTEXT_TOKENS)
    context_filter: Literal["addressed", "all"] = "addressed"
    model: str | None = Field(default=None, max_length=200)
    recalled_max_tokens: int | None = Field(default=None, ge=0, le=1_000_000)
    recalled_cutoff: float | None = Field(default=None, ge=0, le=1)
    recalled_limit: int | None = Field(default=None, ge=0, le=1000)
    recalled_min_similarity: float | None = Field(default=None, ge=0, le=1)
    recalled_scope: Literal["world", "chat"] | None = None


class AgentPatch(Body):
    """Settings to change; those left out stay, and null puts one back to its default."""

    system_prompt: str | None = Field(default=None, max_length=100_000)
    identity: str | None = Field(default=None, max_length=100_000)
    personality: str | None = Field(default=None, max_length=100_000)
    knowledge: str | None = Field(default=None, max_length=100_000)
    goals: list[str] | None = Field(default=None, max_length=100)
    constraints: list[str] | None = Field(default=None, max_length=100)
    guidelines: list[str] | None = Field(default=None, max_length=100)
    channel: Literal["chat", "call", "sms", "email"] | None = None
    history_limit: int | None = Field(default=None, ge=0, le=10_000)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_CONTEXT_TOKENS)
    context_filter: Literal["addressed", "all"] | None = None
    model: str | None = Field(default=None, max_length=200)
    recalled_max_tokens: int | None = Field(default=None, ge=0, le=1_000_000)
    recalled_cutoff: float | None = Field(default=None, ge=0, le=1)
    recalled_limit: int | None = Field(default=None, ge=0, le=1000)
    recalled_min_similarity: float | None = Field(default=None, ge=0, le=1)
    recalled_scope: Literal["world", "chat"] | None = None


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
    #: May be empty only when `metadata.tool_calls` holds the calls the agent's model made.
    content: str = ""
    chat_id: str | None = Field(default=None, max_length=64)
    parent_id: int | None = Field(default=None, ge=1, le=2**62)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    metadata: dict[str, Any] | None = None


class ToolResultIn(Body):
    #: What the tool returned (empty: stored as "(no output)").
    content: str = ""
    #: The id of the agent's tool call this answers (from its model's `tool_calls`).
    call_id: str = Field(min_length=1, max_length=256)
    chat_id: str | None = Field(default=None, max_length=64)
    parent_id: int | None = Field(default=None, ge=1, le=2**62)


class DecideIn(Body):
    message_id: int = Field(ge=1, le=2**62)


class ContextIn(Body):
    chat_id: str | None = Field(default=None, max_length=64)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_CONTEXT_TOKENS)
    history_limit: int | None = Field(default=None, ge=0, le=10_000)
    message_id: int | None = Field(default=None, ge=1, le=2**62)
    channel: Literal["chat", "call", "sms", "email"] | None = None
    format: Literal["openai", "anthropic"] = "openai"
    #: Tokens of recalled past for this call (0: none; default: the agent's setting).
    recalled_max_tokens: int | None = Field(default=None, ge=0, le=1_000_000)
    #: The model the context is for (its tokenizer; its window when `max_tokens` is not given);
    #: default: the agent's `model` setting, else the server's.
    model: str | None = Field(default=None, min_length=1, max_length=MAX_MODEL_NAME)
    #: Record it as a model call (its id comes back as `call_id`): for a context sent to a model.
    record: bool = False


class CompareIn(Body):
    #: Another recorded call of the agent; without it the call is rebuilt now with the settings.
    other: str | None = Field(default=None, min_length=1, max_length=64)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_CONTEXT_TOKENS)
    history_limit: int | None = Field(default=None, ge=0, le=10_000)
    channel: Literal["chat", "call", "sms", "email"] | None = None
    recalled_max_tokens: int | None = Field(default=None, ge=0, le=1_000_000)


class OutcomeIn(Body):
    #: How the call failed (e.g. the model server's error); null or left out: the model answered.
    error: str | None = Field(default=None, min_length=1, max_length=2_000)


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


# -- facts, long-term memories, search ----------------------------------------------------------

SearchKind = Literal["message", "memory", "fact"]
SEARCH_KINDS: tuple[SearchKind, ...] = ("message", "memory", "fact")
Category = Literal["preference", "knowledge", "context", "behavior", "goal", "correction"]


class FactIn(Body):
    content: str = Field(min_length=1, max_length=10_000)
    category: Category = "knowledge"
    confidence: float = Field(default=1.0, ge=0, le=1)
    source: str = Field(default="manual", min_length=1, max_length=200)
    avoid: str | None = Field(default=None, max_length=2_000)


class FactPatch(Body):
    content: str | None = Field(default=None, min_length=1, max_length=10_000)
    category: Category | None = None
    confidence: float | None = Field(default=None, ge=0, le=1)
    source: str | None = Field(default=None, min_length=1, max_length=200)
    avoid: str | None = Field(default=None, max_length=2_000)


class SectionsIn(Body):
    work_context: str | None = Field(default=None, max_length=10_000)
    personal_context: str | None = Field(default=None, max_length=10_000)
    top_of_mind: str | None = Field(default=None, max_length=10_000)
    recent_months: str | None = Field(default=None, max_length=10_000)
    earlier_context: str | None = Field(default=None, max_length=10_000)
    long_term_background: str | None = Field(default=None, max_length=10_000)


class ImportedFact(FactIn):
    # Written by export, ignored on import.
    created_at: str | None = Field(default=None, max_length=64)
    updated_at: str | None = Field(default=None, max_length=64)


class FactsImportIn(Body):
    format: Literal["recall.facts/1"] = "recall.facts/1"
    scope: str | None = Field(default=None, max_length=300)
    exported_at: str | None = Field(default=None, max_length=64)
    sections: SectionsIn = Field(default_factory=SectionsIn)
    facts: list[ImportedFact] = Field(default_factory=list, max_length=10_000)
    replace: bool = False


#: A memory's longest time to live, in seconds (ten years, as for an agent's notes).
MAX_TTL_SECONDS = 10 * 365 * 24 * 3600
#: When a memory expires: a time, or seconds from now (not both).
ExpiresAt = Field(default=None, description="when it expires and is deleted (not with ttl); null: never")
Ttl = Field(default=None, gt=0, le=MAX_TTL_SECONDS, description="seconds until it expires (not with expires_at)")


class NoteIn(Body):
    content: str = Field(min_length=1, max_length=20_000)
    type: str = Field(default="note", pattern=NOTE_TYPE_REGEX)
    importance: int = Field(default=5, ge=1, le=10)
    chat_id: str | None = Field(default=None, max_length=64)
    metadata: dict[str, Any] = Field(default_factory=dict)
    expires_at: datetime | None = ExpiresAt
    ttl: float | None = Ttl


class NotePatch(Body):
    """A memory's fields to change (those left out stay); `expires_at` or `ttl` null: it never expires."""

    content: str | None = Field(default=None, min_length=1, max_length=20_000)
    type: str | None = Field(default=None, pattern=NOTE_TYPE_REGEX)
    importance: int | None = Field(default=None, ge=1, le=10)
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = ExpiresAt
    ttl: float | None = Ttl


class ExtractIn(Body):
    chat_id: str | None = Field(default=None, max_length=64)
    #: Where the facts go; default the newest human's `user:ID`.
    scope: str | None = Field(default=None, max_length=200)


class SearchIn(Body):
    query: str = Field(min_length=1, max_length=10_000)
    k: int = Field(default=10, ge=1, le=1000)
    kinds: list[SearchKind] = Field(default_factory=lambda: list(SEARCH_KINDS), min_length=1, max_length=3)
    method: Literal["hybrid", "bm25", "vector"] = "hybrid"
    chat_id: str | None = Field(default=None, max_length=64)
    sender: str | None = Field(default=None, max_length=64)
    since: datetime | None = None
    until: datetime | None = None
    min_importance: int | None = Field(default=None, ge=1, le=10)
    #: Leave out hits whose score (their relevance, 0..1) is under this.
    min_score: float | None = Field(default=None, ge=0, le=1)
    #: Only messages and memories whose metadata has each key equal to its value, or passing its
    #: operators ({"$in": [...]}, $ne, $gt, $gte, $lt, $lte): see docs/long-term-memory.md.
    metadata: dict[str, Any] | None = None
    #: When relative times in the query ("last week") count back from; default the current time.
    now: datetime | None = None

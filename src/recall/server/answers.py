"""The JSON the REST API answers with, described for its OpenAPI schema.

Documentation only: the routes name these shapes in `responses=` and keep returning the plain
dicts `views.py` and the records' `to_dict`s build. Their `response_model=Any` stands in for the
`dict[str, Any]` return annotation FastAPI would otherwise document beside the shape: an answer
is serialised as before (by pydantic, nothing checked or dropped), so no byte sent changes. (Not
`None`: FastAPI's fallback encoder is some 15 times slower on a large context.)
tests/server/test_response_schemas.py drives every route and checks each answer against these
shapes, strictly (no field missing, none undocumented), so they cannot drift from what is sent;
the TypeScript client's types are generated from them.

TypedDicts, because an answer may leave a field out (`NotRequired`), which differs from sending
it as null (`X | None`). The shapes of contexts and recorded calls are in `context_answers.py`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field, JsonValue, RootModel
from typing_extensions import TypedDict


def answering(model: Any, status: int = 200, also: dict[int, Any] | None = None) -> dict[str, Any]:
    """A route's keywords that document its JSON answer, `model` for `status` (and `also`'s
    entries for other statuses), while what it sends stays as is (`response_model=Any`: see the
    module's docstring)."""
    return {"response_model": Any, "responses": {status: {"model": model}, **(also or {})}}


#: Who sent a message (`core.models.SenderType`).
SenderType = Literal["human", "agent", "system", "world"]


class Health(TypedDict):
    status: Literal["ok"]


class Ready(TypedDict):
    status: Literal["ready"]


class NotReady(TypedDict):
    """The store cannot be reached, or its migrations are not current (503)."""

    status: Literal["unavailable"]
    error: str


# -- worlds and participants --------------------------------------------------------------------


class WorldInfo(TypedDict):
    id: str
    name: str | None
    turn_limit: int | None
    created_at: datetime


class ChatCount(TypedDict):
    id: Annotated[str | None, Field(description="null: the world's default chat")]
    messages: int


class WorldDetail(WorldInfo):
    agents: list[str]
    humans: list[str]
    chats: Annotated[list[ChatCount], Field(description="Each chat with its number of messages")]


class Worlds(TypedDict):
    worlds: list[WorldInfo]


class ImportedWorld(WorldInfo):
    imported: Annotated[dict[str, int], Field(description="Rows stored, by table")]


class AgentSettings(TypedDict):
    """An agent with its settings (null: the world's, then the server's default)."""

    world_id: str
    id: str
    kind: Literal["agent"]
    system_prompt: str
    identity: str
    personality: str
    knowledge: str
    goals: list[str]
    constraints: list[str]
    guidelines: list[str]
    channel: str | None
    history_limit: int | None
    max_tokens: int | None
    context_filter: Literal["addressed", "all"]
    model: str | None
    recalled_max_tokens: int | None
    recalled_cutoff: float | None
    recalled_limit: int | None
    recalled_min_similarity: float | None
    recalled_scope: str | None


class Human(TypedDict):
    world_id: str
    id: str
    kind: Literal["human"]
    created_at: datetime


class Agents(TypedDict):
    agents: list[AgentSettings]


class Humans(TypedDict):
    humans: list[Human]


# -- messages and inboxes -----------------------------------------------------------------------


class Message(TypedDict):
    id: int
    world_id: str
    chat_id: Annotated[str | None, Field(description="null: the world's default chat")]
    sender: str
    sender_type: SenderType
    channel: str | None
    parent_id: int | None
    content: str
    mentions: Annotated[list[str], Field(description="Who it mentions (`@id` anywhere in the text)")]
    addressed: Annotated[
        list[str], Field(description="Who it addresses (a paragraph-beginning mention): those agents answer it")
    ]
    created_at: datetime
    metadata: dict[str, JsonValue]


class Posted(Message):
    """A stored post, with the agents it was delivered to."""

    delivered_to: list[str]


class ListedMessage(Message):
    """A message of a page; `detail=true` adds who it was delivered to and who would answer it."""

    delivered_to: NotRequired[list[str]]
    would_respond: NotRequired[list[str]]


class MessagePage(TypedDict):
    messages: list[ListedMessage]
    next_after: Annotated[int | None, Field(description="Pass as `after` for the next page; null on the last page")]


class Sent(TypedDict):
    """What an agent's send (or tool result) answers."""

    message_id: int
    timestamp: datetime
    mentions: list[str]
    thread_id: Annotated[
        JsonValue,
        Field(description="The id of the thread's first message (the message's own id when it starts one)"),
    ]
    chat_id: str | None
    delivered_to: list[str]


class Delivery(Message):
    read: bool


class Deliveries(TypedDict):
    messages: list[Delivery]


class Acknowledged(TypedDict):
    acknowledged: Annotated[int, Field(description="Messages newly marked read")]


class Decision(TypedDict):
    respond: bool
    turn_count: int
    turn_limit: int | None
    notice: Annotated[str | None, Field(description="What the agent posts instead of answering, when stopped")]
    reason: Annotated[
        str | None, Field(description="Why it does not answer (`own`, `turn-limit`, …); null when it does")
    ]


class TurnCount(TypedDict):
    turn_count: int


class StoredId(TypedDict):
    id: int


# -- notes, facts, memories, search -------------------------------------------------------------


class Note(TypedDict):
    """A key-value note an agent keeps for its program."""

    key: str
    value: JsonValue
    updated_at: datetime
    expires_at: datetime | None


class Notes(TypedDict):
    items: list[Note]


class Forgotten(TypedDict):
    forgotten: Annotated[bool, Field(description="false: there was no note under the key")]


class DeletedOne(TypedDict):
    deleted: Literal[True]


class Fact(TypedDict):
    id: int
    scope: str
    content: str
    category: Literal["preference", "knowledge", "context", "behavior", "goal", "correction"]
    confidence: float
    source: Annotated[str, Field(description='Where it came from: a message or thread id, or "manual"')]
    avoid: Annotated[str | None, Field(description="For a correction: what to avoid saying or doing")]
    created_at: datetime
    updated_at: datetime


class FactListing(TypedDict):
    scope: str
    facts: list[Fact]
    sections: dict[str, str]


class ScopeCount(TypedDict):
    scope: str
    facts: int


class Scopes(TypedDict):
    scopes: list[ScopeCount]


class ExportedFact(TypedDict):
    content: str
    category: Literal["preference", "knowledge", "context", "behavior", "goal", "correction"]
    confidence: float
    source: str
    avoid: str | None
    created_at: datetime
    updated_at: datetime


class FactsExport(TypedDict):
    format: Literal["recall.facts/1"]
    scope: str
    exported_at: datetime
    sections: dict[str, str]
    facts: list[ExportedFact]


class FactsImported(TypedDict):
    added: int
    skipped: Annotated[int, Field(description="Duplicates of facts already there")]
    removed: Annotated[int, Field(description="With `replace`: the facts cleared first")]


class FactsRemoved(TypedDict):
    removed: int


class Sections(RootModel[dict[str, str]]):
    """A scope's summary sections, by name."""


class ExtractionQueued(TypedDict):
    """Whether an extraction was queued; when not, `reason` says why."""

    queued: bool
    scope: NotRequired[str]
    thread: NotRequired[str]
    messages: NotRequired[Annotated[int, Field(description="Messages it will read")]]
    reason: NotRequired[str]


class Extractions(TypedDict):
    extractions: Annotated[int, Field(description="Model calls made")]


class Memory(TypedDict):
    """A long-term memory: shared by a world's agents (`owner` null) or one agent's own."""

    id: int
    world_id: str
    owner: str | None
    type: str
    content: str
    importance: int
    chat_id: str | None
    metadata: dict[str, JsonValue]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None


class Memories(TypedDict):
    memories: list[Memory]


class SearchHit(TypedDict):
    kind: Literal["message", "memory", "fact"]
    source_id: int
    score: Annotated[float, Field(description="Relevance, 0..1")]
    text: str
    space: str
    chat_id: str | None
    sender: str | None
    created_at: datetime
    importance: int | None
    similarity: float | None
    method: str
    keyword_rank: int | None
    vector_rank: int | None
    scope: Annotated[str | None, Field(description="For a fact: its scope (`user:maria`, …)")]


class SearchResults(TypedDict):
    results: list[SearchHit]


# -- deleting -----------------------------------------------------------------------------------


class Deleted(TypedDict):
    """What a deletion removed, by kind."""

    deleted: Literal[True]
    participants: int
    messages: int
    deliveries: int
    memories: int
    facts: int
    notes: int
    observations: int
    reparented: Annotated[int, Field(description="Replies to a deleted message, now replies to its parent")]


# -- errors -------------------------------------------------------------------------------------


class FieldProblem(TypedDict):
    """One problem of a request that did not validate: the field and what it takes, in words."""

    field: str
    message: str


class ErrorDetail(TypedDict):
    type: Annotated[str, Field(description="recall's error code: `invalid_input`, `not_found`, `conflict`, …")]
    message: str
    field: NotRequired[Annotated[str, Field(description="The field that was wrong, when one was")]]
    problems: NotRequired[
        Annotated[list[FieldProblem], Field(description="Every problem of a request that did not validate (422)")]
    ]


class ErrorAnswer(TypedDict):
    """Every error the API answers (`views.error`)."""

    error: ErrorDetail


#: What any route may answer besides its own JSON: recall's error body, for a request it refuses
#: (4xx: the status says why) or when another process held a SQLite store's write lock too long.
ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorAnswer, "description": "The request was refused: the error says why"},
    503: {"model": ErrorAnswer, "description": "`store_busy`: try again after `Retry-After` seconds"},
}

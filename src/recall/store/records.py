"""The records the store takes and returns: worlds, participants, messages to store, notes,
memories, context sessions, recorded calls and queued extractions. Plain values, below every
part of the store (`base.py` the protocol, the `sql_*` modules the SQL), so each can import them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from recall.core.facts import Fact
from recall.core.models import SenderType


@dataclass(frozen=True)
class WorldRecord:
    """A world. `id` is what its tenant calls it (unique within the tenant); `key` is unique in
    the store and is what every per-world row and store method (their `world_id` arguments)
    refer to. They are equal unless another tenant had the id first (see rows.new_world_key)."""

    id: str
    name: str
    created_at: datetime
    turn_limit: int | None = None
    tenant: str = ""
    key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", self.id)


@dataclass(frozen=True)
class ParticipantRecord:
    world_id: str
    id: str
    kind: str  # "agent" | "human"
    created_at: datetime
    #: Agent prompt parts and settings (the fields of `AgentProfile`), JSON-safe.
    profile: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NewMessage:
    """A message ready to store: routing already done by the service."""

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
    idempotency_key: str | None = None
    #: Agents that get it in their inbox (every agent of the world but the author).
    recipients: tuple[str, ...] = ()
    #: The author, when it is an agent: the message joins its memory as its own.
    author_agent: str | None = None
    #: A human or world message gives the recipients their turns back.
    reset_turns: bool = False
    #: Imported history: its deliveries are stored read at this time, so nobody answers it
    #: (it is in the recipients' memory all the same). None: unread, waiting in the inboxes.
    read_at: datetime | None = None


@dataclass(frozen=True)
class Note:
    """One entry of an agent's private key-value memory; `value` is any JSON value."""

    key: str
    value: Any
    updated_at: datetime
    expires_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "updated_at": self.updated_at.isoformat(),
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
        }


@dataclass(frozen=True)
class FactWrite:
    """What one change to a scope's facts did."""

    added: tuple[Fact, ...] = ()
    updated: tuple[Fact, ...] = ()
    removed: tuple[int, ...] = ()
    #: Nothing was written: a message the change was read from is gone (`change_facts` sources).
    stale: bool = False


@dataclass(frozen=True)
class NewMemory:
    owner: str
    type: str
    content: str
    importance: int
    created_at: datetime
    chat_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: When it stops being returned and is deleted; None: never.
    expires_at: datetime | None = None
    #: When it was last written (None: `created_at`), for a keyed memory written over.
    updated_at: datetime | None = None


#: What joins a keyed memory's namespace labels (LangGraph's labels never hold it).
NAMESPACE_SEPARATOR = "."


class Address(NamedTuple):
    """Where a keyed memory lives (`store/keyed.py`): `namespace` its labels joined by '.', and its key."""

    namespace: str
    key: str


@dataclass(frozen=True)
class Memory:
    """A long-term memory: shared in its world (owner '') or private to one agent. `updated_at`
    is when it was last changed (its `created_at` until then); `expires_at` when it stops being
    returned and is deleted (None: never)."""

    id: int
    world_id: str
    owner: str
    type: str
    content: str
    importance: int
    chat_id: str | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None

    def expired(self, now: datetime) -> bool:
        """Whether it is past its expiry at `now`."""
        return self.expires_at is not None and self.expires_at <= now

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "world_id": self.world_id,
            "owner": self.owner or None,
            "type": self.type,
            "content": self.content,
            "importance": self.importance,
            "chat_id": self.chat_id,
            "metadata": self.metadata,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
        }


@dataclass(frozen=True)
class ContextSession:
    """Context once: the newest message id already sent as context, when it was last refreshed,
    and a digest of the recalled past last sent ('' for none), so an unchanged one is not sent again."""

    last_sent_id: int
    refreshed_at: datetime
    recalled_digest: str = ""


class CallRow(NamedTuple):
    """One recorded call as stored: `agent_id` the agent's id, `chat_id` None for the default
    chat, `body` the service's compressed record, `outcome` and `error` what its caller
    reported of it (None: nothing)."""

    id: str
    agent_id: str
    chat_id: str | None
    trigger_id: int | None
    created_at: datetime
    source: str
    digest: str
    body: bytes
    outcome: str | None = None
    error: str | None = None


class NewCall(NamedTuple):
    """A call to store; `senders` who said the messages it quotes (`senders_text`)."""

    id: str
    world_id: str
    agent_id: str
    chat_id: str | None
    trigger_id: int | None
    created_at: datetime
    source: str
    digest: str
    body: bytes
    senders: str = ""


class ExtractionJob(NamedTuple):
    """One queued extraction: the facts of `scope` from what agent `agent_id` of the world
    whose key is `world_id` heard in chat `chat_id` ('' the default chat)."""

    tenant: str
    scope: str
    thread: str
    world_id: str
    agent_id: str
    chat_id: str
    token: str
    owner: str
    #: When it was due to run, and when it was queued (epoch seconds).
    due_at: float
    queued_at: float

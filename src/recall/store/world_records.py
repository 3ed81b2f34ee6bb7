"""What deleting, exporting and importing whole worlds pass between the service and the store
(`world_delete.py`, `world_dump.py`): plain records, no SQL."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The tables of one world in an export, in the order they are written and imported (parents
#: first), each with its columns in the portable form: a world's key and an agent's key are
#: replaced by what they name (the world is the export's; `agent` is the agent's id), and the
#: default chat is '' as stored. JSON columns hold their stored JSON text.
WORLD_TABLES: dict[str, tuple[str, ...]] = {
    "participants": ("id", "kind", "profile", "created_at"),
    "chats": ("id", "created_at"),
    "messages": (
        "id",
        "chat_id",
        "sender",
        "sender_type",
        "channel",
        "parent_id",
        "content",
        "mentions",
        "addressed",
        "metadata",
        "created_at",
        "idempotency_key",
    ),  # fmt: skip
    "deliveries": ("agent", "message_id", "own", "read_at"),
    "inbox_marks": ("agent", "low"),
    "memory_counts": ("agent", "chat_id", "n"),
    "turn_counters": ("agent_id", "count"),
    "observations": ("id", "agent_id", "kind", "sim_time", "data", "created_at"),
    "agent_memory": ("agent", "key", "value", "updated_at", "expires_at"),
    "context_sessions": ("agent", "session", "chat_id", "last_sent_id", "refreshed_at"),
    "notes": (
        "id",
        "owner",
        "type",
        "content",
        "importance",
        "chat_id",
        "metadata",
        "created_at",
        "updated_at",
        "expires_at",
    ),  # fmt: skip
    "facts": ("id", "scope", "content", "category", "confidence", "source", "avoid", "created_at", "updated_at"),
    "fact_sections": ("scope", "sections", "updated_at"),
}
#: The columns of the world itself.
WORLD_COLUMNS = ("id", "name", "turn_limit", "created_at", "tenant")


@dataclass(frozen=True)
class FactScopes:
    """Fact scopes of one tenant (canonical: 'world:ID', 'agent:WORLD/AGENT', 'user:ID')."""

    tenant: str
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Removed:
    """What one deletion removed. The ids are what the search index holds (messages, long-term
    memories, facts); `successors` are the messages that came right after a removed message in
    its chat (their indexed context quoted it); `reparented` are replies to a removed message,
    now replies to its parent (or to nothing, if it began its thread)."""

    participants: int = 0
    messages: tuple[int, ...] = ()
    deliveries: int = 0
    memories: tuple[int, ...] = ()
    facts: tuple[int, ...] = ()
    notes: int = 0
    observations: int = 0
    successors: tuple[int, ...] = ()
    reparented: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Counts of what went, for an answer."""
        return {
            "deleted": True,
            "participants": self.participants,
            "messages": len(self.messages),
            "deliveries": self.deliveries,
            "memories": len(self.memories),
            "facts": len(self.facts),
            "notes": self.notes,
            "observations": self.observations,
            "reparented": len(self.reparented),
        }


@dataclass(frozen=True)
class WorldImport:
    """A whole world to store under a tenant, checked by the service: `world` holds the values
    of WORLD_COLUMNS but the tenant; `rows` each table's rows, columns as in WORLD_TABLES."""

    tenant: str
    world: Mapping[str, Any]
    rows: Mapping[str, Sequence[tuple[Any, ...]]] = field(default_factory=dict)


#: What a deletion also removes in its own transaction (the write cursor, what it removed): the
#: search index's items, so that the store and the index never disagree after a crash.
AlsoRemove = Callable[[Any, Removed], None]

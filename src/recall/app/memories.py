"""Long-term memories (`Memory` records): what a world's agents share, or one agent keeps, with an
importance from 1 to 10; written to the search index as they are stored."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from recall import limits
from recall.app.gate import require_may_delete_memory
from recall.app.worlds import Worlds
from recall.errors import NUL_MESSAGE, InvalidInputError, UnknownMemoryError
from recall.store.base import Memory, NewMemory, Store

if TYPE_CHECKING:
    from recall.search.index import SearchIndex

NOTE_TYPE = re.compile(r"[a-z][a-z0-9_-]{0,39}")
MAX_NOTE_CHARS = limits.MAX_NOTE_CHARS


class MemoryFields(TypedDict, total=False):
    """The fields of a memory besides its world, content and type."""

    importance: int
    agent: str | None
    chat_id: str | None
    metadata: Mapping[str, Any] | None
    created_at: datetime | None


#: Memory types written only by recall's adapters (`integrations/langgraph.py` stores its items
#: as memories of this type, read back by type and metadata).
RESERVED_TYPES = ("langgraph",)


def _check_note(content: object, type: object, importance: object, metadata: object) -> str:
    """The memory's content, stripped, once its fields are within their rules."""
    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError("content", "must be non-empty text")
    if "\x00" in content:
        raise InvalidInputError("content", NUL_MESSAGE)
    if len(content) > MAX_NOTE_CHARS:
        raise InvalidInputError("content", f"at most {MAX_NOTE_CHARS:,} characters, got {len(content):,}")
    if not isinstance(type, str) or not NOTE_TYPE.fullmatch(type):
        raise InvalidInputError("type", f"a lowercase word of at most 40 characters (e.g. note, episode), got {type!r}")
    if isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 10:
        raise InvalidInputError("importance", f"must be a whole number from 1 to 10, got {importance!r}")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidInputError("metadata", "must be an object")
    limits.check_json("metadata", dict(metadata or {}), limits.MAX_METADATA_CHARS)
    return content.strip()


@dataclass(frozen=True, eq=False)
class Memories:
    """Add, list and delete a world's long-term memories."""

    store: Store
    worlds: Worlds
    index: SearchIndex | None = None

    def add_memory(self, world_id: str, content: str, *, type: str = "note", **fields: Unpack[MemoryFields]) -> Memory:
        """A long-term memory in a world: shared, or private to `agent` (`add_adapter_memory`
        says the rest). The types recall's adapters write (RESERVED_TYPES) are refused: no
        caller can forge their items."""
        if type in RESERVED_TYPES:
            raise InvalidInputError("type", f"{type!r} is reserved for recall's own adapter; pick another type")
        return self.add_adapter_memory(world_id, content, type=type, **fields)

    def add_adapter_memory(
        self,
        world_id: str,
        content: str,
        *,
        type: str,
        importance: int = 5,
        agent: str | None = None,
        chat_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> Memory:
        """A long-term memory of any type, reserved ones included: recall's adapters write theirs
        (the LangGraph store's items) this way; REST, MCP, the CLI and the public API never do."""
        world = self.worlds.get_world(world_id)
        owner = self.worlds.get_agent(world.key, agent).id if agent is not None else ""
        text = _check_note(content, type, importance, metadata)
        if chat_id is not None:
            limits.check_text("chat_id", chat_id, limits.MAX_ID)
        note = self.store.add_memory(
            world.key,
            NewMemory(
                owner=owner,
                type=type,
                content=text,
                importance=importance,
                created_at=created_at or datetime.now(UTC),
                chat_id=chat_id,
                metadata=dict(metadata or {}),
            ),
        )
        if self.index is not None:
            from recall.search.base import IndexItem

            self.index.add(
                [
                    IndexItem(
                        tenant=world.tenant,
                        space=world.id,
                        kind="memory",
                        source_id=note.id,
                        owner=owner,
                        text=note.content,
                        created_at=note.created_at,
                        chat_id=chat_id,
                        importance=importance,
                    )
                ]
            )
        return note

    def list_memories(
        self, world_id: str, agent: str | None = None, min_importance: int = 1, limit: int = 100
    ) -> list[Memory]:
        """Shared memories, plus `agent`'s own when named; most important first."""
        world = self.worlds.get_world(world_id)
        owners = [""] if agent is None else ["", self.worlds.get_agent(world.key, agent).id]
        return self.store.list_memories(world.key, owners, min_importance, limit)

    def delete_memory(self, world_id: str, note_id: int, agent: str | None = None) -> None:
        """Delete a shared memory, or (with `agent`) one of the agent's own: an agent may not
        delete what the world's agents share (PermissionDeniedError)."""
        world = self.worlds.get_world(world_id)
        note = self.store.get_memory(world.key, note_id) if isinstance(note_id, int) else None
        owner = "" if agent is None else self.worlds.get_agent(world.key, agent).id
        if note is None or note.owner.lower() not in ("", owner.lower()):
            raise UnknownMemoryError(world.id, note_id)
        require_may_delete_memory(world, note, owner)
        self.store.delete_memory(world.key, note.id)
        if self.index is not None:
            self.index.remove("memory", [note.id])

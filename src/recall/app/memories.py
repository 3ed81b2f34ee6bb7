"""Long-term memories (`Memory` records): what a world's agents share, or one agent keeps, with an
importance from 1 to 10; written to the search index as they are stored, and again when they
change in place, and embedded before the write returns (`search/embed_now.py`).

A memory may expire (`expires_at`, or a `ttl` from now): once past it, it is never returned —
not listed, not found by a search, not in any context — and it is deleted with its search item
by whichever comes first: the next read of its world (a list, search, context, update, delete or
export purges the world's expired memories first) or the background indexer's sweep of the whole
store (`Memories.purge_expired`, every `SWEEP_INTERVAL` seconds)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, Unpack

from recall import limits
from recall.app.agent_state import MAX_MEMORY_TTL
from recall.app.call_writer import CallWriter
from recall.app.gate import require_may_delete_memory, require_may_update_memory
from recall.app.worlds import Worlds
from recall.errors import InvalidInputError, PermissionDeniedError, UnknownMemoryError, text_problem
from recall.store.base import Store
from recall.store.records import Address, Memory, NewMemory, WorldRecord
from recall.store.world_records import Removed

if TYPE_CHECKING:
    from recall.search.base import IndexItem
    from recall.search.index import SearchIndex

NOTE_TYPE = re.compile(r"[a-z][a-z0-9_-]{0,39}")
MAX_NOTE_CHARS = limits.MAX_NOTE_CHARS
#: Seconds between the background indexer's sweeps of expired memories (`Memories.purge_expired`).
SWEEP_INTERVAL = 30.0
#: What an update may change; the rest of a memory (id, owner, chat, created_at) stays.
UPDATABLE = ("content", "type", "importance", "metadata", "expires_at", "ttl")


def clock() -> datetime:
    """The time memories expire by: now, in UTC (a test moves it with monkeypatch)."""
    return datetime.now(UTC)


class KeyedWrite(NamedTuple):
    """One keyed memory an adapter writes (`Memories.put_adapter_memories`)."""

    address: Address
    content: str
    metadata: Mapping[str, Any]
    #: When the item was first written (kept when it is written over), and now.
    created_at: datetime
    written_at: datetime
    expires_at: datetime | None = None


class MemoryFields(TypedDict, total=False):
    """The fields of a memory besides its world, content, type and expiry."""

    importance: int
    agent: str | None
    chat_id: str | None
    metadata: Mapping[str, Any] | None
    created_at: datetime | None


#: Memory types written only by recall's adapters (`integrations/langgraph.py` stores its items
#: as memories of this type, read back by type and metadata).
RESERVED_TYPES = ("langgraph",)
#: Metadata keys only those adapters write (the LangGraph store's owner, namespace labels and
#: indexed values: what its searches filter on, so no forged item can pass them).
RESERVED_METADATA_PREFIXES = ("langgraph:",)


def _check_note(content: object, type: object, importance: object, metadata: object) -> str:
    """The memory's content, stripped, once its fields are within their rules."""
    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError("content", "must be non-empty text")
    if problem := text_problem(content):
        raise InvalidInputError("content", problem)
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


def _check_not_reserved(type: object, metadata: object) -> None:
    """Refuse what only recall's adapters write: their types and their metadata keys."""
    if type in RESERVED_TYPES:
        raise InvalidInputError("type", f"{type!r} is reserved for recall's own adapter; pick another type")
    for key in metadata if isinstance(metadata, Mapping) else ():
        if isinstance(key, str) and key.startswith(RESERVED_METADATA_PREFIXES):
            raise InvalidInputError(
                f"metadata.{key}", "keys starting 'langgraph:' are reserved for recall's LangGraph store"
            )


def expiry(expires_at: datetime | None, ttl: timedelta | float | None, now: datetime) -> datetime | None:
    """When a memory given `expires_at` (a datetime; naive is UTC) or `ttl` (seconds, or a
    timedelta, from `now`) expires; None for neither (never). Both at once, a time not after
    `now`, or a ttl not above 0 or over 10 years is an InvalidInputError naming the field."""
    if expires_at is not None and ttl is not None:
        raise InvalidInputError("ttl", "give expires_at or ttl, not both")
    if ttl is not None:
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        # Above 0 as a time holds it (a microsecond at least), so nothing is written already expired.
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not 0 < seconds <= MAX_MEMORY_TTL
            or now + timedelta(seconds=seconds) <= now
        ):
            raise InvalidInputError(
                "ttl",
                f"must be seconds (or a timedelta) above 0 and at most {MAX_MEMORY_TTL:,} (10 years), got {ttl!r}",
            )
        return now + timedelta(seconds=seconds)
    if expires_at is None:
        return None
    at = limits.check_time("expires_at", expires_at)
    if at <= now:
        raise InvalidInputError(
            "expires_at",
            f"must be in the future, got {at.isoformat()} (it is {now.isoformat()} now): to remove a memory now,"
            " delete it",
        )
    return at


def memory_changes(
    *,
    content: str | None = None,
    type: str | None = None,
    importance: int | None = None,
    metadata: Mapping[str, Any] | None = None,
    expires_at: datetime | None = None,
    ttl: timedelta | float | None = None,
    clear_expiry: bool = False,
) -> dict[str, Any]:
    """The changes an update names, from arguments where None means "unchanged" (the Python API,
    MCP, the CLI): `clear_expiry` makes the memory never expire."""
    given = {"content": content, "type": type, "importance": importance, "metadata": metadata}
    changes: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if clear_expiry:
        if expires_at is not None or ttl is not None:
            raise InvalidInputError("clear_expiry", "give clear_expiry or a new expires_at or ttl, not both")
        changes["expires_at"] = None
    else:
        changes.update({name: value for name, value in (("expires_at", expires_at), ("ttl", ttl)) if value is not None})
    return changes


def _item(world: WorldRecord, note: Memory) -> IndexItem:
    """The search index's item of a memory."""
    from recall.search.base import IndexItem

    return IndexItem(
        tenant=world.tenant,
        space=world.id,
        kind="memory",
        source_id=note.id,
        owner=note.owner,
        text=note.content,
        created_at=note.created_at,
        chat_id=note.chat_id,
        importance=note.importance,
        metadata=note.metadata,
    )


@dataclass(frozen=True, eq=False)
class Memories:
    """Add, list, update and delete a world's long-term memories, and purge the expired ones."""

    store: Store
    worlds: Worlds
    index: SearchIndex | None = None
    #: The recorded calls' writer: a deleted memory's text leaves their copies too.
    calls: CallWriter | None = None

    def add_memory(
        self,
        world_id: str,
        content: str,
        *,
        type: str = "note",
        expires_at: datetime | None = None,
        ttl: timedelta | float | None = None,
        **fields: Unpack[MemoryFields],
    ) -> Memory:
        """A long-term memory in a world: shared, or private to `agent` (`add_adapter_memory`
        says the rest). It expires at `expires_at` or `ttl` seconds from now (`expiry`), or never.
        The types recall's adapters write (RESERVED_TYPES) are refused: no caller can forge their
        items."""
        _check_not_reserved(type, fields.get("metadata"))
        now = clock()
        if fields.get("created_at") is None:
            fields["created_at"] = now  # a ttl counts from the very time it was written
        return self.add_adapter_memory(world_id, content, type=type, expires_at=expiry(expires_at, ttl, now), **fields)

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
        expires_at: datetime | None = None,
    ) -> Memory:
        """A long-term memory of any type, reserved ones included: recall's adapters write theirs
        (the LangGraph store's items) this way; REST, MCP, the CLI and the public API never do.
        `expires_at` is taken as it is (an adapter's item may be written already expired)."""
        world = self.worlds.get_world(world_id)
        owner = self.worlds.get_agent(world.key, agent).id if agent is not None else ""
        text = _check_note(content, type, importance, metadata)
        if chat_id is not None:
            limits.check_text("chat_id", chat_id, limits.MAX_ID)
        if expires_at is not None:
            expires_at = limits.check_time("expires_at", expires_at)
        note = self.store.add_memory(
            world.key,
            NewMemory(
                owner=owner,
                type=type,
                content=text,
                importance=importance,
                created_at=created_at or clock(),
                chat_id=chat_id,
                metadata=dict(metadata or {}),
                expires_at=expires_at,
            ),
        )
        if self.index is not None:
            from recall.search.embed_now import embed_now  # the search stack loads with the index

            self.index.add([_item(world, note)])
            embed_now(self.index, "memory", [note.id])  # found by its meaning once this returns
        return note

    def put_adapter_memories(
        self,
        world_id: str,
        items: Sequence[KeyedWrite],
        *,
        type: str,
        importance: int = 5,
        agent: str | None = None,
    ) -> list[Memory]:
        """`add_adapter_memory` at addresses (keyed memories, `store/keyed.py`), in order, in one
        transaction with their search items: each a new memory, or written over the one there."""
        world = self.worlds.get_world(world_id)
        owner = self.worlds.get_agent(world.key, agent).id if agent is not None else ""
        notes: list[tuple[Address, NewMemory]] = []
        for item in items:
            text = _check_note(item.content, type, importance, item.metadata)
            expires = None if item.expires_at is None else limits.check_time("expires_at", item.expires_at)
            note = NewMemory(
                owner=owner,
                type=type,
                content=text,
                importance=importance,
                created_at=item.created_at,
                metadata=dict(item.metadata),
                expires_at=expires,
                updated_at=item.written_at,
            )
            notes.append((item.address, note))
        index = self.index

        def reindex(db: Any, stored: list[Memory]) -> None:
            if index is not None:
                index.add_in(db, [_item(world, memory) for memory in stored])

        written = self.store.put_keyed_memories(world.key, notes, then=reindex)
        if index is not None:
            from recall.search.embed_now import embed_now

            embed_now(index, "memory", [memory.id for memory in written])  # as LangGraph's `put` does
        return written

    def list_memories(
        self, world_id: str, agent: str | None = None, min_importance: int = 1, limit: int = 100
    ) -> list[Memory]:
        """Shared memories, plus `agent`'s own when named; most important first. None expired."""
        world = self.worlds.get_world(world_id)
        owners = [""] if agent is None else ["", self.worlds.get_agent(world.key, agent).id]
        now = self.purge_world(world.key)
        return self.store.list_memories(world.key, owners, min_importance, limit, now=now)

    def update_memory(
        self, world_id: str, note_id: int, changes: Mapping[str, Any], agent: str | None = None
    ) -> Memory:
        """Change a memory in place: some of its content, type, importance, metadata (replaced
        whole) and expiry (`expires_at`, or `ttl` seconds from now; either None: never). Its id,
        owner, chat and created_at stay, `updated_at` becomes now, and its search item is written
        again in the same transaction (embedded again when its text changed). `changes` names only
        what changes (UPDATABLE), checked as `add_memory` checks. Who may: as for
        `delete_memory` (an agent its own only; a shared one is a PermissionDeniedError). The
        LangGraph store's items change only through that store (PermissionDeniedError)."""
        if not isinstance(changes, Mapping):
            raise InvalidInputError("changes", "must be an object of the fields to change")
        unknown = sorted(set(changes) - set(UPDATABLE))
        if unknown:
            raise InvalidInputError(unknown[0], f"is not a field an update changes: those are {', '.join(UPDATABLE)}")
        if not changes:
            raise InvalidInputError("changes", f"name at least one field to change: {', '.join(UPDATABLE)}")
        if "expires_at" in changes and "ttl" in changes:
            raise InvalidInputError("ttl", "give expires_at or ttl, not both")
        world, note, owner = self._visible(world_id, note_id, agent)
        require_may_update_memory(world, note, owner)
        if note.type in RESERVED_TYPES:
            raise PermissionDeniedError(
                f"memory {note.id} is an item of recall's LangGraph store (type {note.type!r}): change it through"
                " that store"
            )
        type_ = changes.get("type", note.type)
        importance = changes.get("importance", note.importance)
        metadata = changes.get("metadata", note.metadata)
        _check_not_reserved(type_, metadata)
        text = _check_note(changes.get("content", note.content), type_, importance, metadata)
        now = clock()
        expires = note.expires_at
        if "expires_at" in changes or "ttl" in changes:
            expires = expiry(changes.get("expires_at"), changes.get("ttl"), now)
        new = replace(
            note,
            type=type_,
            content=text,
            importance=importance,
            metadata=dict(metadata or {}),
            updated_at=now,
            expires_at=expires,
        )
        index = self.index
        searched = (new.content, new.importance, new.metadata) != (note.content, note.importance, note.metadata)

        def reindex(db: Any, stored: Memory) -> None:
            if index is not None:
                index.add_in(db, [_item(world, stored)])

        stored = self.store.update_memory(world.key, new, then=reindex if searched else None)
        if stored is None:  # deleted meanwhile
            raise UnknownMemoryError(world.id, note_id)
        if searched and index is not None:
            from recall.search.embed_now import embed_now

            embed_now(index, "memory", [stored.id])
        return stored

    def delete_memory(self, world_id: str, note_id: int, agent: str | None = None) -> None:
        """Delete a shared memory, or (with `agent`) one of the agent's own: an agent may not
        delete what the world's agents share (PermissionDeniedError)."""
        world, note, owner = self._visible(world_id, note_id, agent)
        require_may_delete_memory(world, note, owner)
        with self.calls.scrubbing() if self.calls is not None else nullcontext() as scrub:

            def then(db: Any) -> None:
                if scrub is not None:  # no recorded call keeps a copy of its text
                    scrub.forget_copies(db, world.key, [("memory", note.id)])

            self.store.delete_memory(world.key, note.id, then=then)
        if self.index is not None:
            self.index.remove("memory", [note.id])

    def _visible(self, world_id: str, note_id: int, agent: str | None) -> tuple[WorldRecord, Memory, str]:
        """The world, the memory `note_id` (not expired) as the caller sees it — a shared one, or
        with `agent` one of the agent's own too — and the caller's owner id ('' without agent);
        UnknownMemoryError for any other."""
        world = self.worlds.get_world(world_id)
        owner = "" if agent is None else self.worlds.get_agent(world.key, agent).id
        now = self.purge_world(world.key)
        note = self.store.get_memory(world.key, note_id) if isinstance(note_id, int) else None
        if note is None or note.expired(now) or note.owner.lower() not in ("", owner.lower()):
            raise UnknownMemoryError(world.id, note_id)
        return world, note, owner

    # -- expiry -------------------------------------------------------------------------------

    def purge_world(self, world_key: str) -> datetime:
        """Delete the world's expired memories with their search items (one read when there are
        none); the time they were purged as of, which reads that follow compare expiry with."""
        now = clock()
        self.store.delete_expired_memories(world_key, now, then=self._unindex)
        return now

    def purge_expired(self) -> int:
        """Delete every world's expired memories with their search items (the background
        indexer's sweep); how many went."""
        return len(self.store.delete_expired_memories(None, clock(), then=self._unindex).memories)

    def _unindex(self, db: Any, removed: Removed) -> None:
        """The search items of purged memories, in the purge's transaction (`store.AlsoRemove`)."""
        if self.index is not None and removed.memories:
            self.index.forget_in(db, {"memory": removed.memories})

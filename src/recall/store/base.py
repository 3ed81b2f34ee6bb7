"""The store protocol: everything the service needs from a database, nothing more.

The SQLite store implements it now; a PostgreSQL store will implement the same methods, so
no caller changes. Writes that belong together happen inside one method, in one transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from recall.core.facts import Fact, NewFact
from recall.core.models import Message
from recall.store.records import (
    Address,
    CallRow,
    ContextSession,
    ExtractionJob,
    FactWrite,
    Memory,
    NewCall,
    NewMemory,
    NewMessage,
    Note,
    ParticipantRecord,
    WorldRecord,
)
from recall.store.world_records import AlsoRemove, FactScopes, Removed, WorldImport

#: Told (world key, message ids or None for "some") of posts another process stored.
PostListener = Callable[[str, list[int] | None], None]
#: What a change to a memory also writes in its own transaction (the write cursor, the memory as
#: stored): its search item, so that the store and the index never disagree after a crash.
AlsoWrite = Callable[[Any, Memory], None]


class SharedRateLimits(Protocol):
    """Rate-limit buckets every replica shares (PostgreSQL's store)."""

    def rate_hit(self, world_id: str, agent_id: str, per_minute: int, now: float) -> float | None: ...


class PostAnnouncer(Protocol):
    """Announces posts to every process sharing the store (PostgreSQL's LISTEN/NOTIFY; on SQLite,
    `sqlite_posts.PostWatch` looks for other processes' posts a few times a second)."""

    def listen(self, on_post: PostListener, stop: threading.Event) -> threading.Thread: ...


class Store(Protocol):
    """Every `world_id` argument below is a world's key (`WorldRecord.key`); the records and
    messages the store returns carry the world's id (`world_id_of` the key)."""

    #: Optional abilities, typed (None where the store has none): buckets shared by replicas,
    #: and announcements of other processes' posts.
    rate_buckets: SharedRateLimits | None
    announcer: PostAnnouncer | None

    # worlds and participants
    def create_world(
        self, world_id: str, name: str, turn_limit: int | None, created_at: datetime, tenant: str = ""
    ) -> WorldRecord:
        """A new world `world_id` of `tenant`, with a key of its own; ConflictError when the
        tenant has a world of that id already."""
        ...

    def get_world(self, world_id: str) -> WorldRecord | None: ...
    def find_worlds(self, world_id: str, tenant: str | None = None) -> list[WorldRecord]:
        """The world of `tenant` with the id `world_id` (any case), or with tenant None every
        tenant's."""
        ...

    def list_worlds(self, tenant: str | None = None) -> list[WorldRecord]: ...
    def add_participant(self, record: ParticipantRecord) -> ParticipantRecord: ...
    def set_profile(self, world_id: str, participant_id: str, profile: dict[str, Any]) -> bool:
        """Replace a participant's stored profile; whether it exists."""
        ...

    def get_participant(self, world_id: str, participant_id: str) -> ParticipantRecord | None: ...
    def list_participants(self, world_id: str) -> list[ParticipantRecord]: ...

    # messages and deliveries
    def append_messages(self, world_id: str, batch: Sequence[NewMessage]) -> list[Message]: ...
    def get_message(self, world_id: str, message_id: int) -> Message | None: ...
    def list_messages(
        self, world_id: str, chat_id: str | None = None, after: int = 0, limit: int = 100, any_chat: bool = False
    ) -> list[Message]: ...
    def newest_messages(
        self,
        world_id: str,
        chat_id: str | None,
        *,
        before: int,
        after: int = 0,
        limit: int = 100,
        excluding: Sequence[int] = (),
    ) -> list[Message]: ...
    def list_chats(self, world_id: str) -> list[tuple[str | None, int]]: ...
    def iter_heard(
        self, world_id: str, agent_id: str, chat_id: str | None, before: int | None = None
    ) -> Iterator[Message]: ...
    def heard_counts(self, world_id: str, agent_id: str) -> dict[str | None, int]: ...
    def heard_among(self, world_id: str, agent_id: str, message_ids: Sequence[int]) -> dict[int, Message]: ...
    def heard_ids(self, world_id: str, agent_id: str, message_ids: Sequence[int]) -> set[int]: ...
    def messages_among(self, world_id: str, message_ids: Sequence[int]) -> dict[int, Message]: ...
    def turns_before(self, world_id: str, message_ids: Sequence[int]) -> dict[int, int]: ...
    def inbox(
        self, world_id: str, agent_id: str, unread_only: bool = True, limit: int = 100, after: int = 0
    ) -> list[tuple[Message, bool]]: ...
    def mark_read(self, world_id: str, agent_id: str, message_ids: Sequence[int], at: datetime) -> int: ...
    def unread_inboxes(self, world_id: str, agent_ids: Sequence[str], limit: int) -> dict[str, list[Message]]: ...
    def mark_read_many(self, world_id: str, marks: Mapping[str, Sequence[int]], at: datetime) -> int: ...

    # turn counters
    def turn_count(self, world_id: str, agent_id: str) -> int: ...
    def set_turn_count(self, world_id: str, agent_id: str, count: int) -> None: ...
    def increment_turns(self, world_id: str, agent_id: str) -> int: ...

    # observations and actions
    def add_observation(
        self, world_id: str, agent_id: str, kind: str, sim_time: float, data: dict[str, Any], created_at: datetime
    ) -> int: ...
    def recent_observations(self, world_id: str, agent_id: str, kind: str, limit: int) -> list[dict[str, Any]]: ...

    # an agent's private key-value memory (expired entries are never returned)
    def set_note(self, world_id: str, agent_id: str, item: Note) -> None: ...
    def get_note(self, world_id: str, agent_id: str, key: str, now: datetime) -> Note | None: ...
    def delete_note(self, world_id: str, agent_id: str, key: str, now: datetime) -> bool: ...
    def list_memory(self, world_id: str, agent_id: str, now: datetime) -> list[Note]: ...

    # context once
    def get_context_session(
        self, world_id: str, agent_id: str, session: str, chat_id: str | None
    ) -> ContextSession | None: ...
    def set_context_session(
        self, world_id: str, agent_id: str, session: str, chat_id: str | None, state: ContextSession
    ) -> None: ...

    # facts (spec §4) and their scope's sections
    def list_facts(self, tenant: str, scope: str) -> list[Fact]: ...
    def list_facts_in(self, tenant: str, scopes: Sequence[str]) -> list[Fact]: ...
    def get_fact(self, tenant: str, scope: str, fact_id: int) -> Fact | None: ...
    def change_facts(
        self,
        tenant: str,
        scope: str,
        now: datetime,
        *,
        add: Sequence[NewFact] = (),
        remove_ids: Sequence[int] = (),
        update: Mapping[int, NewFact] | None = None,
        sections: Mapping[str, str] | None = None,
        clear: bool = False,
        sources: Sequence[int] = (),
        then: Callable[[Any, Sequence[int]], None] | None = None,
    ) -> FactWrite: ...
    def get_sections(self, tenant: str, scope: str) -> dict[str, str]: ...
    def list_fact_scopes(self, tenant: str) -> list[tuple[str, int]]: ...

    # long-term memories
    def add_memory(self, world_id: str, note: NewMemory) -> Memory: ...
    def get_memory(self, world_id: str, note_id: int) -> Memory | None:
        """The memory, expired or not (the caller compares `expires_at`)."""
        ...

    def list_memories(
        self,
        world_id: str,
        owners: Sequence[str],
        min_importance: int = 1,
        limit: int = 100,
        now: datetime | None = None,
    ) -> list[Memory]:
        """Memories visible to `owners`; with `now`, those expired by then left out."""
        ...

    def update_memory(self, world_id: str, memory: Memory, then: AlsoWrite | None = None) -> Memory | None:
        """Write `memory`'s type, content, importance, metadata, updated_at and expires_at over the
        stored memory of its id; the stored memory, or None when there is none (deleted meanwhile).
        `then` runs in the same transaction, with the memory as stored."""
        ...

    def delete_memory(self, world_id: str, note_id: int, then: Callable[[Any], None] | None = None) -> bool: ...
    def memories_among(self, world_id: str, memory_ids: Sequence[int]) -> dict[int, Memory]: ...

    # keyed memories (keyed.py)
    def put_keyed_memories(
        self,
        world_id: str,
        notes: Sequence[tuple[Address, NewMemory]],
        then: Callable[[Any, list[Memory]], None] | None = None,
    ) -> list[Memory]: ...
    def keyed_memory(self, world_id: str, owner: str, address: Address) -> Memory | None: ...
    def keyed_memories(
        self,
        world_id: str,
        owner: str,
        prefix: str = "",
        *,
        before: tuple[datetime, int] | None = None,
        limit: int = 100,
    ) -> list[Memory]: ...
    def keyed_namespaces(self, world_id: str, owner: str, prefix: str = "", limit: int = 10_000) -> list[str]: ...
    def unkeyed_memories(self, world_id: str, owner: str, limit: int = 1000) -> list[Memory]: ...
    def delete_expired_memories(self, world_id: str | None, now: datetime, then: AlsoRemove | None = None) -> Removed:
        """Delete the memories of a world (by key; None: of every world) whose expiry is at or
        before `now`; their ids in `Removed.memories`. `then` runs in the same transaction, only
        when some went (a look without writing first, so a read that finds none stays a read)."""
        ...

    # queued fact extractions (extraction_jobs.py)
    def put_extraction_job(self, job: ExtractionJob) -> None: ...
    def finish_extraction_jobs(self, tokens: Collection[str]) -> int: ...
    def release_extraction_jobs(self, tokens: Collection[str]) -> int: ...
    def claim_extraction_jobs(self, owner: str, stale_before: float, due_at: float) -> list[ExtractionJob]: ...
    def forget_extraction_jobs(
        self, tenant: str, scopes: Sequence[str] = (), thread_prefix: str | None = None
    ) -> int: ...

    # recorded model calls (call_log.py)
    def add_calls(self, calls: Sequence[NewCall]) -> int: ...
    def get_call(self, world_id: str, agent_id: str, call_id: str) -> CallRow | None: ...
    def list_calls(
        self, world_id: str, agent_id: str, *, before: datetime | None = None, limit: int = 50
    ) -> list[CallRow]: ...
    def trim_calls(self, world_id: str, agent_id: str, *, keep: int, older_than: datetime | None) -> int: ...
    def set_call_outcome(self, world_id: str, agent_id: str, call_id: str, outcome: str, error: str | None) -> bool: ...
    def rewrite_calls(
        self,
        db: Any,
        world_id: str,
        person: str,
        messages: Collection[int],
        rewrite: Callable[[bytes, int | None], bytes | None],
    ) -> int: ...
    def rewrite_copies(
        self,
        db: Any,
        world_id: str | None,
        rewrite: Callable[[bytes, int | None], bytes | None],
        tenant: str | None = None,
    ) -> int: ...

    # whole worlds: deleted, exported, imported (world_delete.py, world_dump.py)
    def delete_world(self, world_id: str, facts: FactScopes, then: AlsoRemove | None = None) -> Removed | None: ...
    def delete_participant(
        self,
        world_id: str,
        participant_id: str,
        *,
        erase: bool = False,
        facts: FactScopes | None = None,
        then: AlsoRemove | None = None,
    ) -> Removed | None: ...
    def delete_messages(self, world_id: str, message_ids: Sequence[int], then: AlsoRemove | None = None) -> Removed: ...
    def export_world(self, world_id: str, facts: FactScopes) -> Iterator[tuple[str, tuple[Any, ...]]]: ...
    def import_world(self, data: WorldImport) -> WorldRecord: ...

    def schema_version(self) -> int:
        """The newest migration applied (a cheap query: also how readiness checks reach the store)."""
        ...

    def change_version(self) -> int:
        """A number that changes whenever another process commits a write to worlds or
        participants, so that caches of those rarely changing rows know when to re-read."""
        ...

    def close(self) -> None: ...

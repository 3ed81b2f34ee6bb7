"""`World`: one world of one tenant, the handle for its participants, messages, shared memories,
facts, search, deletion and export. It makes the `Agent` handles (`api_agent.py`, below it) and
is opened by `Recall` (`api.py`, above it, which re-exports it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from recall.api_agent import Agent, memory_id
from recall.api_scope import Scope
from recall.app.gate import Gate, Principal
from recall.app.memories import memory_changes
from recall.app.posting import PostRequest
from recall.app.search import SEARCH_KINDS, SearchResult
from recall.app.service import RecallService
from recall.core.models import Message
from recall.off_loop import off_loop
from recall.store.records import Memory, ParticipantRecord, WorldRecord


class World:
    """A world of one tenant: `id` is what the tenant calls it, `key` what the service's
    per-world methods take (the same unless another tenant had the id first)."""

    def __init__(self, service: RecallService, record: WorldRecord) -> None:
        self.service = service
        self.id = record.id
        self.tenant = record.tenant
        self.key = record.key
        #: Who this handle acts as: the embedded user, in the world's tenant.
        self.principal = Principal.local(record.tenant)
        self.gate = Gate(service)

    def __repr__(self) -> str:
        return f"World({self.id!r})" if not self.tenant else f"World({self.id!r}, tenant={self.tenant!r})"

    @property
    def name(self) -> str:
        return self.service.worlds.get_world(self.key).name

    def add_agent(self, /, agent_id: str, system_prompt: str = "", *, exist_ok: bool = False, **settings: Any) -> Agent:
        """Register an agent. Settings: identity, personality, knowledge, goals, constraints,
        guidelines, channel, history_limit, max_tokens, context_filter ('addressed'|'all'), model.
        With `exist_ok=True` an agent of that id already there is returned unchanged (so a script
        can run again); `agent.update(...)` changes its settings."""
        profile = self.service.worlds.add_agent(
            self.key, agent_id, exist_ok=exist_ok, system_prompt=system_prompt, **settings
        )
        return Agent(self, profile.id)

    def add_human(self, human_id: str, *, exist_ok: bool = False) -> ParticipantRecord:
        return self.service.worlds.add_human(self.key, human_id, exist_ok=exist_ok)

    def agent(self, agent_id: str) -> Agent:
        profile = self.service.worlds.get_agent(self.key, agent_id)
        return Agent(self, profile.id)

    def agents(self) -> list[Agent]:
        """Every agent of the world, by id (`agent.profile` holds its settings)."""
        return [Agent(self, profile.id) for profile in self.service.worlds.agents(self.key)]

    def humans(self) -> list[ParticipantRecord]:
        """Every human of the world, by id."""
        return self.service.worlds.humans(self.key)

    def participants(self) -> list[ParticipantRecord]:
        return self.service.worlds.participants(self.key)

    def post(
        self,
        sender: str,
        content: str,
        *,
        chat: str | None = None,
        channel: str | None = None,
        parent: int | None = None,
        at: datetime | str | float | None = None,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Message:
        """Store a message once and deliver it to every other agent of the world."""
        request = PostRequest(sender, content, chat, channel, parent, at, idempotency_key, metadata)
        return self.service.posting.post(self.key, request)

    def post_many(self, requests: Sequence[PostRequest]) -> list[Message]:
        """Post several messages in one transaction: all or none."""
        return self.service.posting.post_many(self.key, requests)

    def import_messages(
        self, requests: Sequence[PostRequest], batch_size: int = 1000, progress: Callable[[int], None] | None = None
    ) -> list[Message]:
        """Post many messages, validating all first; stored in transactions of `batch_size`."""
        return self.service.posting.import_messages(self.key, requests, batch_size, progress)

    def messages(
        self, chat: str | None = None, *, after: int = 0, limit: int = 100, all_chats: bool = False
    ) -> list[Message]:
        return self.service.posting.messages(self.key, chat, after, limit, all_chats)

    def chats(self) -> list[tuple[str | None, int]]:
        return self.service.posting.list_chats(self.key)

    @property
    def facts(self) -> Scope:
        """Facts about the whole world (scope `world:ID`)."""
        return Scope(self.service, *self.gate.scope(self.principal, f"world:{self.id}"))

    def add_memory(
        self,
        /,
        content: str,
        *,
        type: str = "note",
        importance: int = 5,
        chat: str | None = None,
        expires_at: datetime | None = None,
        ttl: timedelta | float | None = None,
        **metadata: Any,
    ) -> Memory:
        """A long-term memory shared by every agent of the world (importance 1-10); the other
        keywords are its metadata. It expires at `expires_at` (naive: UTC) or `ttl` (seconds, or
        a timedelta) from now, or never: once expired it is never returned and is deleted."""
        return self.service.memories.add_memory(
            self.key,
            content,
            type=type,
            importance=importance,
            chat_id=chat,
            metadata=metadata,
            expires_at=expires_at,
            ttl=ttl,
        )

    def memories(self, *, min_importance: int = 1, limit: int = 100) -> list[Memory]:
        return self.service.memories.list_memories(self.key, None, min_importance, limit)

    def update_memory(
        self,
        memory: int | Memory,
        *,
        content: str | None = None,
        type: str | None = None,
        importance: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        expires_at: datetime | None = None,
        ttl: timedelta | float | None = None,
        clear_expiry: bool = False,
    ) -> Memory:
        """Change a shared memory in place; what is None stays (`metadata` is replaced whole).
        Its id and created_at stay, `updated_at` becomes now, and search finds it by its new
        words. A new `expires_at` or `ttl` moves its expiry, `clear_expiry=True` removes it.
        An agent's private memory is changed through `agent.update_memory`."""
        changes = memory_changes(
            content=content,
            type=type,
            importance=importance,
            metadata=metadata,
            expires_at=expires_at,
            ttl=ttl,
            clear_expiry=clear_expiry,
        )
        return self.service.memories.update_memory(self.key, memory_id(memory), changes)

    def delete_memory(self, memory: int | Memory) -> None:
        self.service.memories.delete_memory(self.key, memory_id(memory))

    def delete(self) -> dict[str, Any]:
        """Delete the world and everything in it, search items included; its humans' `user:ID`
        facts stay (they belong to the tenant). Counts of what went (docs/python-api.md)."""
        return self.service.lifecycle.delete_world(self.key).to_dict()

    def delete_agent(self, agent_id: str, *, erase: bool = False) -> dict[str, Any]:
        """Delete an agent and what was private to it; the messages it wrote stay (others heard
        them) unless `erase`. Counts of what went."""
        return self.service.lifecycle.delete_participant(self.key, agent_id, "agent", erase=erase).to_dict()

    def delete_human(self, human_id: str, *, erase: bool = False) -> dict[str, Any]:
        """Delete a human; with `erase` also the messages it sent in this world and its `user:ID`
        facts (without, both stay). Counts of what went."""
        return self.service.lifecycle.delete_participant(self.key, human_id, "human", erase=erase).to_dict()

    def delete_message(self, message: int | Message) -> dict[str, Any]:
        """Delete a message with its deliveries; replies to it become replies to its parent."""
        message_id = message.id if isinstance(message, Message) else message
        return self.service.lifecycle.delete_message(self.key, message_id).to_dict()

    def export(self) -> Iterator[dict[str, Any]]:
        """The world as export records (`recall export`'s lines), for `Recall.import_world`."""
        return self.service.exports.export_world(self.key)

    def export_to(self, file: str | Path | IO[str]) -> dict[str, int]:
        """Write `export()` to a path or text file as JSON lines; the records written per kind.
        A path is written through a temporary file beside it, renamed once whole; the store's
        own files and a missing folder are refused (InvalidInputError naming `output`)."""
        if isinstance(file, str | Path):
            return self.service.exports.write_export_file(self.key, file)
        return self.service.exports.write_export(self.key, file)

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        kinds: Sequence[str] = SEARCH_KINDS,
        method: str = "hybrid",
        chat: str | None = None,
        sender: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: int | None = None,
        min_score: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> list[SearchResult]:
        """Messages, memories and facts of this world ranked for `query` (hybrid: BM25 and
        embeddings fused), filtered by chat, sender, time range, least importance and metadata;
        each hit's `score` is its relevance, 0..1, and `min_score` leaves out the hits under it.
        `metadata` keeps the messages and memories whose metadata has each key equal to its
        value (`{"channel": "sms", "priority": 2}`), or passes its operators (`{"$in": [...]}`,
        `$ne`, `$gt`, `$gte`, `$lt`, `$lte`); facts have none. Filters apply before the `k` best
        are picked. A hybrid search favours what was said at the times the query names ("on
        May 8", "last week"); `now` is when relative times count back from (default: the
        current time)."""
        return self.service.searcher.search(
            self.key,
            query,
            tenant=self.tenant,
            k=k,
            kinds=kinds,
            method=method,
            chat_id=chat,
            sender=sender,
            since=since,
            until=until,
            min_importance=min_importance,
            min_score=min_score,
            metadata=metadata,
            now=now,
        )

    # Coroutine forms for asyncio and trio programs (`recall.off_loop`).
    aadd_agent = off_loop(add_agent)
    aadd_human = off_loop(add_human)
    aagent = off_loop(agent)
    aagents = off_loop(agents)
    ahumans = off_loop(humans)
    aparticipants = off_loop(participants)
    apost = off_loop(post)
    apost_many = off_loop(post_many)
    aimport_messages = off_loop(import_messages)
    amessages = off_loop(messages)
    achats = off_loop(chats)
    aadd_memory = off_loop(add_memory)
    amemories = off_loop(memories)
    aupdate_memory = off_loop(update_memory)
    adelete_memory = off_loop(delete_memory)
    adelete = off_loop(delete)
    adelete_agent = off_loop(delete_agent)
    adelete_human = off_loop(delete_human)
    adelete_message = off_loop(delete_message)
    aexport_to = off_loop(export_to)
    asearch = off_loop(search)

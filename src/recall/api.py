"""The Python API: `Recall` → `World` → `Agent`, thin handles over the service.

mem = Recall("recall.db")
world = mem.world("support", create=True)
world.add_agent("triage", system_prompt="You route tickets.")
world.add_human("maria")
world.post("maria", "@triage my invoice is wrong", chat="ticket-42")
ctx = world.agent("triage").context(chat="ticket-42", max_tokens=4000)
ctx.openai(); ctx.anthropic(); ctx.report
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from recall.app.calls import Replay
from recall.app.gate import Gate, Principal
from recall.app.memories import memory_changes
from recall.app.posting import PostRequest
from recall.app.search import SEARCH_KINDS, SearchResult
from recall.app.service import RecallService
from recall.core import observations as obs
from recall.core.calls import CallRecord
from recall.core.context_parts import ContextBlock
from recall.core.context_records import Context, Summarizer
from recall.core.facts import Fact, NewFact
from recall.core.models import AgentProfile, Message
from recall.core.prompt import build_system_prompt
from recall.core.routing import Decision
from recall.errors import UnknownWorldError
from recall.off_loop import off_loop
from recall.settings import Settings
from recall.store import open_store
from recall.store.base import Store
from recall.store.records import Memory, ParticipantRecord, WorldRecord

DEFAULT_DB = "recall.db"


def default_db() -> str:
    """`RECALL_DB` if set, else `./recall.db`."""
    return os.environ.get("RECALL_DB") or DEFAULT_DB


class Recall:
    """An open recall store. Use as a context manager, or call `close()`."""

    def __init__(self, db: str | Path | Store | None = None, settings: Settings | None = None) -> None:
        settings = settings or Settings.from_env()
        location = str(db if db is not None else default_db())
        store = open_store(location, settings.busy_timeout) if not _is_store(db) else db
        self.service = RecallService(store, settings)  # type: ignore[arg-type]
        self.gate = Gate(self.service)

    def world(
        self,
        world_id: str,
        *,
        create: bool = False,
        name: str | None = None,
        turn_limit: int | None = None,
        tenant: str | None = None,
    ) -> World:
        """The world `world_id` of `tenant` (a server's API keys name tenants; "" without keys).
        With tenant None: the only world of that id in any tenant (AmbiguousWorldError when
        several have one). With `create=True` it is created if missing (in `tenant`, or "")."""
        try:
            record = self.gate.world(Principal.local(tenant), world_id)
        except UnknownWorldError:
            if not create:
                raise
            record = self.service.worlds.create_world(world_id, name=name, turn_limit=turn_limit, tenant=tenant or "")
        return World(self.service, record)

    def create_world(
        self, world_id: str, *, name: str | None = None, turn_limit: int | None = None, tenant: str = ""
    ) -> World:
        """Create a new world of `tenant`; a ConflictError if the tenant has one of that id."""
        record = self.service.worlds.create_world(world_id, name=name, turn_limit=turn_limit, tenant=tenant)
        return World(self.service, record)

    def worlds(self, tenant: str | None = None) -> list[World]:
        """Every world, or only those of `tenant`."""
        return [World(self.service, w) for w in self.gate.worlds(Principal.local(tenant))]

    def scope(self, scope: str, *, tenant: str | None = None) -> Scope:
        """The facts and sections of a scope: 'user:ID', 'agent:WORLD/AGENT' or 'world:ID', in
        `tenant`. With tenant None a user scope is in tenant "", and a world or agent scope in
        the tenant of its world (found as `world` finds it)."""
        return Scope(self.service, *self.gate.scope(Principal.local(tenant), scope))

    def search(self, /, space: str, query: str, *, tenant: str | None = None, **options: Any) -> list[SearchResult]:
        """Search a world (messages, memories, facts; found as `world` finds it) or a user's
        facts (`user:ID`, in `tenant`, or ""); see `World.search`."""
        if isinstance(space, str) and space.startswith("user:"):
            return self.service.searcher.search(space, query, tenant=tenant or "", **options)
        return self.world(space, tenant=tenant).search(query, **options)

    def import_world(self, lines: Iterable[str | bytes | Mapping[str, Any]], *, tenant: str | None = None) -> World:
        """Import an export (`World.export()` records or `export_to` lines) into `tenant` (None:
        the export's), ids, times and read flags kept. A bad line (InvalidInputError) or a taken
        world or id (ConflictError) writes nothing."""
        return World(self.service, self.service.exports.import_world(lines, tenant).world)

    def refresh_index(self, *, graphs: bool = True) -> int:
        """Index and embed everything not yet in the search index, now; the work done. A
        background thread does this on its own within seconds of a post (unless
        `index_interval` is 0): call it when a search must see vectors for what was just written.
        With `graphs` (the default) it also builds what makes vector search over a large space
        fast (on SQLite an HNSW graph per space of 20,000 items or more, ~25 s per 100,000 on
        first build, then only what is new); a short-lived process searching once can skip it
        (`graphs=False`): without a graph a search scores every vector."""
        return self.service.searcher.refresh_index(graphs=graphs)

    def flush_extraction(self, scope: str | None = None) -> int:
        """Run queued fact extractions now instead of after their debounce; the model calls made."""
        return self.service.extraction.flush_extraction(None, scope)

    def close(self) -> None:
        self.service.close()

    def __enter__(self) -> Recall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Recall:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # Coroutine forms for asyncio and trio programs (`recall.off_loop`).
    aworld = off_loop(world)
    acreate_world = off_loop(create_world)
    aworlds = off_loop(worlds)
    asearch = off_loop(search)
    aimport_world = off_loop(import_world)
    arefresh_index = off_loop(refresh_index)
    aflush_extraction = off_loop(flush_extraction)
    aclose = off_loop(close)


def _is_store(db: object) -> bool:
    return db is not None and not isinstance(db, (str, Path))


def _memory_id(memory: int | Memory) -> int:
    return memory.id if isinstance(memory, Memory) else memory


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
        return self.service.memories.update_memory(self.key, _memory_id(memory), changes)

    def delete_memory(self, memory: int | Memory) -> None:
        self.service.memories.delete_memory(self.key, _memory_id(memory))

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


class Agent:
    def __init__(self, world: World, agent_id: str) -> None:
        self.service = world.service
        self.world = world
        #: The id of its world (`world.key` is what the service's methods take).
        self.world_id = world.id
        self.id = agent_id

    def __repr__(self) -> str:
        return f"Agent({self.world_id!r}, {self.id!r})"

    @property
    def _world(self) -> str:
        return self.world.key

    @property
    def profile(self) -> AgentProfile:
        return self.service.worlds.get_agent(self._world, self.id)

    def update(self, /, **changes: Any) -> AgentProfile:
        """Change some of the agent's settings (those `World.add_agent` takes); the others stay,
        and one given as None goes back to its default. The new profile."""
        return self.service.worlds.update_agent(self._world, self.id, **changes)

    def system_prompt(self, channel: str | None = None) -> str:
        return build_system_prompt(self.profile, channel)

    def context(
        self,
        chat: str | None = None,
        *,
        max_tokens: int | None = None,
        history_limit: int | None = None,
        message: int | Message | None = None,
        channel: str | None = None,
        observation: obs.Observation | Mapping[str, Any] | None = None,
        blocks: Sequence[ContextBlock] = (),
        summarizer: Summarizer | None = None,
        recalled_max_tokens: int | None = None,
        record: bool = False,
    ) -> Context:
        """What this agent's next model call receives in `chat` (`.openai()`, `.anthropic()`, `.report`).
        `recalled_max_tokens` caps the recalled past for this call (0: none). With `record`, the
        context is recorded as a model call (`call_id`; see `calls`, `replay`, `compare`)."""
        message_id = message.id if isinstance(message, Message) else message
        built = self.service.contexts.build_context(
            self._world,
            self.id,
            chat,
            max_tokens=max_tokens,
            history_limit=history_limit,
            message_id=message_id,
            channel=channel,
            observation=observation,
            blocks=blocks,
            summarizer=summarizer,
            recalled_max_tokens=recalled_max_tokens,
        )
        return self.service.calls.record(built, "python") if record else built

    def post_tool_result(
        self, content: str, *, call_id: str, chat: str | None = None, parent: int | None = None
    ) -> Message:
        """Store the result of one of this agent's tool calls (`call_id`, from its model's
        `tool_calls`) for this agent alone: its contexts show it as the `tool` message answering
        that call; no other agent's context, search or inbox ever shows it."""
        return self.service.posting.post_tool_result(self._world, self.id, content, call_id, chat, parent)

    def calls(self, *, before: datetime | None = None, limit: int = 50) -> list[CallRecord]:
        """This agent's recorded model calls, newest first: what each context held, by id."""
        return self.service.calls.list(self._world, self.id, before=before, limit=limit)

    def call(self, call_id: str) -> CallRecord:
        """One recorded model call (UnknownCallError, a NotFoundError, when there is none)."""
        return self.service.calls.get(self._world, self.id, call_id)

    def call_outcome(self, call_id: str, error: str | None = None) -> CallRecord:
        """Record what came of a recorded call: the model answered (no `error`) or failed
        (`error` says how). The calls list and the inspector show it; a runner reports each."""
        return self.service.calls.report_outcome(self._world, self.id, call_id, error)

    def replay(self, call_id: str) -> Replay:
        """Rebuild a recorded call's context from the store: `identical` when the model would
        get the same bytes today, else `diff` says item by item what changed and why."""
        return self.service.calls.replay(self._world, self.id, call_id)

    def compare(self, /, call_id: str, other: str | None = None, **settings: Any) -> Replay:
        """A recorded call beside another (`other`), or beside its context rebuilt now with these
        settings (`max_tokens`, `history_limit`, `channel`, `recalled_max_tokens`)."""
        return self.service.calls.compare(self._world, self.id, call_id, other, **settings)

    def inbox(self, *, unread_only: bool = True, limit: int = 100, mark_read: bool = False) -> list[Message]:
        """Messages delivered to this agent, oldest first (FIFO)."""
        return [m for m, _ in self.service.deliveries.inbox(self._world, self.id, unread_only, limit, mark_read)]

    def ack(self, message_ids: Iterable[int | Message]) -> int:
        ids = [m.id if isinstance(m, Message) else m for m in message_ids]
        return self.service.deliveries.ack(self._world, self.id, ids)

    def decide(self, message: int | Message) -> Decision:
        """Would this agent answer the message now (turn limit included)?"""
        return self.service.agent_state.decide(
            self._world, self.id, message.id if isinstance(message, Message) else message
        )

    def record_llm_call(self) -> int:
        return self.service.agent_state.record_llm_call(self._world, self.id)

    def observe(self, observation: obs.Observation | Mapping[str, Any]) -> int:
        return self.service.agent_state.observe(self._world, self.id, observation)

    def act(self, action: obs.Action | Mapping[str, Any]) -> int:
        return self.service.agent_state.act(self._world, self.id, action)

    @property
    def facts(self) -> Scope:
        """Facts about this agent (scope `agent:WORLD/AGENT`)."""
        world = self.world
        return Scope(self.service, *world.gate.scope(world.principal, f"agent:{self.world_id}/{self.id}"))

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
        """A long-term memory private to this agent (importance 1-10); expiry as in
        `World.add_memory`."""
        return self.service.memories.add_memory(
            self._world,
            content,
            type=type,
            importance=importance,
            agent=self.id,
            chat_id=chat,
            metadata=metadata,
            expires_at=expires_at,
            ttl=ttl,
        )

    def memories(self, *, min_importance: int = 1, limit: int = 100) -> list[Memory]:
        """The world's shared memories and this agent's own, most important first."""
        return self.service.memories.list_memories(self._world, self.id, min_importance, limit)

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
        """Change one of this agent's own memories in place (as `World.update_memory`). A memory
        the world shares is changed only through the world (PermissionDeniedError), another
        agent's is unknown to this one (UnknownMemoryError): the rules of `delete_memory`."""
        changes = memory_changes(
            content=content,
            type=type,
            importance=importance,
            metadata=metadata,
            expires_at=expires_at,
            ttl=ttl,
            clear_expiry=clear_expiry,
        )
        return self.service.memories.update_memory(self._world, _memory_id(memory), changes, agent=self.id)

    def delete_memory(self, memory: int | Memory) -> None:
        """Delete one of this agent's own memories; a shared one is deleted only through the
        world (PermissionDeniedError), another agent's is unknown to this one."""
        self.service.memories.delete_memory(self._world, _memory_id(memory), agent=self.id)

    def extract(self, chat: str | None = None, *, scope: str | None = None) -> dict[str, Any]:
        """After a run: queue fact extraction from this agent's conversation in `chat` into
        `scope` (default: the newest human's `user:ID`). Needs a chat model (`llm_model`);
        without one it returns `{"queued": False, "reason": ...}`. See `Recall.flush_extraction`."""
        return self.service.extraction.extract(self._world, self.id, chat, scope, self.world.tenant)

    def search(
        self, /, query: str, *, k: int = 10, kinds: Sequence[str] = SEARCH_KINDS, **filters: Any
    ) -> list[SearchResult]:
        """Like `World.search`, limited to what this agent may see (no other agent's private memories)."""
        return self.service.searcher.search(
            self._world, query, tenant=self.world.tenant, k=k, kinds=kinds, agent=self.id, **filters
        )

    # Coroutine forms for asyncio and trio programs (`recall.off_loop`).
    aupdate = off_loop(update)
    acontext = off_loop(context)
    apost_tool_result = off_loop(post_tool_result)
    acalls = off_loop(calls)
    acall = off_loop(call)
    acall_outcome = off_loop(call_outcome)
    areplay = off_loop(replay)
    acompare = off_loop(compare)
    ainbox = off_loop(inbox)
    aack = off_loop(ack)
    adecide = off_loop(decide)
    arecord_llm_call = off_loop(record_llm_call)
    aobserve = off_loop(observe)
    aact = off_loop(act)
    aadd_memory = off_loop(add_memory)
    amemories = off_loop(memories)
    aupdate_memory = off_loop(update_memory)
    adelete_memory = off_loop(delete_memory)
    aextract = off_loop(extract)
    asearch = off_loop(search)


class Scope:
    """A scope's facts and summary sections (spec §4)."""

    def __init__(self, service: RecallService, scope: str, tenant: str = "") -> None:
        self.service = service
        self.id = scope
        self.tenant = tenant

    def __repr__(self) -> str:
        return f"Scope({self.id!r})"

    def add(
        self,
        content: str,
        *,
        category: str = "knowledge",
        confidence: float = 1.0,
        source: str = "manual",
        avoid: str | None = None,
    ) -> Fact:
        return self.service.facts.add_facts(
            self.id, [NewFact(content, category, confidence, source, avoid)], self.tenant
        )[0]

    def list(self) -> list[Fact]:
        return self.service.facts.list_facts(self.id, self.tenant)

    def get(self, fact_id: int) -> Fact:
        return self.service.facts.get_fact(self.id, fact_id, self.tenant)

    def update(self, /, fact_id: int, **changes: Any) -> Fact:
        """Change some of content, category, confidence, source, avoid."""
        return self.service.facts.update_fact(self.id, fact_id, changes, self.tenant)

    def delete(self, fact_id: int) -> None:
        self.service.facts.delete_fact(self.id, fact_id, self.tenant)

    def clear(self) -> int:
        """Delete every fact and section of the scope; returns how many facts went."""
        return self.service.facts.clear_facts(self.id, self.tenant)

    @property
    def sections(self) -> dict[str, str]:
        return self.service.facts.sections(self.id, self.tenant)

    def set_sections(self, /, **sections: str) -> dict[str, str]:
        """e.g. `set_sections(work_context="…", top_of_mind="…")`; an empty text removes one."""
        return self.service.facts.set_sections(self.id, sections, self.tenant)

    def export(self) -> dict[str, Any]:
        return self.service.facts.export_facts(self.id, self.tenant)

    def import_facts(self, data: Mapping[str, Any], *, replace: bool = False) -> dict[str, int]:
        return self.service.facts.import_facts(self.id, data, replace, self.tenant)

    # Coroutine forms for asyncio and trio programs (`recall.off_loop`).
    aadd = off_loop(add)
    alist = off_loop(list)
    aget = off_loop(get)
    aupdate = off_loop(update)
    adelete = off_loop(delete)
    aclear = off_loop(clear)
    aset_sections = off_loop(set_sections)
    aexport = off_loop(export)
    aimport_facts = off_loop(import_facts)

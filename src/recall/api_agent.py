"""`Agent`: one agent of a world, the handle for what is done as it or to it: its contexts and
recorded model calls, its inbox, its private memories and facts, its searches. `World` makes
agents, so this module sits below `api_world.py` and knows its world only by the few attributes
it reads (`WorldHandle`), never by importing `World`; `api.py` re-exports it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from recall.api_scope import Scope
from recall.app.calls import Replay
from recall.app.gate import Gate, Principal
from recall.app.memories import memory_changes
from recall.app.search import SEARCH_KINDS, SearchResult
from recall.app.service import RecallService
from recall.core import observations as obs
from recall.core.calls import CallRecord
from recall.core.context_parts import ContextBlock
from recall.core.context_records import Context, Summarizer
from recall.core.models import AgentProfile, Message
from recall.core.prompt import build_system_prompt
from recall.core.routing import Decision
from recall.off_loop import off_loop
from recall.store.records import Memory


class WorldHandle(Protocol):
    """What an agent reads of its world (a `World` is one): the service, the world's ids, and
    who the handle acts as."""

    service: RecallService
    #: What the tenant calls the world.
    id: str
    #: What the service's per-world methods take.
    key: str
    tenant: str
    gate: Gate
    principal: Principal


def memory_id(memory: int | Memory) -> int:
    """The id of a memory given as a record or as its id (`World` and `Agent` take either)."""
    return memory.id if isinstance(memory, Memory) else memory


class Agent:
    def __init__(self, world: WorldHandle, agent_id: str) -> None:
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
        return self.service.memories.update_memory(self._world, memory_id(memory), changes, agent=self.id)

    def delete_memory(self, memory: int | Memory) -> None:
        """Delete one of this agent's own memories; a shared one is deleted only through the
        world (PermissionDeniedError), another agent's is unknown to this one."""
        self.service.memories.delete_memory(self._world, memory_id(memory), agent=self.id)

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

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from recall.core import observations as obs
from recall.core.context import Context, ContextBlock, Summarizer
from recall.core.models import AgentProfile, Message
from recall.core.prompt import build_system_prompt
from recall.core.routing import Decision
from recall.service import PostRequest, RecallService
from recall.settings import Settings
from recall.store import open_store
from recall.store.base import ParticipantRecord, Store

DEFAULT_DB = "recall.db"


def default_db() -> str:
    """`RECALL_DB` if set, else `./recall.db`."""
    return os.environ.get("RECALL_DB") or DEFAULT_DB


class Recall:
    """An open recall store. Use as a context manager, or call `close()`."""

    def __init__(self, db: str | Path | Store | None = None, settings: Settings | None = None) -> None:
        store = open_store(str(db if db is not None else default_db())) if not _is_store(db) else db
        self.service = RecallService(store, settings or Settings.from_env())  # type: ignore[arg-type]

    def world(
        self, world_id: str, *, create: bool = False, name: str | None = None, turn_limit: int | None = None
    ) -> World:
        """The world `world_id`; with `create=True` it is created if missing."""
        if create and self.service.store.get_world(world_id) is None:
            self.service.create_world(world_id, name=name, turn_limit=turn_limit)
        record = self.service.get_world(world_id)
        return World(self.service, record.id)

    def create_world(self, world_id: str, *, name: str | None = None, turn_limit: int | None = None) -> World:
        """Create a new world; a ConflictError if it exists."""
        record = self.service.create_world(world_id, name=name, turn_limit=turn_limit)
        return World(self.service, record.id)

    def worlds(self) -> list[World]:
        return [World(self.service, w.id) for w in self.service.list_worlds()]

    def close(self) -> None:
        self.service.store.close()

    def __enter__(self) -> Recall:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_store(db: object) -> bool:
    return db is not None and not isinstance(db, (str, Path))


class World:
    def __init__(self, service: RecallService, world_id: str) -> None:
        self.service = service
        self.id = world_id

    def __repr__(self) -> str:
        return f"World({self.id!r})"

    @property
    def name(self) -> str:
        return self.service.get_world(self.id).name

    def add_agent(self, agent_id: str, system_prompt: str = "", **settings: Any) -> Agent:
        """Register an agent. Settings: identity, personality, knowledge, goals, constraints,
        guidelines, channel, history_limit, max_tokens, context_filter ('addressed'|'all'), model."""
        profile = self.service.add_agent(self.id, agent_id, system_prompt=system_prompt, **settings)
        return Agent(self.service, self.id, profile.id)

    def add_human(self, human_id: str) -> ParticipantRecord:
        return self.service.add_human(self.id, human_id)

    def agent(self, agent_id: str) -> Agent:
        profile = self.service.get_agent(self.id, agent_id)
        return Agent(self.service, self.id, profile.id)

    def participants(self) -> list[ParticipantRecord]:
        return self.service.participants(self.id)

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
        return self.service.post(self.id, request)

    def post_many(self, requests: Sequence[PostRequest]) -> list[Message]:
        """Post several messages in one transaction: all or none."""
        return self.service.post_many(self.id, requests)

    def import_messages(
        self, requests: Sequence[PostRequest], batch_size: int = 1000, progress: Callable[[int], None] | None = None
    ) -> list[Message]:
        """Post many messages, validating all first; stored in transactions of `batch_size`."""
        return self.service.import_messages(self.id, requests, batch_size, progress)

    def messages(
        self, chat: str | None = None, *, after: int = 0, limit: int = 100, all_chats: bool = False
    ) -> list[Message]:
        return self.service.messages(self.id, chat, after, limit, all_chats)

    def chats(self) -> list[tuple[str | None, int]]:
        return self.service.store.list_chats(self.id)


class Agent:
    def __init__(self, service: RecallService, world_id: str, agent_id: str) -> None:
        self.service = service
        self.world_id = world_id
        self.id = agent_id

    def __repr__(self) -> str:
        return f"Agent({self.world_id!r}, {self.id!r})"

    @property
    def profile(self) -> AgentProfile:
        return self.service.get_agent(self.world_id, self.id)

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
    ) -> Context:
        """What this agent's next model call receives in `chat` (`.openai()`, `.anthropic()`, `.report`)."""
        message_id = message.id if isinstance(message, Message) else message
        return self.service.build_context(
            self.world_id,
            self.id,
            chat,
            max_tokens=max_tokens,
            history_limit=history_limit,
            message_id=message_id,
            channel=channel,
            observation=observation,
            blocks=blocks,
            summarizer=summarizer,
        )

    def inbox(self, *, unread_only: bool = True, limit: int = 100, mark_read: bool = False) -> list[Message]:
        """Messages delivered to this agent, oldest first (FIFO)."""
        return [m for m, _ in self.service.inbox(self.world_id, self.id, unread_only, limit, mark_read)]

    def ack(self, message_ids: Iterable[int | Message]) -> int:
        ids = [m.id if isinstance(m, Message) else m for m in message_ids]
        return self.service.ack(self.world_id, self.id, ids)

    def decide(self, message: int | Message) -> Decision:
        """Would this agent answer the message now (turn limit included)?"""
        return self.service.decide(self.world_id, self.id, message.id if isinstance(message, Message) else message)

    def record_llm_call(self) -> int:
        return self.service.record_llm_call(self.world_id, self.id)

    def observe(self, observation: obs.Observation | Mapping[str, Any]) -> int:
        return self.service.observe(self.world_id, self.id, observation)

    def act(self, action: obs.Action | Mapping[str, Any]) -> int:
        return self.service.act(self.world_id, self.id, action)

"""What the adapters share: the world and participants they act as (made when missing), chat ids
for a framework's session ids, and the messages an adapter no longer shows.

A framework's "clear" or "pop" hides messages from that adapter's view rather than deleting
them, since the world's other participants heard them too (`World.delete_message` deletes one
for everyone): the hidden ids are a note in the agent's key-value
memory, so a new handle, or another process, sees the same view. The messages stay in the store,
in search, and in the agents' recall contexts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from recall.api import Agent, Recall, World
from recall.app.validation import ID_PATTERN
from recall.core.models import Message, SenderType
from recall.core.routing import RESERVED_SENDERS
from recall.errors import ConflictError, InvalidInputError, NotFoundError, UnknownParticipantError
from recall.limits import MAX_ID, MAX_MEMORY_KEY

#: Messages read per page when an adapter walks a chat.
PAGE = 1000


def resolve_world(mem: Recall, world: str | World) -> World:
    """`world` itself, or the world of that id (created when missing)."""
    return world if isinstance(world, World) else mem.world(world, create=True)


def ensure_agent(world: World, agent_id: str) -> Agent:
    """The agent `agent_id` of `world`, registered (with an empty system prompt) when missing."""
    try:
        return world.agent(agent_id)
    except UnknownParticipantError:
        pass
    try:
        return world.add_agent(agent_id)
    except ConflictError:  # registered meanwhile (or a human of that id: then world.agent says so)
        return world.agent(agent_id)


def ensure_human(world: World, human_id: str) -> str:
    """The id to post as for `human_id`: `human`, `user` and `you` need no registering; anyone
    else is registered as a human of `world` when missing."""
    if RESERVED_SENDERS.get(human_id.lower()) is SenderType.HUMAN:
        return human_id.lower()
    for participant in world.participants():
        if participant.id.lower() == human_id.lower():
            if participant.kind != "human":
                raise InvalidInputError("human", f"{human_id!r} is an agent of world {world.id!r}, not a human")
            return participant.id
    try:
        return world.add_human(human_id).id
    except ConflictError:  # registered meanwhile
        return human_id


def chat_id_for(session_id: str) -> str:
    """A recall chat id for a framework's session id: the id itself when it is a valid chat id
    (ASCII letters, digits, `_` and `-`, at most 64), else `s-` and 32 hex digits of its SHA-256."""
    if not isinstance(session_id, str) or not session_id:
        raise InvalidInputError("session_id", "must be a non-empty string")
    if len(session_id) <= MAX_ID and ID_PATTERN.fullmatch(session_id):
        return session_id
    return "s-" + hashlib.sha256(session_id.encode()).hexdigest()[:32]


def note_key(prefix: str, name: str) -> str:
    """A key of an agent's notes for `name`, within the key length cap."""
    key = f"{prefix}:{name}"
    if len(key) <= MAX_MEMORY_KEY:
        return key
    return f"{prefix}:sha256:{hashlib.sha256(name.encode()).hexdigest()}"


def chat_messages(world: World, chat: str | None, after: int = 0) -> Iterator[Message]:
    """Every message of one chat of `world` (None: the default chat) after id `after`, oldest first."""
    while True:
        page = world.messages(chat, after=after, limit=PAGE)
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1].id


class HiddenMessages:
    """The messages an adapter no longer shows: every one up to `through` (a clear) and those in
    `ids` (a pop). Kept in `agent`'s notes under `key`."""

    def __init__(self, agent: Agent, key: str) -> None:
        self.agent = agent
        self.key = key

    def load(self) -> tuple[int, frozenset[int]]:
        """(through, ids): what is hidden now."""
        service = self.agent.service
        try:
            note = service.agent_state.recall_note(self.agent.world.key, self.agent.id, self.key)
        except NotFoundError:
            return 0, frozenset()
        value: Any = note.value
        if not isinstance(value, dict):
            return 0, frozenset()
        through = value.get("through", 0)
        ids = value.get("ids", [])
        return (
            through if isinstance(through, int) else 0,
            frozenset(i for i in ids if isinstance(i, int)) if isinstance(ids, list) else frozenset(),
        )

    def _save(self, through: int, ids: frozenset[int]) -> None:
        value = {"through": through, "ids": sorted(i for i in ids if i > through)}
        self.agent.service.agent_state.remember(self.agent.world.key, self.agent.id, self.key, value)

    def hide_through(self, message_id: int) -> None:
        """Hide every message up to `message_id` (and keep hiding those already hidden)."""
        through, ids = self.load()
        self._save(max(through, message_id), ids)

    def hide(self, message_id: int) -> None:
        through, ids = self.load()
        self._save(through, ids | {message_id})

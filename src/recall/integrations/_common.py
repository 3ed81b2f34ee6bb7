"""What the adapters share: the world and participants they act as, chat ids for a framework's
session ids, and the messages an adapter no longer shows.

An adapter refuses a world, agent or human that does not exist, with the close matches it
knows (a misspelt name is an error, not a new empty world): `create=True` creates what is
missing. The humans `human`, `user` and `you` need no registering.

A framework's "clear" or "pop" hides messages from that adapter's view rather than deleting
them, since the world's other participants heard them too (`World.delete_message` deletes one
for everyone): the hidden ids are a note in the agent's key-value
memory, so a new handle, or another process, sees the same view. The messages stay in the store,
in search, and in the agents' recall contexts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Iterator
from dataclasses import replace
from typing import Any

from recall.api import Agent, Recall, World
from recall.app.posting import PostRequest
from recall.app.validation import ID_PATTERN
from recall.core.models import Message, SenderType
from recall.core.routing import RESERVED_SENDERS
from recall.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    UnknownParticipantError,
    UnknownWorldError,
)
from recall.limits import MAX_ID, MAX_MEMORY_KEY
from recall.suggest import close_matches, hint

#: The most messages read per page when an adapter walks a chat from its end.
PAGE = 1000
#: The first page read from a chat's end (`newest_first`).
FIRST_PAGE = 32
#: Hidden messages a read passes over in the database, at most (the newest of them).
MAX_EXCLUDED = 500
#: Marks, in a message's adapter metadata field, an input posted before the model call (`as_turn`).
TURN = "turn"


class UnknownWorldNameError(UnknownWorldError):
    """An adapter was given the id of a world that does not exist, without `create=True`.
    `suggestions`: the existing world ids closest to it."""

    def __init__(self, world_id: str, known: Iterable[str]) -> None:
        super().__init__(world_id)
        ids = list(known)
        self.suggestions = close_matches(world_id, ids)
        self.args = (
            f"unknown world {world_id!r}: {hint(world_id, ids, 'worlds')} (create=True creates a world {world_id!r})",
        )


class UnknownParticipantNameError(UnknownParticipantError):
    """An adapter was given the id of an agent or human its world does not have, without
    `create=True`. `suggestions`: the world's ids of that kind closest to it."""

    def __init__(self, world: World, participant_id: str, kind: str, known: Iterable[str]) -> None:
        super().__init__(world.id, participant_id, kind)
        ids = list(known)
        self.suggestions = close_matches(participant_id, ids)
        self.args = (
            f"unknown {kind} {participant_id!r} in world {world.id!r}: {hint(participant_id, ids, kind + 's')} "
            f"(create=True registers {participant_id!r} as {'an' if kind[0] in 'aeiou' else 'a'} {kind} of the world)",
        )


def resolve_world(mem: Recall, world: str | World, create: bool = False) -> World:
    """`world` itself, or the world of that id: created when missing with `create`, else an
    `UnknownWorldNameError` naming the closest world ids."""
    if isinstance(world, World):
        return world
    try:
        return mem.world(world)
    except UnknownWorldError:
        if create:
            return mem.world(world, create=True)
        raise UnknownWorldNameError(world, [w.id for w in mem.worlds()]) from None


def _reserved(field: str, name: str) -> InvalidInputError:
    return InvalidInputError(
        field, f"{name!r} is a reserved sender name ({', '.join(RESERVED_SENDERS)}), not the id of a participant"
    )


def ensure_agent(world: World, agent_id: str, create: bool = False) -> Agent:
    """The agent `agent_id` of `world`. When missing: registered (with an empty system prompt)
    with `create`, else an `UnknownParticipantNameError` naming the closest agents. A human of
    that id, or a reserved sender name, is an `InvalidInputError`."""
    if not isinstance(agent_id, str) or not agent_id:
        raise InvalidInputError("agent", "must be the id of an agent of the world (a non-empty string)")
    if agent_id.lower() in RESERVED_SENDERS:
        raise _reserved("agent", agent_id)
    people = world.participants()
    for participant in people:
        if participant.id.lower() == agent_id.lower():
            if participant.kind != "agent":
                agents = [p.id for p in people if p.kind == "agent"]
                raise InvalidInputError(
                    "agent",
                    f"{agent_id!r} is a {participant.kind} of world {world.id!r}, not an agent: "
                    f"{hint(agent_id, agents, 'agents') if agents else 'the world has no agents yet'}"
                    " (a human is the `human=` of an adapter)",
                )
            return world.agent(participant.id)
    if not create:
        raise UnknownParticipantNameError(world, agent_id, "agent", [p.id for p in people if p.kind == "agent"])
    try:
        return world.add_agent(agent_id)
    except ConflictError:  # registered meanwhile (or a human of that id: then world.agent says so)
        return world.agent(agent_id)


def ensure_human(world: World, human_id: str, create: bool = False) -> str:
    """The id to post as for `human_id`: `human`, `user` and `you` need no registering; anyone
    else is a human of `world`. When missing: registered with `create`, else an
    `UnknownParticipantNameError` naming the closest humans. An agent of that id, or another
    reserved sender name, is an `InvalidInputError`."""
    if not isinstance(human_id, str) or not human_id:
        raise InvalidInputError("human", "must be the id of a human of the world, or 'human' (a non-empty string)")
    if RESERVED_SENDERS.get(human_id.lower()) is SenderType.HUMAN:
        return human_id.lower()
    if human_id.lower() in RESERVED_SENDERS:
        raise _reserved("human", human_id)
    people = world.participants()
    for participant in people:
        if participant.id.lower() == human_id.lower():
            if participant.kind != "human":
                raise InvalidInputError("human", f"{human_id!r} is an agent of world {world.id!r}, not a human")
            return participant.id
    if not create:
        raise UnknownParticipantNameError(world, human_id, "human", [p.id for p in people if p.kind == "human"])
    try:
        return world.add_human(human_id).id
    except ConflictError:  # registered meanwhile
        return human_id


def bind(mem: Recall, world: str | World, agent: str, human: str, create: bool = False) -> tuple[World, Agent, str]:
    """What an adapter acts as: the world (`resolve_world`), the agent (`ensure_agent`) and the
    id to post the human's messages as (`ensure_human`), each refused or created as they say."""
    bound = resolve_world(mem, world, create)
    return bound, ensure_agent(bound, agent, create), ensure_human(bound, human, create)


def post_for(agent: Agent, requests: list[PostRequest]) -> list[Message]:
    """Post an adapter's requests in one transaction, trusted (the adapter alone writes its
    reserved metadata keys, which the public paths refuse from anyone), and mark what others
    wrote read in `agent`'s inbox: the framework answers it, so a recall runner of the same agent
    does not answer it again."""
    posted = agent.service.posting.post_many(agent.world.key, requests, trusted=True)
    answered = [m for m in posted if m.sender.lower() != agent.id.lower()]
    if answered:
        agent.ack(answered)
    return posted


def as_turn(request: PostRequest, field: str) -> PostRequest:
    """`request` marked as the input of a turn, posted before the model call (`TURN` in its
    adapter metadata `field`), so the framework saving it afterwards does not post it again."""
    metadata = dict(request.metadata or {})
    metadata[field] = {**metadata[field], TURN: True}
    return replace(request, metadata=metadata)


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


def newest_first(
    world: World, chat: str | None, after: int = 0, hidden: Collection[int] = frozenset()
) -> Iterator[Message]:
    """The messages of one chat of `world` after id `after`, newest first, read from the end of
    the chat's index in pages that grow from a few rows (a caller that wants the newest few
    reads about that many, however long the chat). The newest MAX_EXCLUDED of `hidden` are
    passed over by the database (pops in a row hide the chat's newest: a read would meet them
    all first); older hidden ones come back, for the caller to skip."""
    store, before, page = world.service.store, 2**63 - 1, FIRST_PAGE
    excluding = sorted(hidden, reverse=True)[:MAX_EXCLUDED]
    while True:
        rows = store.newest_messages(world.key, chat, before=before, after=after, limit=page, excluding=excluding)
        yield from rows
        if len(rows) < page:
            return
        before, page = rows[-1].id, min(page * 4, PAGE)


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

    def hide(self, message_id: int, hiding: tuple[int, frozenset[int]] | None = None) -> None:
        """Hide one message more; `hiding`: what is hidden now, if the caller has just read it
        (`load`) under the lock that keeps other writers of this key out."""
        through, ids = hiding if hiding is not None else self.load()
        self._save(through, ids | {message_id})

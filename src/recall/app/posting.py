"""Messages: route and post them (one, many in one transaction, an import in batches), read them
back, and wake in-process waiters when some were stored."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recall import limits, telemetry
from recall.app.validation import MAX_MESSAGE_ID, check_channel, check_chat, check_int, parse_timestamp
from recall.app.worlds import Roster, Worlds
from recall.core.models import Message
from recall.core.routing import (
    LANGCHAIN_SYSTEM_FOR,
    PRIVATE_FOR,
    TOOL_CALL_ID,
    TOOL_RESULT_FOR,
    mentions,
    paragraph_mentions,
    private_owner,
    resets_turns,
    sender_type,
)
from recall.errors import InvalidInputError, text_problem
from recall.settings import Settings
from recall.store.base import Store
from recall.store.records import NewMessage, WorldRecord
from recall.telemetry.instruments import POST

if TYPE_CHECKING:
    from recall.search.indexer import BackgroundIndexer

IMPORT_BATCH = 1000
#: Who a tool result is posted as.
TOOL_SENDER = "system"
#: Characters of a tool call's id at most (providers' ids are a few dozen).
MAX_CALL_ID = 256
#: Metadata keys recall alone writes, on its trusted paths (`trusted=True` below): who a
#: message is for alone, what makes it a tool result, and the keys recall's adapters keep their
#: items under (integrations/langchain.py's "langchain" and "langchain_system_for",
#: integrations/openai_agents.py's "openai_agents"). From anyone else they would decide who
#: sees a message and what it is: a forged tool result, an item in another agent's session.
RESERVED_METADATA_KEYS = frozenset(
    {PRIVATE_FOR, TOOL_RESULT_FOR, TOOL_CALL_ID, LANGCHAIN_SYSTEM_FOR, "langchain", "openai_agents"}
)


@dataclass(frozen=True)
class PostRequest:
    """One message to post; the fields a caller may give."""

    sender: str
    content: str
    chat_id: str | None = None
    channel: str | None = None
    parent_id: int | None = None
    created_at: datetime | str | float | None = None
    idempotency_key: str | None = None
    metadata: Mapping[str, Any] | None = None
    #: The one agent the message is for: delivered to it alone, shown to no other agent. Only on
    #: recall's trusted paths (its tool results and adapters), like the reserved metadata keys.
    private_for: str | None = None


class Posting:
    """Post to a world's chats and read its messages."""

    def __init__(
        self, store: Store, settings: Settings, worlds: Worlds, indexer: BackgroundIndexer | None = None
    ) -> None:
        self.store = store
        self.settings = settings
        self.worlds = worlds
        #: Told when messages are stored, so the search index picks them up soon.
        self._indexer = indexer
        #: Wakes in-process waiters (agent runners) when messages are stored.
        self._posted = threading.Condition()
        self._posts = 0

    def _route(self, world: WorldRecord, roster: Roster, req: PostRequest, trusted: bool = False) -> NewMessage:
        """Validate one post and work out its sender type, mentions and recipients. `trusted`:
        recall's own paths, which alone may write the reserved metadata keys and `private_for`."""
        if not isinstance(req.sender, str) or not req.sender.strip():
            raise InvalidInputError("sender", "must name who is posting (a participant, or system/world/human)")
        if not isinstance(req.content, str):
            raise InvalidInputError("content", "must be text")
        if not req.content.strip() and not (isinstance(req.metadata, Mapping) and req.metadata.get("tool_calls")):
            # Only an agent's message that carries tool calls may have no text.
            raise InvalidInputError("content", "must be non-empty text")
        if problem := text_problem(req.content):
            raise InvalidInputError("content", problem)
        limit = self.settings.max_message_chars
        if len(req.content) > limit:
            raise InvalidInputError("content", f"is {len(req.content)} characters; the limit is {limit}")
        check_channel(req.channel)
        if req.metadata is not None and not isinstance(req.metadata, Mapping):
            raise InvalidInputError("metadata", "must be an object")
        metadata = dict(req.metadata or {})
        if not trusted:
            _check_not_reserved(metadata, req.private_for)
        # Checked here, not when read: a stored message must always be deliverable (spec §8).
        limits.check_json("metadata", metadata, limits.MAX_METADATA_CHARS)
        if req.parent_id is not None:
            check_int("parent_id", req.parent_id, 1, MAX_MESSAGE_ID)
            parent = self.store.get_message(world.key, req.parent_id)
            if parent is None:
                raise InvalidInputError("parent_id", f"no message {req.parent_id} in world {world.id!r}")
            # A reply joins its parent's thread; the thread is named by its first message.
            metadata["thread_id"] = parent.metadata.get("thread_id", parent.id)
        if req.idempotency_key is not None and (not isinstance(req.idempotency_key, str) or not req.idempotency_key):
            raise InvalidInputError("idempotency_key", "must be a non-empty string")
        if req.idempotency_key is not None:
            limits.check_text("idempotency_key", req.idempotency_key, limits.MAX_IDEMPOTENCY_KEY)
        chat_id = check_chat(req.chat_id)

        kind = sender_type(req.sender, roster.humans, roster.agent_keys)
        if kind is None:
            raise InvalidInputError(
                "sender",
                f"{req.sender!r} is not a participant of world {world.id!r}: register it with "
                f"world.add_human({req.sender!r}) or world.add_agent({req.sender!r}) "
                f"(`recall human add {world.id} {req.sender}`), or post as system/world/human",
            )
        author = roster.by_key.get(req.sender.strip().lower())
        sender = author.id if author else req.sender.strip().lower()
        author_agent = author.id if author and author.kind == "agent" else None
        recipients = roster.recipients(author_agent)
        owner = req.private_for or private_owner(metadata)
        if owner is not None:
            found = roster.by_key.get(owner.lower()) if isinstance(owner, str) else None
            if found is None or found.kind != "agent":
                raise InvalidInputError("private_for", f"{owner!r} is not an agent of world {world.id!r}")
            metadata[PRIVATE_FOR] = found.id
            recipients = tuple(a for a in recipients if a == found.id)
        return NewMessage(
            sender=sender,
            sender_type=kind,
            content=req.content,
            created_at=parse_timestamp(req.created_at),
            chat_id=chat_id,
            channel=req.channel,
            parent_id=req.parent_id,
            mentions=tuple(mentions(req.content)),
            addressed=tuple(paragraph_mentions(req.content)),
            metadata=metadata,
            # Keys are the sender's own: two senders may use the same key without colliding.
            idempotency_key=None if req.idempotency_key is None else f"{sender}\n{req.idempotency_key}",
            recipients=recipients,
            author_agent=author_agent,
            reset_turns=resets_turns(kind),
        )

    # -- posting --------------------------------------------------------------------------

    def post(self, world_id: str, request: PostRequest, *, trusted: bool = False) -> Message:
        return self.post_many(world_id, [request], trusted=trusted)[0]

    def post_many(self, world_id: str, requests: Sequence[PostRequest], *, trusted: bool = False) -> list[Message]:
        """Post several messages in one transaction: all are stored, or none (if one is invalid).
        `trusted`: recall's own tool results and adapters (see `RESERVED_METADATA_KEYS`)."""
        ids = {"recall.world.id": world_id if isinstance(world_id, str) else None}
        with telemetry.timed(POST, "recall.post.duration", ids) as span:
            world, batch = self.prepare_posts(world_id, requests, trusted=trusted)
            stored = self.append_messages(world, batch)
            span.set(post_attributes(batch))
        return stored

    def prepare_posts(
        self, world_id: str, requests: Sequence[PostRequest], *, trusted: bool = False
    ) -> tuple[str, list[NewMessage]]:
        """Validate and route posts without storing them: the world's key and the batch,
        ready for `append_messages` (a server groups batches into one transaction)."""
        world = self.worlds.get_world(world_id)
        roster = self.worlds.roster(world.key)
        return world.key, [self._route(world, roster, r, trusted) for r in requests]

    def post_tool_result(
        self, world_id: str, agent_id: str, content: str, call_id: str, chat_id: str | None, parent_id: int | None
    ) -> Message:
        """A tool's result for one of the agent's own calls, stored for that agent alone (sent by
        `system`): its context shows it as the `tool` message answering `call_id`; no other
        agent's context, search or inbox shows it."""
        if not isinstance(call_id, str) or not call_id.strip():
            raise InvalidInputError("call_id", "must name the tool call this result answers")
        limits.check_text("call_id", call_id, MAX_CALL_ID)
        world, agent = self.worlds.agent_in(world_id, agent_id)
        metadata = {TOOL_RESULT_FOR: agent, TOOL_CALL_ID: call_id}
        if isinstance(content, str) and not content.strip():
            content = "(no output)"  # a tool may answer nothing; the call still needs its answer
        request = PostRequest(TOOL_SENDER, content, chat_id, parent_id=parent_id, metadata=metadata, private_for=agent)
        return self.post(world, request, trusted=True)

    def append_messages(self, world_id: str, batch: Sequence[NewMessage]) -> list[Message]:
        """Store routed messages (from `prepare_posts`) in one transaction and let the search
        indexer know."""
        stored = self.store.append_messages(world_id, batch)
        if self._indexer is not None:
            self._indexer.notify()
        with self._posted:
            self._posts += len(stored)
            self._posted.notify_all()
        return stored

    def import_messages(
        self,
        world_id: str,
        requests: Sequence[PostRequest],
        batch_size: int = IMPORT_BATCH,
        progress: Callable[[int], None] | None = None,
        *,
        trusted: bool = False,
    ) -> list[Message]:
        """Post many messages: all are validated first, so a bad one stores nothing; then they
        are stored in transactions of `batch_size`, reporting each batch to `progress`. They are
        history: delivered already read, so no agent answers them (they are in its memory).
        `trusted`: recall's own importers, which bring an agent's tool results along with its
        tool calls (`RESERVED_METADATA_KEYS`)."""
        world = self.worlds.get_world(world_id)
        check_int("batch_size", batch_size, 1)
        roster = self.worlds.roster(world.key)
        now = datetime.now(UTC)
        routed = [replace(self._route(world, roster, r, trusted), read_at=now) for r in requests]
        stored: list[Message] = []
        for start in range(0, len(routed), batch_size):
            chunk = routed[start : start + batch_size]
            stored.extend(self.append_messages(world.key, chunk))
            if progress is not None:
                progress(len(chunk))
        return stored

    # -- waiting for posts ----------------------------------------------------------------

    @property
    def post_count(self) -> int:
        """Messages this service has stored since it opened (see `wait_for_posts`)."""
        with self._posted:
            return self._posts

    def wait_for_posts(self, seen: int, timeout: float) -> int:
        """Block until this service has stored messages beyond `seen` posts (or `timeout`
        seconds pass); the count of posts so far. Posts by other processes do not wake it:
        callers that share a store across processes also poll."""
        with self._posted:
            self._posted.wait_for(lambda: self._posts > seen, timeout)
            return self._posts

    # -- reading messages -----------------------------------------------------------------

    def find_message(self, world_id: str, message_id: int) -> Message | None:
        """The message of the world (by key), or None: no checks (a post announced by a store)."""
        return self.store.get_message(world_id, message_id)

    def get_message(self, world_id: str, message_id: int) -> Message:
        world = self.worlds.get_world(world_id)
        message = self.store.get_message(world.key, message_id)
        if message is None:
            raise InvalidInputError("message_id", f"no message {message_id} in world {world.id!r}")
        return message

    def messages(
        self, world_id: str, chat_id: str | None = None, after: int = 0, limit: int = 100, any_chat: bool = False
    ) -> list[Message]:
        world = self.worlds.get_world(world_id)
        check_int("after", after, 0, MAX_MESSAGE_ID)
        check_int("limit", limit, 1, 1000)
        return self.store.list_messages(world.key, check_chat(chat_id), after, limit, any_chat)

    def heard(self, world_id: str, agent_id: str, messages: Sequence[Message]) -> list[Message]:
        """Those of the world's `messages` the agent heard or wrote (its memory, spec §1), in order."""
        key = self.worlds.get_world(world_id).key
        heard = self.store.heard_ids(key, agent_id, [m.id for m in messages])
        return [m for m in messages if m.id in heard]

    def delivered_to(self, world_id: str, messages: Sequence[Message]) -> dict[int, list[str]]:
        """The agents each message was delivered to, read from the deliveries (not today's
        roster: an agent added since heard none of them), by message id."""
        key = self.worlds.get_world(world_id).key
        ids = [m.id for m in messages]
        out: dict[int, list[str]] = {m.id: [] for m in messages}
        for agent in self.worlds.roster(key).agents:
            for heard in self.store.heard_ids(key, agent, ids):
                out[heard].append(agent)
        authors = {m.id: m.sender.lower() for m in messages}
        return {i: [a for a in agents if a.lower() != authors[i]] for i, agents in out.items()}

    def list_chats(self, world_id: str) -> list[tuple[str | None, int]]:
        """The world's chats (None: the default chat) with their message counts."""
        return self.store.list_chats(self.worlds.get_world(world_id).key)


def post_attributes(batch: Sequence[NewMessage]) -> dict[str, telemetry.Value]:
    """A post's span: how many messages, and how many inboxes they went to (never their text)."""
    return {
        "recall.post.messages": len(batch),
        "recall.post.recipients": sum(len(m.recipients) for m in batch),
        "recall.post.mentions": sum(len(m.mentions) for m in batch),
    }


def _check_not_reserved(metadata: Mapping[str, Any], private_for: object) -> None:
    """Refuse what only recall's trusted paths write (`RESERVED_METADATA_KEYS`, `private_for`)."""
    if private_for is not None:
        raise InvalidInputError("private_for", "is set by recall for its tool results and adapters' items only")
    for key in metadata:
        if key in RESERVED_METADATA_KEYS:
            raise InvalidInputError(
                f"metadata.{key}",
                "is reserved: recall writes it for tool results (Agent.post_tool_result, "
                "POST /v1/worlds/{world}/agents/{agent}/tool-results) and its adapters' own items",
            )

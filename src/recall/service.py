"""The use cases: every interface (Python, HTTP, MCP, CLI, UI) calls these, so none disagree.

The service validates input, runs the pure core (routing, context building) on what the
store returns, and hands the store whole writes to commit in one transaction.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any, TypeVar

from recall import limits
from recall.core import observations as obs
from recall.core.context import Context, ContextBlock, ContextRequest, Summarizer, build_context
from recall.core.inbox import CheckResult, context_slice, split_unread
from recall.core.models import CHANNELS, AgentProfile, ContextFilter, Message
from recall.core.prompt import build_system_prompt
from recall.core.routing import (
    RESERVED_SENDERS,
    Decision,
    decide,
    mentions,
    paragraph_mentions,
    resets_turns,
    sender_type,
)
from recall.core.tokens import TokenCounter, context_window, encoding_for_model
from recall.errors import (
    NUL_MESSAGE,
    AmbiguousWorldError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    UnknownParticipantError,
    UnknownWorldError,
)
from recall.llm.summarizer import LLMSummarizer
from recall.long_term import RECENT_SCAN, LongTermMemory
from recall.settings import Settings
from recall.store import open_search_index
from recall.store.base import ContextSession, MemoryItem, NewMessage, ParticipantRecord, Store, WorldRecord

#: Ids of worlds, chats and participants: an ASCII word, optionally joined by `-` or `_`,
#: so every participant can be @mentioned and its id is a valid OpenAI `name`.
ID_PATTERN = re.compile(r"[A-Za-z0-9_]+(?:[-_][A-Za-z0-9_]+)*", re.ASCII)
MAX_ID_LENGTH = 64
MAX_HISTORY_LIMIT = 10_000
#: Message ids fit SQLite's and PostgreSQL's 64-bit integers with room to spare.
MAX_MESSAGE_ID = 2**62
IMPORT_BATCH = 1000
#: Unread deliveries read per page by an inbox check.
INBOX_PAGE = 200
DEFAULT_SESSION = "default"
MAX_MEMORY_KEY = limits.MAX_MEMORY_KEY
MAX_MEMORY_VALUE = limits.MAX_MEMORY_VALUE
MAX_MEMORY_TTL = 10 * 365 * 24 * 3600
_V = TypeVar("_V")


def _check_id(field: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(field, "must be a non-empty string")
    if len(value) > MAX_ID_LENGTH or not ID_PATTERN.fullmatch(value):
        raise InvalidInputError(
            field,
            f"{value!r} is not a valid id: use up to {MAX_ID_LENGTH} ASCII letters, digits, '_' and '-' "
            "(not at the start or end), e.g. 'support-bot'",
        )
    return value


def _check_int(field: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(field, f"must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidInputError(field, f"must be {bound}, got {value}")
    return value


def _check_memory_key(key: object) -> str:
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_MEMORY_KEY:
        raise InvalidInputError("key", f"must be non-empty text of at most {MAX_MEMORY_KEY} characters")
    return limits.check_text("key", key, MAX_MEMORY_KEY)


def _check_chat(chat_id: str | None) -> str | None:
    return None if chat_id is None or chat_id == "" else _check_id("chat_id", chat_id)


def parse_timestamp(value: datetime | str | float | int | None, field: str = "created_at") -> datetime:
    """A caller-supplied time (datetime, ISO 8601 text or epoch seconds), in UTC; now if None."""
    if value is None:
        return datetime.now(UTC)
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(float(value), tz=UTC)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(field, f"{value!r} is not an ISO 8601 time like 2025-05-08T13:56:00Z") from None
    else:
        raise InvalidInputError(field, f"must be a time, got {value!r}")
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


_PROFILE_FIELDS = {f.name for f in fields(AgentProfile)} - {"id"}
_LIST_FIELDS = ("goals", "constraints", "guidelines")


def profile_from_record(record: ParticipantRecord) -> AgentProfile:
    data = dict(record.profile)
    for name in _LIST_FIELDS:
        data[name] = tuple(data.get(name) or ())
    data["context_filter"] = ContextFilter(data.get("context_filter") or ContextFilter.ADDRESSED.value)
    return AgentProfile(id=record.id, **{k: v for k, v in data.items() if k in _PROFILE_FIELDS})


def _profile_to_json(profile: AgentProfile) -> dict[str, Any]:
    data = asdict(profile)
    data.pop("id")
    data["context_filter"] = profile.context_filter.value
    for name in _LIST_FIELDS:
        data[name] = list(data[name])
    return data


def _validate_profile(agent_id: str, settings: Mapping[str, Any]) -> AgentProfile:
    unknown = set(settings) - _PROFILE_FIELDS
    if unknown:
        raise InvalidInputError(
            sorted(unknown)[0], f"is not an agent setting; known settings: {', '.join(sorted(_PROFILE_FIELDS))}"
        )
    values: dict[str, Any] = {}
    for name in ("system_prompt", "identity", "personality", "knowledge"):
        value = settings.get(name) or ""
        if not isinstance(value, str):
            raise InvalidInputError(name, f"must be text, got {type(value).__name__}")
        values[name] = limits.check_text(name, value, limits.MAX_PROFILE_TEXT)
    for name in _LIST_FIELDS:
        value = settings.get(name) or ()
        if isinstance(value, str):
            value = (value,)
        if not all(isinstance(v, str) for v in value):
            raise InvalidInputError(name, "must be a list of strings")
        if len(value) > limits.MAX_PROFILE_ITEMS:
            raise InvalidInputError(name, f"has {len(value)} items; the limit is {limits.MAX_PROFILE_ITEMS}")
        values[name] = tuple(limits.check_text(f"{name}[{i}]", v, limits.MAX_PROFILE_ITEM) for i, v in enumerate(value))
    channel = settings.get("channel")
    if channel is not None and channel not in CHANNELS:
        raise InvalidInputError("channel", f"must be one of {', '.join(CHANNELS)}, got {channel!r}")
    values["channel"] = channel
    if settings.get("history_limit") is not None:
        values["history_limit"] = _check_int("history_limit", settings["history_limit"], 0, MAX_HISTORY_LIMIT)
    if settings.get("max_tokens") is not None:
        values["max_tokens"] = _check_int("max_tokens", settings["max_tokens"], 1)
    raw_filter = settings.get("context_filter") or ContextFilter.ADDRESSED.value
    try:
        values["context_filter"] = ContextFilter(raw_filter)
    except ValueError:
        raise InvalidInputError("context_filter", f"must be 'addressed' or 'all', got {raw_filter!r}") from None
    model = settings.get("model")
    if model is not None and not isinstance(model, str):
        raise InvalidInputError("model", "must be a model name like 'gpt-4o'")
    values["model"] = None if model is None else limits.check_text("model", model, limits.MAX_MODEL_NAME)
    return AgentProfile(id=agent_id, **values)


T = TypeVar("T")


def _check_observation(name: str, data: Mapping[str, Any], texts: Sequence[str]) -> None:
    """An observation's or action's JSON form: finite numbers, no NUL, its texts and the whole
    within their caps."""
    for field in texts:
        if data.get(field) is not None:
            limits.check_text(field, data[field], limits.MAX_OBSERVATION_TEXT)
    limits.check_json_fields(name, data, limits.MAX_OBSERVATION_CHARS)


def _readable(parse: Callable[[Mapping[str, Any]], T], stored: Sequence[Mapping[str, Any]]) -> list[T]:
    """The stored rows `parse` accepts: one an older version stored unchecked (a number that was
    NaN reads back as null) is left out of the context rather than failing its build."""
    readable: list[T] = []
    for data in stored:
        try:
            readable.append(parse(data))
        except InvalidInputError:
            continue
    return readable


class Roster:
    """A world's participants, indexed the ways routing needs (cached between writes)."""

    def __init__(self, people: Sequence[ParticipantRecord]) -> None:
        self.people = list(people)
        self.by_key = {p.id.lower(): p for p in people}
        self.profiles = {k: profile_from_record(p) for k, p in self.by_key.items() if p.kind == "agent"}
        self.humans = {k for k, p in self.by_key.items() if p.kind == "human"}
        self.agents = [p.id for p in people if p.kind == "agent"]
        self.agent_keys = {a.lower() for a in self.agents}
        self._recipients: dict[str | None, tuple[str, ...]] = {}

    def recipients(self, author_agent: str | None) -> tuple[str, ...]:
        """Every agent but the author: the same tuple each time, so a batch shares it."""
        found = self._recipients.get(author_agent)
        if found is None:
            found = self._recipients[author_agent] = tuple(a for a in self.agents if a != author_agent)
        return found


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


class RecallService:
    def __init__(self, store: Store, settings: Settings | None = None) -> None:
        self.store = store
        self.settings = settings or Settings()
        # Worlds and their participants are read on every call but change rarely: they are
        # cached, dropped on our own writes and whenever the store says another process wrote.
        self._worlds: dict[str, WorldRecord] = {}
        #: (tenant or None for any, lowercased id) → key, for `resolve_world`.
        self._world_keys: dict[tuple[str | None, str], str] = {}
        self._rosters: dict[str, Roster] = {}
        self._store_version: int | None = None
        # Servers call the service from many threads: a read that began before a drop must not
        # put what it read back into the cache, so each drop bumps the generation, and a read
        # is cached only if the generation it started in is still current.
        self._cache_lock = threading.Lock()
        self._generation = 0
        #: Facts, notes, search and the context blocks built from them.
        index, indexer = open_search_index(store, self.settings)
        self.long_term = LongTermMemory(
            store,
            self.settings,
            self.get_world,
            self.resolve_world,
            lambda world, agent: self.get_agent(world, agent).id,
            index,
            indexer,
        )
        #: Wakes in-process waiters (agent runners) when messages are stored.
        self._posted = threading.Condition()
        self._posts = 0
        #: Summaries of older history (spec §3) with the configured chat model; None without one.
        self.summarizer = None if self.long_term.model is None else LLMSummarizer(self.long_term.model)

    def close(self) -> None:
        self.long_term.close()
        self.store.close()

    def _drop_stale_caches(self) -> None:
        version = self.store.change_version()
        if version != self._store_version:
            self._drop_caches()
            self._store_version = version

    def _drop_caches(self, world_key: str | None = None) -> None:
        """Forget the cached roster of one world, or every cached world and roster."""
        with self._cache_lock:
            self._generation += 1
            if world_key is not None:
                self._rosters.pop(world_key, None)
            else:
                self._worlds.clear()
                self._world_keys.clear()
                self._rosters.clear()

    def _cache(self, cache: dict[str, _V], key: str, value: _V, generation: int) -> _V:
        with self._cache_lock:
            if generation == self._generation:
                cache[key] = value
        return value

    # -- worlds ---------------------------------------------------------------------------

    def create_world(
        self, world_id: str, name: str | None = None, turn_limit: int | None = None, tenant: str = ""
    ) -> WorldRecord:
        _check_id("world_id", world_id)
        if turn_limit is not None:
            _check_int("turn_limit", turn_limit, 1)
        if name is not None:
            limits.check_text("name", name, limits.MAX_WORLD_NAME)
        # The store refuses an id the tenant has already (ConflictError); other tenants' ids
        # are no concern of this one (spec §8).
        world = self.store.create_world(world_id, name or world_id, turn_limit, datetime.now(UTC), tenant)
        # The id may now name worlds in two tenants: "the only world of that id" is looked up again.
        with self._cache_lock:  # a lookup under way must not cache the old answer either
            self._generation += 1
            self._world_keys.pop((None, world_id.lower()), None)
        return world

    def get_world(self, world_id: str) -> WorldRecord:
        """The world whose key (`WorldRecord.key`) is `world_id`. Every per-world method of the
        service takes a world by its key; callers find it first with `resolve_world`."""
        if not isinstance(world_id, str):
            raise UnknownWorldError(str(world_id))
        self._drop_stale_caches()
        return self._world_by_key(world_id)

    def _world_by_key(self, key: str) -> WorldRecord:
        world = self._worlds.get(key.lower())
        if world is None:
            generation = self._generation
            world = self.store.get_world(key)
            if world is None:
                raise UnknownWorldError(key)
            self._cache(self._worlds, key.lower(), world, generation)
        return world

    def resolve_world(self, world_id: str, tenant: str | None = None) -> WorldRecord:
        """The world a caller names (spec §8: ids are unique per tenant): `world_id` of `tenant`,
        so another tenant's world of that id is as unknown as one that never existed. With
        tenant None (the Python API, a server without API keys) the only world of that id in
        any tenant; AmbiguousWorldError when several tenants have one."""
        if not isinstance(world_id, str):
            raise UnknownWorldError(str(world_id))
        self._drop_stale_caches()
        key = self._world_keys.get((tenant, world_id.lower()))
        if key is not None:
            return self._world_by_key(key)
        generation = self._generation
        found = self.store.find_worlds(world_id, tenant)
        if not found:
            raise UnknownWorldError(world_id)
        if len(found) > 1:
            raise AmbiguousWorldError(world_id, len(found))
        world = found[0]
        with self._cache_lock:
            if generation == self._generation:
                self._worlds[world.key.lower()] = world
                self._world_keys[(tenant, world_id.lower())] = world.key
        return world

    def roster(self, world_id: str) -> Roster:
        """The world's participants (a cached read)."""
        world = self.get_world(world_id)
        roster = self._rosters.get(world.key.lower())
        if roster is None:
            generation = self._generation
            people = self.store.list_participants(world.key)
            roster = self._cache(self._rosters, world.key.lower(), Roster(people), generation)
        return roster

    def list_worlds(self, tenant: str | None = None) -> list[WorldRecord]:
        """Every world, or only those of one tenant."""
        return self.store.list_worlds(tenant)

    # -- participants ---------------------------------------------------------------------

    def _add_participant(
        self, world_id: str, participant_id: str, kind: str, profile: dict[str, Any]
    ) -> ParticipantRecord:
        world = self.get_world(world_id)
        _check_id(f"{kind}_id", participant_id)
        if participant_id.lower() in RESERVED_SENDERS:
            raise InvalidInputError(
                f"{kind}_id", f"{participant_id!r} is a reserved sender name ({', '.join(RESERVED_SENDERS)})"
            )
        existing = self.store.get_participant(world.key, participant_id)
        if existing is not None:
            raise ConflictError(f"{existing.kind} {existing.id!r} already exists in world {world.id!r}")
        record = ParticipantRecord(world.key, participant_id, kind, datetime.now(UTC), profile)
        try:
            return self.store.add_participant(record)
        finally:
            # After the write: a roster read before it commits is then not cached.
            self._drop_caches(world.key.lower())

    def add_agent(self, world_id: str, agent_id: str, **settings: Any) -> AgentProfile:
        profile = _validate_profile(agent_id, settings)
        record = self._add_participant(world_id, agent_id, "agent", _profile_to_json(profile))
        return profile_from_record(record)

    def add_human(self, world_id: str, human_id: str) -> ParticipantRecord:
        return self._add_participant(world_id, human_id, "human", {})

    def get_agent(self, world_id: str, agent_id: str) -> AgentProfile:
        world = self.get_world(world_id)
        profile = self.roster(world.key).profiles.get(agent_id.lower()) if isinstance(agent_id, str) else None
        if profile is None:
            raise UnknownParticipantError(world.id, str(agent_id), "agent")
        return profile

    def _agent_in(self, world_id: str, agent_id: str) -> tuple[str, str]:
        """The stored (world key, agent id) for what a caller typed, in any case."""
        world = self.get_world(world_id)
        return world.key, self.get_agent(world.key, agent_id).id

    def participants(self, world_id: str) -> list[ParticipantRecord]:
        return list(self.roster(world_id).people)

    def recipients(self, world_id: str, message: Message) -> tuple[str, ...]:
        """The agents a stored message of the world (by key) was delivered to: every agent of
        its world but its author."""
        roster = self.roster(world_id)
        author = roster.by_key.get(message.sender.lower())
        return roster.recipients(author.id if author is not None and author.kind == "agent" else None)

    # -- posting --------------------------------------------------------------------------

    def _route(self, world: WorldRecord, roster: Roster, req: PostRequest) -> NewMessage:
        """Validate one post and work out its sender type, mentions and recipients."""
        if not isinstance(req.sender, str) or not req.sender.strip():
            raise InvalidInputError("sender", "must name who is posting (a participant, or system/world/human)")
        if not isinstance(req.content, str):
            raise InvalidInputError("content", "must be text")
        if not req.content.strip() and not (isinstance(req.metadata, Mapping) and req.metadata.get("tool_calls")):
            # Only an agent's message that carries tool calls may have no text.
            raise InvalidInputError("content", "must be non-empty text")
        if "\x00" in req.content:
            raise InvalidInputError("content", NUL_MESSAGE)
        limit = self.settings.max_message_chars
        if len(req.content) > limit:
            raise InvalidInputError("content", f"is {len(req.content)} characters; the limit is {limit}")
        if req.channel is not None and req.channel not in CHANNELS:
            raise InvalidInputError("channel", f"must be one of {', '.join(CHANNELS)}, got {req.channel!r}")
        if req.metadata is not None and not isinstance(req.metadata, Mapping):
            raise InvalidInputError("metadata", "must be an object")
        metadata = dict(req.metadata or {})
        # Checked here, not when read: a stored message must always be deliverable (spec §8).
        limits.check_json("metadata", metadata, limits.MAX_METADATA_CHARS)
        if req.parent_id is not None:
            _check_int("parent_id", req.parent_id, 1, MAX_MESSAGE_ID)
            parent = self.store.get_message(world.key, req.parent_id)
            if parent is None:
                raise InvalidInputError("parent_id", f"no message {req.parent_id} in world {world.id!r}")
            # A reply joins its parent's thread; the thread is named by its first message.
            metadata["thread_id"] = parent.metadata.get("thread_id", parent.id)
        if req.idempotency_key is not None and (not isinstance(req.idempotency_key, str) or not req.idempotency_key):
            raise InvalidInputError("idempotency_key", "must be a non-empty string")
        if req.idempotency_key is not None:
            limits.check_text("idempotency_key", req.idempotency_key, limits.MAX_IDEMPOTENCY_KEY)
        chat_id = _check_chat(req.chat_id)

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
            recipients=roster.recipients(author_agent),
            author_agent=author_agent,
            reset_turns=resets_turns(kind),
        )

    def post(self, world_id: str, request: PostRequest) -> Message:
        return self.post_many(world_id, [request])[0]

    def post_many(self, world_id: str, requests: Sequence[PostRequest]) -> list[Message]:
        """Post several messages in one transaction: all are stored, or none (if one is invalid)."""
        world, batch = self.prepare_posts(world_id, requests)
        return self.append_messages(world, batch)

    def append_messages(self, world_id: str, batch: Sequence[NewMessage]) -> list[Message]:
        """Store routed messages (from `prepare_posts`) in one transaction and let the search
        indexer know."""
        stored = self.store.append_messages(world_id, batch)
        self.long_term.written()
        with self._posted:
            self._posts += len(stored)
            self._posted.notify_all()
        return stored

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

    def prepare_posts(self, world_id: str, requests: Sequence[PostRequest]) -> tuple[str, list[NewMessage]]:
        """Validate and route posts without storing them: the world's key and the batch,
        ready for `store.append_messages` (a server groups batches into one transaction)."""
        world = self.get_world(world_id)
        roster = self.roster(world.key)
        return world.key, [self._route(world, roster, r) for r in requests]

    def import_messages(
        self,
        world_id: str,
        requests: Sequence[PostRequest],
        batch_size: int = IMPORT_BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> list[Message]:
        """Post many messages: all are validated first, so a bad one stores nothing; then they
        are stored in transactions of `batch_size`, reporting each batch to `progress`. They are
        history: delivered already read, so no agent answers them (they are in its memory)."""
        world = self.get_world(world_id)
        _check_int("batch_size", batch_size, 1)
        roster = self.roster(world.key)
        now = datetime.now(UTC)
        routed = [replace(self._route(world, roster, r), read_at=now) for r in requests]
        stored: list[Message] = []
        for start in range(0, len(routed), batch_size):
            chunk = routed[start : start + batch_size]
            stored.extend(self.append_messages(world.key, chunk))
            if progress is not None:
                progress(len(chunk))
        return stored

    def get_message(self, world_id: str, message_id: int) -> Message:
        world = self.get_world(world_id)
        message = self.store.get_message(world.key, message_id)
        if message is None:
            raise InvalidInputError("message_id", f"no message {message_id} in world {world.id!r}")
        return message

    def messages(
        self, world_id: str, chat_id: str | None = None, after: int = 0, limit: int = 100, any_chat: bool = False
    ) -> list[Message]:
        world = self.get_world(world_id)
        _check_int("after", after, 0, MAX_MESSAGE_ID)
        _check_int("limit", limit, 1, 1000)
        return self.store.list_messages(world.key, _check_chat(chat_id), after, limit, any_chat)

    # -- inbox and turns ------------------------------------------------------------------

    def inbox(
        self, world_id: str, agent_id: str, unread_only: bool = True, limit: int = 100, mark_read: bool = False
    ) -> list[tuple[Message, bool]]:
        world, agent = self._agent_in(world_id, agent_id)
        _check_int("limit", limit, 1, 1000)
        entries = self.store.inbox(world, agent, unread_only, limit)
        if mark_read and entries:
            self.store.mark_read(world, agent, [m.id for m, _ in entries], datetime.now(UTC))
        return entries

    def ack(self, world_id: str, agent_id: str, message_ids: Sequence[int]) -> int:
        world, agent = self._agent_in(world_id, agent_id)
        ids = [_check_int("ids", i, 1, MAX_MESSAGE_ID) for i in message_ids]
        return self.store.mark_read(world, agent, ids, datetime.now(UTC))

    def send(
        self,
        world_id: str,
        agent_id: str,
        content: str,
        chat_id: str | None = None,
        parent_id: int | None = None,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Message:
        """Post as the agent (its reply), threaded to `parent_id` when given."""
        world, agent = self._agent_in(world_id, agent_id)
        return self.post(world, PostRequest(agent, content, chat_id, None, parent_id, None, idempotency_key, metadata))

    def check(
        self,
        world_id: str,
        agent_id: str,
        *,
        limit: int = 10,
        mark_read: bool = False,
        include_context: bool = False,
        context_limit: int | None = None,
        session: str = DEFAULT_SESSION,
        chat_id: str | None = None,
        refresh: bool = False,
        context_only_with_mentions: bool = False,
    ) -> CheckResult:
        """The agent's new messages to answer, oldest first, and its context sent once (spec §6).

        Messages the agent is not addressed in need no answer: the check marks them read as it
        passes them (they stay in its memory). The others stay unread until `mark_read` or `ack`.
        Context is the agent's filtered memory of the chat (`chat_id`, else the chat of the
        newest mention); within a `session` only what was not sent before is sent again
        (`delta`), until `refresh` or the session's TTL.
        """
        world, agent_id = self._agent_in(world_id, agent_id)
        agent = self.get_agent(world, agent_id)
        _check_int("limit", limit, 1, 1000)
        depth = _check_int(
            "context_limit", self.settings.context_limit if context_limit is None else context_limit, 1, 100
        )
        limits.check_text("session", session, limits.MAX_SESSION, required=True)
        chat = _check_chat(chat_id)

        mentions: list[Message] = []
        passed = 0
        now = datetime.now(UTC)
        after = 0
        while len(mentions) < limit:
            unread = [m for m, _ in self.store.inbox(world, agent_id, True, INBOX_PAGE, after)]
            found, heard = split_unread(agent_id, unread, limit - len(mentions))
            mentions.extend(found)
            if heard:
                self.store.mark_read(world, agent_id, [m.id for m in heard], now)
                passed += len(heard)
            if len(unread) < INBOX_PAGE:
                break
            after = unread[-1].id
        if chat is None and chat_id is None and mentions:
            chat = mentions[-1].chat_id
        if not include_context or (context_only_with_mentions and not mentions):
            result = CheckResult(tuple(mentions), chat_id=chat, passed=passed)
        else:
            result = self._context_once(world, agent, mentions, chat, depth, session, refresh, now, passed)
        if mark_read and mentions:
            # Last, once the answer is built: a check that fails leaves its mentions unread.
            self.store.mark_read(world, agent_id, [m.id for m in mentions], now)
        return result

    def _context_once(
        self,
        world: str,
        agent: AgentProfile,
        mentions: Sequence[Message],
        chat: str | None,
        depth: int,
        session: str,
        refresh: bool,
        now: datetime,
        passed: int,
    ) -> CheckResult:
        state = self.store.get_context_session(world, agent.id, session, chat)
        ttl = timedelta(seconds=self.settings.context_session_ttl)
        full = refresh or state is None or now - state.refreshed_at > ttl
        floor = 0 if full or state is None else state.last_sent_id
        in_chat = [m.id for m in mentions if m.chat_id == chat]
        context, truncated = context_slice(
            agent,
            self.store.iter_memory(world, agent.id, chat),
            floor=floor,
            below=max(in_chat) if in_chat else None,
            exclude=set(in_chat),
            limit=depth,
        )
        newest = max([floor, *in_chat, *(m.id for m in context)])
        refreshed_at = now if full or state is None else state.refreshed_at
        if state is None or newest != state.last_sent_id or refreshed_at != state.refreshed_at:
            self.store.set_context_session(world, agent.id, session, chat, ContextSession(newest, refreshed_at))
        return CheckResult(tuple(mentions), tuple(context), truncated, not full, chat, passed)

    # -- an agent's private key-value memory ----------------------------------------------

    def remember(self, world_id: str, agent_id: str, key: str, value: Any, ttl: float | None = None) -> MemoryItem:
        """Keep `value` (any JSON value) under `key` for the agent alone; `ttl` seconds, or forever."""
        world, agent = self._agent_in(world_id, agent_id)
        _check_memory_key(key)
        limits.check_json("value", value, MAX_MEMORY_VALUE)
        now = datetime.now(UTC)
        expires = None
        if ttl is not None:
            if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl <= MAX_MEMORY_TTL:
                raise InvalidInputError("ttl", f"must be a number of seconds between 0 and {MAX_MEMORY_TTL}")
            expires = now + timedelta(seconds=ttl)
        item = MemoryItem(key, value, now, expires)
        self.store.set_memory(world, agent, item)
        return item

    def recall_memory(self, world_id: str, agent_id: str, key: str) -> MemoryItem:
        """The agent's value under `key`; NotFoundError when missing or expired."""
        world, agent = self._agent_in(world_id, agent_id)
        _check_memory_key(key)
        item = self.store.get_memory(world, agent, key, datetime.now(UTC))
        if item is None:
            raise NotFoundError(f"agent {agent!r} has no memory under {key!r} (never set, forgotten or expired)")
        return item

    def forget(self, world_id: str, agent_id: str, key: str) -> bool:
        """Remove the agent's value under `key`; whether there was one."""
        world, agent = self._agent_in(world_id, agent_id)
        _check_memory_key(key)
        return self.store.delete_memory(world, agent, key, datetime.now(UTC))

    def memories(self, world_id: str, agent_id: str) -> list[MemoryItem]:
        world, agent = self._agent_in(world_id, agent_id)
        return self.store.list_memory(world, agent, datetime.now(UTC))

    def turn_limit(self, world: WorldRecord) -> int:
        return world.turn_limit or self.settings.turn_limit

    def decide(self, world_id: str, agent_id: str, message_id: int) -> Decision:
        """Would the agent answer this message now, given its turn counter? Resets it if due."""
        world = self.get_world(world_id)
        agent = self.get_agent(world.key, agent_id)
        message = self.get_message(world.key, message_id)
        count = self.store.turn_count(world.key, agent.id)
        decision = decide(agent.id, message, count, self.turn_limit(world))
        if decision.turn_count != count:
            self.store.set_turn_count(world.key, agent.id, decision.turn_count)
        return decision

    def record_llm_call(self, world_id: str, agent_id: str) -> int:
        """Count one LLM call of the agent against its turn limit; returns the new count."""
        return self.store.increment_turns(*self._agent_in(world_id, agent_id))

    def turn_count(self, world_id: str, agent_id: str) -> int:
        return self.store.turn_count(*self._agent_in(world_id, agent_id))

    # -- observations ---------------------------------------------------------------------

    def observe(self, world_id: str, agent_id: str, observation: obs.Observation | Mapping[str, Any]) -> int:
        world, agent = self._agent_in(world_id, agent_id)
        parsed = observation if isinstance(observation, obs.Observation) else obs.observation_from_dict(observation)
        data = obs.observation_to_dict(parsed)
        _check_observation("observation", data, ("note",))
        return self.store.add_observation(world, agent, "observation", parsed.time, data, datetime.now(UTC))

    def act(self, world_id: str, agent_id: str, action: obs.Action | Mapping[str, Any]) -> int:
        world, agent = self._agent_in(world_id, agent_id)
        parsed = action if isinstance(action, obs.Action) else obs.action_from_dict(action)
        data = asdict(parsed)
        _check_observation("action", data, ("kind", "target", "utterance", "description"))
        return self.store.add_observation(world, agent, "action", parsed.time, data, datetime.now(UTC))

    def _observations_block(
        self, world_id: str, agent_id: str, current: obs.Observation | Mapping[str, Any] | None
    ) -> ContextBlock:
        cap = self.settings.observation_cap
        past = _readable(
            obs.observation_from_dict, self.store.recent_observations(world_id, agent_id, "observation", cap)
        )
        actions = _readable(obs.action_from_dict, self.store.recent_observations(world_id, agent_id, "action", cap))
        now = None if current is None else (
            current if isinstance(current, obs.Observation) else obs.observation_from_dict(current)
        )  # fmt: skip
        return ContextBlock("observations", obs.render_block(past, actions, now))

    # -- context --------------------------------------------------------------------------

    def build_context(
        self,
        world_id: str,
        agent_id: str,
        chat_id: str | None = None,
        *,
        max_tokens: int | None = None,
        history_limit: int | None = None,
        message_id: int | None = None,
        channel: str | None = None,
        observation: obs.Observation | Mapping[str, Any] | None = None,
        blocks: Sequence[ContextBlock] = (),
        summarizer: Summarizer | None = None,
    ) -> Context:
        """The context the agent's next model call receives in a chat, with its report."""
        world = self.get_world(world_id)
        agent = self.get_agent(world.key, agent_id)
        chat = _check_chat(chat_id)
        if channel is not None and channel not in CHANNELS:
            raise InvalidInputError("channel", f"must be one of {', '.join(CHANNELS)}, got {channel!r}")
        model = agent.model or self.settings.model
        budget = max_tokens if max_tokens is not None else agent.max_tokens
        if budget is None:
            budget = context_window(model) - self.settings.reply_reserve
        _check_int("max_tokens", budget, 1)
        depth = history_limit if history_limit is not None else agent.history_limit
        depth = _check_int(
            "history_limit", self.settings.history_limit if depth is None else depth, 0, MAX_HISTORY_LIMIT
        )
        if message_id is not None:
            _check_int("message_id", message_id, 1, MAX_MESSAGE_ID)
            self.get_message(world.key, message_id)

        counts = self.store.memory_counts(world.key, agent.id)
        counter = TokenCounter(encoding_for_model(model))
        recent = list(islice(self.store.iter_memory(world.key, agent.id, chat), RECENT_SCAN))
        long_term = self.long_term.context_blocks(world, agent.id, recent, counter)
        request = ContextRequest(
            agent=agent,
            chat_id=chat,
            system_prompt=build_system_prompt(agent, channel),
            memory=self.store.iter_memory(world.key, agent.id, chat),
            history_limit=depth,
            incoming_limit=max(self.settings.incoming_limit, 1),
            max_tokens=budget,
            counter=counter,
            chat_memory_total=counts.get(chat, 0),
            other_chat_total=sum(n for c, n in counts.items() if c != chat),
            blocks=[*long_term, *blocks, self._observations_block(world.key, agent.id, observation)],
            trigger_id=message_id,
            summarizer=summarizer if summarizer is not None else self.summarizer,
            compress_above=self.settings.compress_above,
            compress_keep_recent=self.settings.compress_keep_recent,
        )
        return build_context(request)

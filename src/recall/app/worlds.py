"""Worlds and their participants (agents with their profiles, humans), read through a cache.

Worlds and participants are read on every call but change rarely: they are cached, dropped on
our own writes and whenever the store says another process wrote.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from datetime import UTC, datetime
from typing import Any, TypeVar

from recall import limits
from recall.app.validation import (
    MAX_CONTEXT_TOKENS,
    MAX_HISTORY_LIMIT,
    check_channel,
    check_id,
    check_int,
    check_recalled_setting,
    could_be_stored,
)
from recall.core.models import AgentProfile, ContextFilter, Message
from recall.core.routing import RESERVED_SENDERS, private_owner
from recall.errors import (
    AmbiguousWorldError,
    ConflictError,
    InvalidInputError,
    UnknownParticipantError,
    UnknownWorldError,
)
from recall.store.base import Store
from recall.store.records import ParticipantRecord, WorldRecord
from recall.suggest import close_matches

_V = TypeVar("_V")
_PROFILE_FIELDS = {f.name for f in fields(AgentProfile)} - {"id"}
_LIST_FIELDS = ("goals", "constraints", "guidelines")
#: The agent settings of its recalled past (spec §3; `Settings.recalled_*` are the defaults).
RECALLED_SETTINGS = (
    "recalled_max_tokens",
    "recalled_cutoff",
    "recalled_limit",
    "recalled_min_similarity",
    "recalled_scope",
)


def profile_from_record(record: ParticipantRecord) -> AgentProfile:
    data = dict(record.profile)
    for name in _LIST_FIELDS:
        data[name] = tuple(data.get(name) or ())
    data["context_filter"] = ContextFilter(data.get("context_filter") or ContextFilter.ADDRESSED.value)
    return AgentProfile(id=record.id, **{k: v for k, v in data.items() if k in _PROFILE_FIELDS})


def profile_settings(profile: AgentProfile) -> dict[str, Any]:
    """An agent's settings as stored and shown (JSON types, without its id)."""
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
    values["channel"] = check_channel(settings.get("channel"))
    if settings.get("history_limit") is not None:
        values["history_limit"] = check_int("history_limit", settings["history_limit"], 0, MAX_HISTORY_LIMIT)
    if settings.get("max_tokens") is not None:
        values["max_tokens"] = check_int("max_tokens", settings["max_tokens"], 1, MAX_CONTEXT_TOKENS)
    for name in RECALLED_SETTINGS:
        if settings.get(name) is not None:
            values[name] = check_recalled_setting(name, settings[name])
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


class Worlds:
    """Create, find and list worlds; register and find their participants."""

    def __init__(self, store: Store) -> None:
        self.store = store
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

    # -- the caches -----------------------------------------------------------------------

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
        check_id("world_id", world_id)
        if turn_limit is not None:
            check_int("turn_limit", turn_limit, 1)
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
        """The world whose key (`WorldRecord.key`) is `world_id`. Every per-world use case takes
        a world by its key; callers find it first with `resolve_world` (through the gate)."""
        if not could_be_stored(world_id):
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
        if not could_be_stored(world_id):
            raise UnknownWorldError(str(world_id))
        self._drop_stale_caches()
        key = self._world_keys.get((tenant, world_id.lower()))
        if key is not None:
            return self._world_by_key(key)
        generation = self._generation
        found = self.store.find_worlds(world_id, tenant)
        if not found:
            # Close ids among the caller's own worlds only: another tenant's are never named.
            known = [w.id for w in self.store.list_worlds(tenant)]
            raise UnknownWorldError(world_id, close_matches(world_id, known))
        if len(found) > 1:
            raise AmbiguousWorldError(world_id, len(found))
        world = found[0]
        with self._cache_lock:
            if generation == self._generation:
                self._worlds[world.key.lower()] = world
                self._world_keys[(tenant, world_id.lower())] = world.key
        return world

    def list_worlds(self, tenant: str | None = None) -> list[WorldRecord]:
        """Every world, or only those of one tenant."""
        return self.store.list_worlds(tenant)

    # -- participants ---------------------------------------------------------------------

    def roster(self, world_id: str) -> Roster:
        """The world's participants (a cached read)."""
        world = self.get_world(world_id)
        roster = self._rosters.get(world.key.lower())
        if roster is None:
            generation = self._generation
            people = self.store.list_participants(world.key)
            roster = self._cache(self._rosters, world.key.lower(), Roster(people), generation)
        return roster

    def _add_participant(
        self, world_id: str, participant_id: str, kind: str, profile: dict[str, Any], exist_ok: bool = False
    ) -> ParticipantRecord:
        world = self.get_world(world_id)
        check_id(f"{kind}_id", participant_id)
        if participant_id.lower() in RESERVED_SENDERS:
            raise InvalidInputError(
                f"{kind}_id", f"{participant_id!r} is a reserved sender name ({', '.join(RESERVED_SENDERS)})"
            )
        existing = self.store.get_participant(world.key, participant_id)
        if existing is not None:
            if exist_ok and existing.kind == kind:
                return existing  # as it is: `update_agent` changes a profile
            taken = f"{existing.kind} {existing.id!r} already exists in world {world.id!r}"
            if existing.kind != kind:
                raise ConflictError(f"{taken}: a {kind} needs another id")
            # The usual cause is a setup script run a second time: say how it runs again.
            raise ConflictError(
                f"{taken}: pass exist_ok=True to get the one there unchanged "
                "(`--exist-ok` in the CLI, `?exist_ok=true` over HTTP)"
            )
        record = ParticipantRecord(world.key, participant_id, kind, datetime.now(UTC), profile)
        try:
            return self.store.add_participant(record)
        finally:
            # After the write: a roster read before it commits is then not cached.
            self._drop_caches(world.key.lower())

    def add_agent(self, world_id: str, agent_id: str, *, exist_ok: bool = False, **settings: Any) -> AgentProfile:
        """Register an agent. With `exist_ok`, an agent of that id already there is returned as it
        is (its settings unchanged) instead of raising ConflictError; a human of that id still
        conflicts."""
        profile = _validate_profile(agent_id, settings)
        record = self._add_participant(world_id, agent_id, "agent", profile_settings(profile), exist_ok)
        return profile_from_record(record)

    def add_human(self, world_id: str, human_id: str, *, exist_ok: bool = False) -> ParticipantRecord:
        return self._add_participant(world_id, human_id, "human", {}, exist_ok)

    def update_agent(self, world_id: str, agent_id: str, **changes: Any) -> AgentProfile:
        """Change some of an agent's settings (the rest stay); the new profile. A setting given
        as None goes back to its default."""
        world = self.get_world(world_id)
        current = self.get_agent(world.key, agent_id)
        profile = _validate_profile(current.id, {**profile_settings(current), **changes})
        try:
            if not self.store.set_profile(world.key, current.id, profile_settings(profile)):
                raise UnknownParticipantError(world.id, current.id, "agent")
        finally:
            self._drop_caches(world.key.lower())
        return profile

    def get_agent(self, world_id: str, agent_id: str) -> AgentProfile:
        world = self.get_world(world_id)
        profile = self.roster(world.key).profiles.get(agent_id.lower()) if isinstance(agent_id, str) else None
        if profile is None:
            agents = self.roster(world.key).agents
            raise UnknownParticipantError(world.id, str(agent_id), "agent", close_matches(str(agent_id), agents))
        return profile

    def agent_in(self, world_id: str, agent_id: str) -> tuple[str, str]:
        """The stored (world key, agent id) for what a caller typed, in any case."""
        world = self.get_world(world_id)
        return world.key, self.get_agent(world.key, agent_id).id

    def agents_in(self, world_id: str, agent_ids: Sequence[str]) -> tuple[str, list[str | UnknownParticipantError]]:
        """`agent_in` for many agents of one world, from one look at its roster: the world's key
        and each agent's stored id, or why it is unknown."""
        world = self.get_world(world_id)
        profiles = self.roster(world.key).profiles
        found: list[str | UnknownParticipantError] = []
        for agent_id in agent_ids:
            profile = profiles.get(agent_id.lower()) if isinstance(agent_id, str) else None
            found.append(profile.id if profile else UnknownParticipantError(world.id, str(agent_id), "agent"))
        return world.key, found

    def participants(self, world_id: str) -> list[ParticipantRecord]:
        return list(self.roster(world_id).people)

    def agents(self, world_id: str) -> list[AgentProfile]:
        """The world's agents' profiles, by id."""
        roster = self.roster(world_id)
        return [roster.profiles[agent.lower()] for agent in roster.agents]

    def humans(self, world_id: str) -> list[ParticipantRecord]:
        """The world's humans, by id."""
        return [p for p in self.roster(world_id).people if p.kind == "human"]

    def recipients(self, world_id: str, message: Message) -> tuple[str, ...]:
        """The agents a stored message of the world (by key) was delivered to: every agent of
        its world but its author; the one it is for, when it is for one alone."""
        roster = self.roster(world_id)
        owner = private_owner(message.metadata)
        if owner is not None:
            return tuple(a for a in roster.agents if a.lower() == owner)
        author = roster.by_key.get(message.sender.lower())
        return roster.recipients(author.id if author is not None and author.kind == "agent" else None)

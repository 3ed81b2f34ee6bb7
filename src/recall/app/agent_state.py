"""What recall keeps per agent besides its messages: its notes (the private key-value entries:
remember, recall, forget), its turn counter and LLM calls, and its observations and actions
with the context block they render to."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from recall import limits
from recall.app.posting import Posting
from recall.app.worlds import Worlds
from recall.core import observations as obs
from recall.core.context_parts import ContextBlock
from recall.core.routing import Decision, decide
from recall.errors import InvalidInputError, NotFoundError
from recall.settings import Settings
from recall.store.base import Store
from recall.store.records import Note, WorldRecord

MAX_MEMORY_KEY = limits.MAX_MEMORY_KEY
MAX_MEMORY_VALUE = limits.MAX_MEMORY_VALUE
MAX_MEMORY_TTL = 10 * 365 * 24 * 3600
_T = TypeVar("_T")


def _check_memory_key(key: object) -> str:
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_MEMORY_KEY:
        raise InvalidInputError("key", f"must be non-empty text of at most {MAX_MEMORY_KEY} characters")
    return limits.check_text("key", key, MAX_MEMORY_KEY)


def _check_observation(name: str, data: Mapping[str, Any], texts: Sequence[str]) -> None:
    """An observation's or action's JSON form: finite numbers, no NUL, its texts and the whole
    within their caps."""
    for field in texts:
        if data.get(field) is not None:
            limits.check_text(field, data[field], limits.MAX_OBSERVATION_TEXT)
    limits.check_json_fields(name, data, limits.MAX_OBSERVATION_CHARS)


def _readable(parse: Callable[[Mapping[str, Any]], _T], stored: Sequence[Mapping[str, Any]]) -> list[_T]:
    """The stored rows `parse` accepts: one an older version stored unchecked (a number that was
    NaN reads back as null) is left out of the context rather than failing its build."""
    readable: list[_T] = []
    for data in stored:
        try:
            readable.append(parse(data))
        except InvalidInputError:
            continue
    return readable


@dataclass(frozen=True, eq=False)
class AgentState:
    """An agent's notes, turns and observations."""

    store: Store
    settings: Settings
    worlds: Worlds
    posting: Posting

    # -- notes: the agent's private key-value entries -------------------------------------

    def remember(self, world_id: str, agent_id: str, key: str, value: Any, ttl: float | None = None) -> Note:
        """Keep `value` (any JSON value) under `key` for the agent alone; `ttl` seconds, or forever."""
        world, agent = self.worlds.agent_in(world_id, agent_id)
        _check_memory_key(key)
        limits.check_json("value", value, MAX_MEMORY_VALUE)
        now = datetime.now(UTC)
        expires = None
        if ttl is not None:
            if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl <= MAX_MEMORY_TTL:
                raise InvalidInputError("ttl", f"must be a number of seconds between 0 and {MAX_MEMORY_TTL}")
            expires = now + timedelta(seconds=ttl)
        item = Note(key, value, now, expires)
        self.store.set_note(world, agent, item)
        return item

    def recall_note(self, world_id: str, agent_id: str, key: str) -> Note:
        """The agent's value under `key`; NotFoundError when missing or expired."""
        world, agent = self.worlds.agent_in(world_id, agent_id)
        _check_memory_key(key)
        item = self.store.get_note(world, agent, key, datetime.now(UTC))
        if item is None:
            raise NotFoundError(f"agent {agent!r} has no memory under {key!r} (never set, forgotten or expired)")
        return item

    def forget(self, world_id: str, agent_id: str, key: str) -> bool:
        """Remove the agent's value under `key`; whether there was one."""
        world, agent = self.worlds.agent_in(world_id, agent_id)
        _check_memory_key(key)
        return self.store.delete_note(world, agent, key, datetime.now(UTC))

    def notes(self, world_id: str, agent_id: str) -> list[Note]:
        """Every note of the agent (its key-value entries not expired)."""
        world, agent = self.worlds.agent_in(world_id, agent_id)
        return self.store.list_memory(world, agent, datetime.now(UTC))

    # -- turns ----------------------------------------------------------------------------

    def turn_limit(self, world: WorldRecord) -> int:
        return world.turn_limit or self.settings.turn_limit

    def decide(self, world_id: str, agent_id: str, message_id: int) -> Decision:
        """Would the agent answer this message now, given its turn counter? Resets it if due."""
        world = self.worlds.get_world(world_id)
        agent = self.worlds.get_agent(world.key, agent_id)
        message = self.posting.get_message(world.key, message_id)
        count = self.store.turn_count(world.key, agent.id)
        decision = decide(agent.id, message, count, self.turn_limit(world))
        if decision.turn_count != count:
            self.store.set_turn_count(world.key, agent.id, decision.turn_count)
        return decision

    def record_llm_call(self, world_id: str, agent_id: str) -> int:
        """Count one LLM call of the agent against its turn limit; returns the new count."""
        return self.store.increment_turns(*self.worlds.agent_in(world_id, agent_id))

    def turn_count(self, world_id: str, agent_id: str) -> int:
        return self.store.turn_count(*self.worlds.agent_in(world_id, agent_id))

    # -- observations and actions ---------------------------------------------------------

    def observe(self, world_id: str, agent_id: str, observation: obs.Observation | Mapping[str, Any]) -> int:
        world, agent = self.worlds.agent_in(world_id, agent_id)
        parsed = observation if isinstance(observation, obs.Observation) else obs.observation_from_dict(observation)
        data = obs.observation_to_dict(parsed)
        _check_observation("observation", data, ("note",))
        return self.store.add_observation(world, agent, "observation", parsed.time, data, datetime.now(UTC))

    def act(self, world_id: str, agent_id: str, action: obs.Action | Mapping[str, Any]) -> int:
        world, agent = self.worlds.agent_in(world_id, agent_id)
        parsed = action if isinstance(action, obs.Action) else obs.action_from_dict(action)
        data = asdict(parsed)
        _check_observation("action", data, ("kind", "target", "utterance", "description"))
        return self.store.add_observation(world, agent, "action", parsed.time, data, datetime.now(UTC))

    def observations_block(
        self, world_id: str, agent_id: str, current: obs.Observation | Mapping[str, Any] | None
    ) -> ContextBlock:
        """The agent's recent observations and actions, and the current one, for its context."""
        cap = self.settings.observation_cap
        past = _readable(
            obs.observation_from_dict, self.store.recent_observations(world_id, agent_id, "observation", cap)
        )
        actions = _readable(obs.action_from_dict, self.store.recent_observations(world_id, agent_id, "action", cap))
        now = None if current is None else (
            current if isinstance(current, obs.Observation) else obs.observation_from_dict(current)
        )  # fmt: skip
        return ContextBlock("observations", obs.render_block(past, actions, now))

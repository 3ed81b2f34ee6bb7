"""What an agent is told to remember: long-term memories, so that they reach its context.

The MCP tools `remember`, `recall` and `forget` (`server/mcp_memory.py`) work on the agent's
long-term memories (`app/memories.py`), which every context of the agent shows in its long-term
block when they are relevant to the conversation, or among its most important. They used to keep
"notes" (the agent's private key-value entries, `app/agent_state.py`), which no context shows,
so a model told "remember that Maria is a VIP" stored it where it never saw it again.

The older calls still work: `remember` with `key` and `value` keeps a memory under that key (its
metadata holds `key`, and `value` as given), written over by the next `remember` of that key;
`recall` and `forget` with `key` find it, and still read and remove a note an older recall kept
under that key, so nothing stored before is lost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recall import limits
from recall.app.agent_state import AgentState
from recall.app.memories import Memories
from recall.errors import InvalidInputError, NotFoundError, UnknownMemoryError
from recall.store.base import Store
from recall.store.records import Memory

#: The metadata keys of a memory kept under a key.
KEY, VALUE = "key", "value"
#: The agent's own memories a look-up by key reads at most (the most important first).
MAX_KEYED_SCAN = 10_000
#: Told apart from a `value` of None (JSON null), which is a value.
NO_VALUE: Any = object()


def _as_text(key: str, value: Any) -> str:
    """The text a context shows of a value kept under a key: `key: value`."""
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = f"{key}: {shown}"
    if len(text) > limits.MAX_NOTE_CHARS:
        raise InvalidInputError(
            "value", f"as text at most {limits.MAX_NOTE_CHARS:,} characters with its key, got {len(text):,}"
        )
    return text


def _keyed_view(memory: Memory) -> dict[str, Any]:
    """A memory kept under a key, as the older calls answered (`key`, `value`) and as a memory."""
    value = memory.metadata.get(VALUE, memory.content)
    return {**memory.to_dict(), "key": memory.metadata.get(KEY), "value": value}


@dataclass(frozen=True, eq=False)
class Remembering:
    """Remember, recall and forget an agent's long-term memories (and read its older notes)."""

    store: Store
    memories: Memories
    notes: AgentState

    def remember(
        self,
        world_key: str,
        agent_id: str,
        content: str | None,
        *,
        importance: int = 5,
        shared: bool = False,
        ttl: float | None = None,
        expires_at: datetime | None = None,
        key: str | None = None,
        value: Any = NO_VALUE,
    ) -> dict[str, Any]:
        """A long-term memory of `content`: the agent's own, or with `shared` every agent's of
        the world. With `key` (and `value`, the older form) it is kept under that key: the
        agent's memory already there is written over in place."""
        if key is None:
            if value is not NO_VALUE:
                raise InvalidInputError("key", "a value is kept under a key: give key, or give content alone")
            if content is None:
                raise InvalidInputError("content", "say what to remember")
            return self.memories.add_memory(
                world_key,
                content,
                importance=importance,
                agent=None if shared else agent_id,
                ttl=ttl,
                expires_at=expires_at,
            ).to_dict()
        key = limits.check_text(KEY, key, limits.MAX_MEMORY_KEY, required=True)
        if shared:
            raise InvalidInputError("shared", "a memory kept under a key is the agent's own: leave out shared or key")
        metadata: dict[str, Any] = {KEY: key}
        if value is not NO_VALUE:
            limits.check_json(VALUE, value, limits.MAX_MEMORY_VALUE)
            metadata[VALUE] = value
        if content is None:
            if value is NO_VALUE:
                raise InvalidInputError("content", "say what to remember (or give the value to keep under the key)")
            content = _as_text(key, value)
        kept = next(iter(self._keyed(world_key, agent_id, key)), None)
        if kept is None:
            memory = self.memories.add_memory(
                world_key,
                content,
                importance=importance,
                agent=agent_id,
                metadata=metadata,
                ttl=ttl,
                expires_at=expires_at,
            )
        else:
            changes: dict[str, Any] = {"content": content, "importance": importance, "metadata": metadata}
            if ttl is not None or expires_at is not None:
                changes.update({"ttl": ttl} if ttl is not None else {"expires_at": expires_at})
            else:
                changes["expires_at"] = None  # as a note written over: kept until forgotten
            memory = self.memories.update_memory(world_key, kept.id, changes, agent=agent_id)
        return _keyed_view(memory)

    def recall_key(self, world_key: str, agent_id: str, key: str) -> dict[str, Any]:
        """The agent's memory kept under `key`, else the note an older recall kept under it;
        NotFoundError when there is neither."""
        key = limits.check_text(KEY, key, limits.MAX_MEMORY_KEY, required=True)
        for kept in self._keyed(world_key, agent_id, key):
            return _keyed_view(kept)
        try:
            return self.notes.recall_note(world_key, agent_id, key).to_dict()
        except NotFoundError:
            raise NotFoundError(
                f"agent {agent_id!r} has no memory under {key!r} (never set, forgotten or expired)"
            ) from None

    def forget_key(self, world_key: str, agent_id: str, key: str) -> bool:
        """Delete the agent's memory kept under `key` and any older note under it; whether
        there was either."""
        key = limits.check_text(KEY, key, limits.MAX_MEMORY_KEY, required=True)
        gone = [self.forget_id(world_key, agent_id, kept.id) for kept in self._keyed(world_key, agent_id, key)]
        return self.notes.forget(world_key, agent_id, key) or any(gone)

    def forget_id(self, world_key: str, agent_id: str, memory_id: int) -> bool:
        """Delete one of the agent's own memories; False when it has none of that id (a shared
        one is a PermissionDeniedError: an agent deletes only its own)."""
        try:
            self.memories.delete_memory(world_key, memory_id, agent=agent_id)
        except UnknownMemoryError:
            return False
        return True

    def _keyed(self, world_key: str, agent_id: str, key: str) -> list[Memory]:
        """The agent's own memories kept under `key`, newest written first (one, unless two
        calls kept the same key at once)."""
        owner = self.memories.worlds.get_agent(world_key, agent_id).id
        now = self.memories.purge_world(world_key)
        own = self.store.list_memories(world_key, [owner], 1, MAX_KEYED_SCAN, now=now)
        found = [m for m in own if m.metadata.get(KEY) == key]
        return sorted(found, key=lambda m: (m.updated_at, m.id), reverse=True)

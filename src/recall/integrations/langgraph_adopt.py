"""The adoption of the items an older recall wrote for a LangGraph store: before keyed memories,
an item's memory had its address (namespace and key) and its times in its metadata only.

`RecallStore` (`langgraph.py`) adopts them once, when it first opens on a world and owner: each
is written again as a keyed memory at its address (so every operation finds it through the
index) and the old memory deleted. Kept apart from the store's operations, which read keyed
items only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from recall.integrations.langgraph_items import META, StoredItem, parse_item
from recall.store.base import Store
from recall.store.records import Memory

#: Items written before keyed memories, adopted per read when a store first opens on them.
_ADOPT_BATCH = 1000


def _unkeyed(memory: Memory) -> StoredItem | None:
    """The item a memory an older recall wrote holds, with its times from the metadata (the
    memory's own are those of its last write)."""
    stored = parse_item(memory)
    data = memory.metadata.get(META)
    if stored is None or not isinstance(data, dict):
        return None
    try:
        created = datetime.fromisoformat(data["created_at"])
        updated = datetime.fromisoformat(data["updated_at"])
    except (KeyError, TypeError, ValueError):
        return None
    return replace(stored, created_at=created, updated_at=updated)


def adopt(
    store: Store,
    world_key: str,
    owner: str,
    write: Callable[[Sequence[tuple[StoredItem, str]]], object],
    delete: Callable[[int], None],
) -> None:
    """Give `owner`'s items an older recall wrote (without an address) theirs: each written again
    at its address by `write` (with its memory's text to search), oldest first (so the newest
    copy of an item wins), and the old memory deleted by `delete`. Expired ones are only deleted."""
    while batch := store.unkeyed_memories(world_key, owner, _ADOPT_BATCH):
        parsed = [(_unkeyed(memory), memory) for memory in batch]
        now = datetime.now(UTC)
        write([(s, m.content) for s, m in parsed if s is not None and not s.expired(now)])
        for memory in batch:
            delete(memory.id)

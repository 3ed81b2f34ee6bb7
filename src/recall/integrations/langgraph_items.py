"""A LangGraph store's item as recall keeps it: one keyed memory of type `langgraph` per item,
at an address made of its namespace and key, whose metadata holds the item whole.

`RecallStore` (`langgraph.py`) writes items as memories and reads them back through this one
record (`StoredItem`), so what a memory holds and what LangGraph is given of it (`Item`,
`SearchItem`) are decided in one place. The metadata has the item (namespace, key, the JSON value
as given, whether it is searched, its TTL and expiry) under `META`, and the keys recall's search
filters a query search on (`langgraph_filters.search_keys`); the item's times are the memory's own.
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recall.extras import require

require("langgraph")  # before the framework loads: one line naming the extra

from langgraph.store.base import Item, SearchItem

from recall.integrations.langgraph_filters import search_keys
from recall.store.records import NAMESPACE_SEPARATOR, Address, Memory

#: The type of the memories that hold a store's items (other memories of the world are left alone).
MEMORY_TYPE = "langgraph"
#: The metadata field holding the item.
META = "langgraph"


@dataclass(frozen=True)
class StoredItem:
    """One item as stored: the memory that holds it and what it holds."""

    memory_id: int
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    indexed: bool
    #: Minutes to live after the last write (or read with refresh), or None.
    ttl: float | None
    expires_at: datetime | None

    def item(self) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def search_item(self, score: float | None = None) -> SearchItem:
        return SearchItem(self.namespace, self.key, self.value, self.created_at, self.updated_at, score)

    def address(self) -> Address:
        return item_address(self.namespace, self.key)

    def metadata(self, owner: str) -> dict[str, Any]:
        return {
            **search_keys(owner, self.namespace, self.value, self.indexed),
            META: {
                "namespace": list(self.namespace),
                "key": self.key,
                "value": self.value,
                "index": self.indexed,
                "ttl": self.ttl,
                "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
            },
        }

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def parse_item(memory: Memory) -> StoredItem | None:
    """The item a memory holds, or None for a memory that is not a store item. The memory's own
    created_at and updated_at are the item's (the store keeps its created_at when it is written
    over)."""
    data = memory.metadata.get(META) if memory.type == MEMORY_TYPE else None
    if not isinstance(data, dict):
        return None
    try:
        namespace = tuple(data["namespace"])
        key = data["key"]
        value = data["value"]
        expires = None if data.get("expires_at") is None else datetime.fromisoformat(data["expires_at"])
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(key, str) or not isinstance(value, dict) or not all(isinstance(p, str) for p in namespace):
        return None
    ttl = data.get("ttl")
    return StoredItem(
        memory.id,
        namespace,
        key,
        value,
        memory.created_at,
        memory.updated_at,
        data.get("index") is not False,
        float(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) else None,
        expires,
    )


def item_address(namespace: Sequence[str], key: str) -> Address:
    """The address of the memory that holds the item at (namespace, key)."""
    return Address(NAMESPACE_SEPARATOR.join(namespace), key)

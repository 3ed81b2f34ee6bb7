"""recall as a LangGraph store: `RecallStore`, a `langgraph.store.base.BaseStore`.

```python
from langgraph.graph import StateGraph
from recall import Recall
from recall.integrations.langgraph import RecallStore

store = RecallStore(Recall("recall.db"), world="support", create=True)
graph = StateGraph(State).add_node(...).compile(store=store)
store.put(("users", "maria"), "tea", {"memory": "Drinks only green tea"})
store.search(("users",), query="what does she drink?")   # recall's hybrid search
```

Every item is a long-term memory of the store's world (type `langgraph`): shared by the world's
agents, or private to `agent` when one is named. The memory's text is what is searched: the
item's value rendered as `field: value` lines (or the fields `index` names: a list of
LangGraph's JSON paths, or LangGraph's `IndexConfig`, whose `fields` are used; recall embeds
with its own model, chosen for the whole store by `Settings(embeddings=...)`, so a `dims` or
`embed` of another model is refused); its metadata holds
the item itself (namespace, key, the JSON value as given, TTL; its times are the memory's own
created_at and updated_at), so nothing is lost. A put writes the item's memory over in place (one per item: a keyed memory);
a delete deletes the memory, so recall's search no longer finds it. With importance 5 or more (the
default is 5) the items are also among the relevant memories of the agents' recall contexts.

A search with `query` ranks with recall's search (`World.search`, or `Agent.search` for an
agent's store; hybrid: BM25 and embeddings) over the items that pass the namespace prefix and
`filter`, and each `SearchItem.score` is recall's score. Without a query, items come newest
update first, with no score. TTLs are kept: an item expires `ttl` minutes after it was last
written (or read, when `refresh_ttl`), is never returned after that, and is deleted by the
next operation that comes across it. The expiry is also its memory's own (`expires_at`), so
recall's contexts and searches never show an expired item either, and the background sweep of
expired memories deletes it as well.

Every operation finds items through indexes, never by reading them all: an item is a keyed
memory (`store/keyed.py`) at its namespace and key, so `get`, `put` and `delete` are one look-up
each; a namespace prefix is a range of that index; a listing without a query reads newest write
first, a page at a time, and stops once its page is full; `list_namespaces` steps down the
index one namespace at a time; a query search asks recall's search for the store's own items
under the prefix (the owner, the prefix's labels, whether the item is indexed and the filter's
text values are keys of the memory's metadata, `langgraph:*`, which the search index filters on
before it ranks). Items an older recall wrote (without an address) are adopted when a store first
opens on them.

This module is the store's operations; beside it are what an item is as a memory
(`langgraph_items.py`), its filters and what recall's search is asked of them
(`langgraph_filters.py`), what of an item is searched (`langgraph_index.py`), and the adoption
of an older recall's items (`langgraph_adopt.py`).
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from recall.extras import require

require("langgraph")  # before the framework loads: one line naming the extra

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from recall.api import Agent, Recall, World
from recall.app.memories import KeyedWrite
from recall.app.search import SearchResult, check_min_score
from recall.errors import UnknownMemoryError
from recall.integrations._common import ensure_agent, resolve_world
from recall.integrations.langgraph_adopt import adopt
from recall.integrations.langgraph_filters import check_filter, filter_matches, namespace_matches, search_conditions
from recall.integrations.langgraph_index import index_fields, search_text
from recall.integrations.langgraph_items import MEMORY_TYPE, META, StoredItem, item_address, parse_item
from recall.limits import MAX_NOTE_CHARS
from recall.store.base import Store
from recall.store.records import NAMESPACE_SEPARATOR, Memory

#: What users import from here (the store, and what its memories are told apart by).
__all__ = ["MEMORY_TYPE", "META", "RecallStore"]

#: Items a listing without a query reads at least per page (it reads on until its page is full).
_PAGE = 64
#: recall's search returns at most this many hits per call.
_MAX_K = 1000


def _check_namespace(namespace: tuple[str, ...], *, writing: bool = False) -> None:
    """LangGraph's rules for namespace labels (those of every store it ships)."""
    if writing and not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(f"Namespace labels must be strings; got {label!r} in {namespace}.")
        if not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {namespace}: labels are non-empty, without '.' or NUL."
            )
    if writing and namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')


class RecallStore(BaseStore):
    """A LangGraph store whose items are long-term memories of a recall world.

    `world`: a `World`, or a world id (default `langgraph`). `agent`: keep the items private to
    this agent of the world, searched with its `Agent.search`; without one they are shared by
    the world's agents. A world id or agent that does not exist is refused, naming the closest
    ids there are; `create=True` creates what is missing. `importance` (1-10) of the memories.
    `index`: the fields whose text is searched, unless a put names its own: LangGraph's JSON
    paths (`$`, the default, is the whole value), as a list or as LangGraph's `IndexConfig`
    (`{"fields": [...]}`; its `dims` and `embed`, when given, must be the store's own embedding
    model, which `Settings(embeddings=...)` chooses for the whole store: `InvalidInputError`
    otherwise). A put with `index=False` is never found by a query. `ttl`: LangGraph's
    `TTLConfig` (`default_ttl` minutes, `refresh_on_read`).
    `fresh_search`: before a query search, embed what is still waiting for its vector
    (`Recall.refresh_index`), so an item put just before is found by meaning as well as by
    its words. `min_score`: a query search leaves out items scoring under it (a `SearchItem`'s
    score is recall's relevance, 0..1).
    """

    supports_ttl = True

    def __init__(
        self,
        mem: Recall,
        *,
        world: str | World = "langgraph",
        agent: str | None = None,
        importance: int = 5,
        index: IndexConfig | Sequence[str] | None = None,
        ttl: TTLConfig | None = None,
        fresh_search: bool = True,
        min_score: float | None = None,
        create: bool = False,
    ) -> None:
        check_min_score(min_score)
        self.mem = mem
        self.fields: tuple[str, ...] = index_fields(mem, index)
        self.world = resolve_world(mem, world, create)
        self.agent: Agent | None = ensure_agent(self.world, agent, create) if agent is not None else None
        self.importance = importance
        self.ttl_config = ttl
        self.fresh_search = fresh_search
        self.min_score = min_score
        self._owner = self.agent.id if self.agent is not None else ""
        self._lock = threading.RLock()
        self._adopted = False

    def __repr__(self) -> str:
        return f"RecallStore(world={self.world.id!r}, agent={self._owner or None!r})"

    # -- BaseStore ------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; one result per operation."""
        ops = list(ops)
        with self._lock:
            self._adopt()
            results: list[Result] = []
            # Puts in a row are written together, in one transaction (a bulk load at the speed of
            # the store, not of a transaction per item); any other operation sees them written.
            writes: dict[tuple[tuple[str, ...], str], tuple[StoredItem, str]] = {}
            for op in ops:
                if isinstance(op, PutOp) and op.value is not None:
                    stored, text = self._put(op, writes)
                    writes[(stored.namespace, stored.key)] = (stored, text)
                    results.append(None)
                    continue
                self._write(list(writes.values()))
                writes = {}
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, PutOp):
                    self._delete_at(op)
                    results.append(None)
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                else:
                    raise ValueError(f"Unknown operation type: {type(op)}")
            self._write(list(writes.values()))
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread, so the event loop never waits on the database."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- the operations -------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        _check_namespace(op.namespace)
        stored = self._at(tuple(op.namespace), str(op.key))
        if stored is None:
            return None
        if op.refresh_ttl:
            stored = self._refresh(stored)
        return stored.item()

    def _delete_at(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        _check_namespace(namespace)
        gone = self._store.keyed_memory(self.world.key, self._owner, item_address(namespace, str(op.key)))
        if gone is not None:
            self._delete(gone.id)

    def _put(
        self, op: PutOp, pending: Mapping[tuple[tuple[str, ...], str], tuple[StoredItem, str]]
    ) -> tuple[StoredItem, str]:
        """The item a put writes, and its text to search (`pending`: the puts before it in its
        batch, not written yet: an item put twice keeps its first created_at)."""
        namespace, key = tuple(op.namespace), str(op.key)
        _check_namespace(namespace, writing=True)
        if not isinstance(op.value, Mapping):
            raise TypeError(f"a store value must be a mapping (a JSON object), got {type(op.value).__name__}")
        # What is stored there keeps its created_at (the store's upsert): no look-up first.
        earlier = pending.get((namespace, key))
        old = earlier[0] if earlier is not None else None
        now = datetime.now(UTC)
        ttl = None if op.ttl is None else float(op.ttl)
        stored = StoredItem(
            0,
            namespace,
            key,
            dict(op.value),
            old.created_at if old is not None else now,
            now,
            op.index is not False,
            ttl,
            None if ttl is None else now + timedelta(minutes=ttl),
        )
        paths = op.index if isinstance(op.index, list) else self.fields
        return stored, search_text(stored.value, paths) if stored.indexed else ""

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        _check_namespace(prefix)
        check_filter(op.filter or {})
        if op.query and op.query.strip():
            page = self._ranked(op.query, prefix, op.filter, op.offset + op.limit)[op.offset : op.offset + op.limit]
        else:
            newest = ((s, None) for s in self._newest(prefix, op.filter, op.offset + op.limit))
            page = list(itertools.islice(newest, op.offset, op.offset + op.limit))
        if op.refresh_ttl:
            page = [(self._refresh(s), score) for s, score in page]
        return [s.search_item(score) for s, score in page]

    def _passes(self, stored: StoredItem, prefix: tuple[str, ...], filter: Mapping[str, Any] | None) -> bool:
        return stored.namespace[: len(prefix)] == prefix and (not filter or filter_matches(stored.value, filter))

    def _newest(self, prefix: tuple[str, ...], filter: Mapping[str, Any] | None, wanted: int) -> Iterator[StoredItem]:
        """The live items under `prefix` that pass `filter`, newest write first: read a page at a
        time, each page as large as what is still wanted (at least _PAGE)."""
        before: tuple[datetime, int] | None = None
        while True:
            size = max(_PAGE, wanted)
            page = self._store.keyed_memories(
                self.world.key, self._owner, NAMESPACE_SEPARATOR.join(prefix), before=before, limit=size
            )
            for memory in page:
                stored = self._live(memory)
                if stored is not None and self._passes(stored, prefix, filter):
                    wanted -= 1
                    yield stored
            if len(page) < size:
                return
            before = (page[-1].updated_at, page[-1].id)

    def _ranked(
        self, query: str, prefix: tuple[str, ...], filter: Mapping[str, Any] | None, wanted: int
    ) -> list[tuple[StoredItem, float | None]]:
        """What recall's search finds for `query` among the store's items under `prefix` that
        pass `filter`, best first, with its scores: at least `wanted` of them when there are."""
        if wanted <= 0:
            return []
        if self.fresh_search:
            self.mem.refresh_index()
        conditions = search_conditions(self._owner, prefix, filter)
        k = min(_MAX_K, max(10, 2 * wanted))
        while True:
            hits = self._recall_search(query, k, conditions)
            memories = self._store.memories_among(self.world.key, [h.source_id for h in hits])
            ranked: list[tuple[StoredItem, float | None]] = []
            for hit in hits:
                memory = memories.get(hit.source_id)
                stored = self._live(memory) if memory is not None else None
                if stored is not None and stored.indexed and self._passes(stored, prefix, filter):
                    ranked.append((stored, hit.score))
            if len(ranked) >= wanted or len(hits) < k or k >= _MAX_K:
                return ranked
            k = min(_MAX_K, k * 4)

    def _recall_search(self, query: str, k: int, conditions: Mapping[str, Any]) -> list[SearchResult]:
        if self.agent is not None:
            return self.agent.search(query, k=k, kinds=["memory"], min_score=self.min_score, metadata=conditions)
        return self.world.search(query, k=k, kinds=["memory"], min_score=self.min_score, metadata=conditions)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        for condition in conditions:
            _check_namespace(tuple(p for p in condition.path if p != "*"))
        # A prefix without wildcards narrows the look-up to its range of the index.
        prefix: tuple[str, ...] = ()
        for condition in conditions:
            path = tuple(condition.path)
            if condition.match_type == "prefix" and "*" not in path and len(path) > len(prefix):
                prefix = path
        namespaces = {
            tuple(name.split(NAMESPACE_SEPARATOR))
            for name in self._store.keyed_namespaces(self.world.key, self._owner, NAMESPACE_SEPARATOR.join(prefix))
        }
        kept = {ns for ns in namespaces if all(namespace_matches(c, ns) for c in conditions)}
        if op.max_depth is not None:
            kept = {ns[: op.max_depth] for ns in kept}
        return sorted(kept)[op.offset : op.offset + op.limit]

    # -- memories -------------------------------------------------------------------------

    @property
    def _store(self) -> Store:
        return self.mem.service.store

    def _at(self, namespace: tuple[str, ...], key: str) -> StoredItem | None:
        """The live item at (namespace, key), if there is one."""
        memory = self._store.keyed_memory(self.world.key, self._owner, item_address(namespace, key))
        return None if memory is None else self._live(memory)

    def _live(self, memory: Memory) -> StoredItem | None:
        """The item a memory of this store holds; None for another memory, or an expired item
        (deleted, as every operation that comes across one does)."""
        if memory.owner.lower() != self._owner.lower():
            return None
        stored = parse_item(memory)
        if stored is None:
            return None
        if stored.expired(datetime.now(UTC)):
            self._delete(stored.memory_id)
            return None
        return stored

    def _adopt(self) -> None:
        """Adopt the items an older recall wrote (`langgraph_adopt.py`), once per store."""
        if not self._adopted:
            adopt(self._store, self.world.key, self._owner, self._write, self._delete)
            self._adopted = True

    def _write(self, items: Sequence[tuple[StoredItem, str]]) -> list[StoredItem]:
        """Store the items at their addresses (over what was there), in one transaction, with
        their texts to search; the items with their memories' ids."""
        if not items:
            return []
        writes = [
            KeyedWrite(
                stored.address(),
                (text if text.strip() else "/".join(stored.namespace) + "/" + stored.key)[:MAX_NOTE_CHARS],
                stored.metadata(self._owner),
                stored.created_at,
                stored.updated_at,
                # The memory's own expiry too: recall's contexts and searches never show it after.
                stored.expires_at,
            )
            for stored, text in items
        ]
        memories = self.mem.service.memories.put_adapter_memories(
            self.world.key,
            writes,
            type=MEMORY_TYPE,
            importance=self.importance,
            agent=self.agent.id if self.agent is not None else None,
        )
        return [
            replace(stored, memory_id=m.id, created_at=m.created_at)
            for (stored, _), m in zip(items, memories, strict=True)
        ]

    def _delete(self, memory_id: int) -> None:
        # Already gone: deleted meanwhile by another process, or by a sweep.
        with contextlib.suppress(UnknownMemoryError):
            self.mem.service.memories.delete_memory(
                self.world.key, memory_id, self.agent.id if self.agent is not None else None
            )

    def _refresh(self, stored: StoredItem) -> StoredItem:
        """Restart an item's TTL (a read with refresh_ttl): written again with a new expiry."""
        if stored.ttl is None:
            return stored
        old = self._store.get_memory(self.world.key, stored.memory_id)
        fresh = replace(stored, expires_at=datetime.now(UTC) + timedelta(minutes=stored.ttl))
        return self._write([(fresh, old.content if old is not None else "")])[0]

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
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
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
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
)

from recall.api import Agent, Recall, World
from recall.app.memories import KeyedWrite
from recall.app.search import SearchResult, check_min_score
from recall.errors import InvalidInputError, UnknownMemoryError
from recall.integrations._common import ensure_agent, resolve_world
from recall.limits import MAX_NOTE_CHARS
from recall.search.metadata import MAX_CONDITIONS, MAX_KEY_CHARS, MAX_VALUE_CHARS
from recall.store.base import Store
from recall.store.records import NAMESPACE_SEPARATOR, Address, Memory

#: The type of the memories that hold a store's items (other memories of the world are left alone).
MEMORY_TYPE = "langgraph"
#: The metadata field holding the item.
META = "langgraph"
#: Keys of a memory's metadata that recall's search filters a query search on (`_search_keys`):
#: the store's owner, whether the item is searched at all, each namespace label by depth, and
#: each text value of the item by its dotted path.
_OWNER_KEY = "langgraph:owner"
_INDEXED_KEY = "langgraph:indexed"
_LABEL_KEY = "langgraph:ns:{}"
_VALUE_KEY = "langgraph:value:{}"
#: Items a listing without a query reads at least per page (it reads on until its page is full).
_PAGE = 64
#: Items written before keyed memories, adopted per read when a store first opens on them.
_ADOPT_BATCH = 1000
#: recall's search returns at most this many hits per call.
_MAX_K = 1000


@dataclass(frozen=True)
class _Stored:
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
        return _address(self.namespace, self.key)

    def metadata(self, owner: str) -> dict[str, Any]:
        return {
            **_search_keys(owner, self.namespace, self.value, self.indexed),
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


def _parse(memory: Memory, keyed: bool = True) -> _Stored | None:
    """The item a memory holds, or None for a memory that is not a store item. A keyed memory's
    own created_at and updated_at are the item's (the store keeps its created_at when it is
    written over); one an older recall wrote has them in its metadata only (`keyed=False`)."""
    data = memory.metadata.get(META) if memory.type == MEMORY_TYPE else None
    if not isinstance(data, dict):
        return None
    try:
        namespace = tuple(data["namespace"])
        key = data["key"]
        value = data["value"]
        # A keyed memory's times are its own columns; the metadata has them only from an older recall.
        created = memory.created_at if keyed else datetime.fromisoformat(data["created_at"])
        updated = memory.updated_at if keyed else datetime.fromisoformat(data["updated_at"])
        expires = None if data.get("expires_at") is None else datetime.fromisoformat(data["expires_at"])
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(key, str) or not isinstance(value, dict) or not all(isinstance(p, str) for p in namespace):
        return None
    ttl = data.get("ttl")
    return _Stored(
        memory.id,
        namespace,
        key,
        value,
        created,
        updated,
        data.get("index") is not False,
        float(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) else None,
        expires,
    )


def _address(namespace: Sequence[str], key: str) -> Address:
    return Address(NAMESPACE_SEPARATOR.join(namespace), key)


def _text_leaves(value: Mapping[str, Any], path: str = "") -> Iterable[tuple[str, str]]:
    """(dotted path, text) of each text value of an item, nested objects included."""
    for field, inner in value.items():
        where = f"{path}.{field}" if path else str(field)
        if isinstance(inner, str):
            yield where, inner
        elif isinstance(inner, Mapping):
            yield from _text_leaves(inner, where)


def _kept(key: str, value: str) -> bool:
    """Whether the search index keeps this metadata key and text (`search/metadata.py`)."""
    return len(key) <= MAX_KEY_CHARS and len(value) <= MAX_VALUE_CHARS


def _search_keys(owner: str, namespace: Sequence[str], value: Mapping[str, Any], indexed: bool) -> dict[str, Any]:
    """The metadata keys a query search filters the store's items on (see `_conditions`)."""
    keys: dict[str, Any] = {_OWNER_KEY: owner.lower(), _INDEXED_KEY: indexed}
    keys.update((_LABEL_KEY.format(depth), label) for depth, label in enumerate(namespace))
    keys.update((_VALUE_KEY.format(path), text) for path, text in _text_leaves(value))
    return {k: v for k, v in keys.items() if not isinstance(v, str) or _kept(k, v)}


def _conditions(owner: str, prefix: Sequence[str], filter: Mapping[str, Any] | None) -> dict[str, Any]:
    """What recall's search can check of a query search before it ranks: the owner, indexed
    items only, the prefix's labels, and each filter key asking for a text (equal as JSON text
    and as Python compare it). Every hit is still checked whole (`_filter_matches`): these only
    keep the search from ranking what cannot pass."""
    conditions: dict[str, Any] = {_OWNER_KEY: owner.lower(), _INDEXED_KEY: True}
    for depth, label in enumerate(prefix):
        key = _LABEL_KEY.format(depth)
        if len(conditions) < MAX_CONDITIONS and _kept(key, label):
            conditions[key] = label
    for path, wanted in (filter or {}).items():
        key = _VALUE_KEY.format(path)
        if isinstance(wanted, str) and len(conditions) < MAX_CONDITIONS and _kept(key, wanted):
            conditions[key] = wanted
    return conditions


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


def _render(value: Mapping[str, Any]) -> str:
    """The whole value as text to search: one `field: value` line per top-level field."""
    lines = []
    for field, inner in value.items():
        text = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
        lines.append(f"{field}: {text}")
    return "\n".join(lines)


def _search_text(value: Mapping[str, Any], paths: Sequence[str]) -> str:
    texts: list[str] = []
    for path in paths:
        texts.extend([_render(value)] if path == "$" else get_text_at_path(dict(value), path))
    return "\n".join(t for t in texts if t.strip())


#: A filter key LangGraph's SQLite store accepts (the same check, the same error).
_FILTER_KEY = re.compile(r"^[a-zA-Z0-9_.-]+$")


def _check_filter(filter: Mapping[str, Any]) -> None:
    """Refuse the filter keys LangGraph's SQLite store refuses, before any item is compared."""
    for key in filter:
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise ValueError(
                f"Invalid filter key: '{key}'. Filter keys must contain only alphanumeric characters,"
                " underscores, dots, and hyphens."
            )


def _filter_matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """A search's filter (checked by `_check_filter`), as LangGraph's SQLite store reads it: each
    key a path into the value (`user.access-level`), compared with what it wants by `_matches`."""
    for key, wanted in filter.items():
        found: Any = value
        for part in key.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        if not _matches(found, wanted):
            return False
    return True


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter: exact JSON equality, nested objects field by field, and the operators
    $eq, $ne, $gt, $gte, $lt and $lte."""
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_compare(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported operator: {op}")
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or n == p for n, p in pairs)


#: The keys of LangGraph's `IndexConfig`, all of which recall reads.
_INDEX_KEYS = ("dims", "embed", "fields")
#: Names of the bundled model, all-MiniLM-L6-v2, that an `IndexConfig`'s `embed` may give (after a
#: provider prefix such as `huggingface:` and `sentence-transformers/`; any case).
_MINILM_NAMES = frozenset({"minilm", "all-minilm", "all-minilm-l6-v2", "all-minilm-l6-v2-int8"})


def _store_model(mem: Recall) -> tuple[str, int] | None:
    """(name, dims) of the model that embeds the store; None when it searches by keywords only."""
    index = mem.service.index
    embedder = index.embedder if index is not None else None
    return None if embedder is None else (embedder.name, embedder.dim)


def _names_model(embed: str, model: str) -> bool:
    """Whether `embed` (a LangGraph provider string, e.g. `huggingface:sentence-transformers/all-MiniLM-L6-v2`)
    names the store's model `model`."""
    name = embed.strip().lower()
    name = name.split(":", 1)[1] if ":" in name else name
    name = name.removeprefix("sentence-transformers/")
    if model.lower().startswith("all-minilm-l6-v2"):
        return name in _MINILM_NAMES or name == model.lower()
    return name == model.lower()


def _check_model(mem: Recall, config: Mapping[str, Any]) -> None:
    """Refuse an `IndexConfig` whose `dims` or `embed` is not the store's own model: one model embeds
    a whole store (messages, memories, facts and these items are searched together), chosen when
    the store opens (`Settings(embeddings=...)`)."""
    model = _store_model(mem)
    how = (
        "recall embeds a whole store with one model, chosen when the store opens: "
        "Recall(db, settings=Settings(embeddings='minilm')) for all-MiniLM-L6-v2 (384 dims, bundled; the default) "
        "or Settings(embeddings='none') for keyword search only"
    )
    dims = config.get("dims")
    if dims is not None:
        if model is None:
            raise InvalidInputError(
                "index",
                f"dims is {dims!r}, but this store makes no vectors (Settings(embeddings='none')): leave dims "
                f"out ({how})",
            )
        if isinstance(dims, bool) or dims != model[1]:
            raise InvalidInputError(
                "index",
                f"dims is {dims!r}, but the store's embedding model ({model[0]}) makes {model[1]}-dimensional "
                f"vectors: leave dims out or give {model[1]} ({how})",
            )
    embed = config.get("embed")
    if embed is None:
        return
    shown = repr(embed) if len(repr(embed)) <= 80 else repr(embed)[:77] + "..."
    if model is None:
        raise InvalidInputError(
            "index",
            f"embed is {shown}, but this store makes no vectors (Settings(embeddings='none')): leave embed out ({how})",
        )
    if not isinstance(embed, str) or not _names_model(embed, model[0]):
        raise InvalidInputError(
            "index",
            f"embed is {shown}, which recall cannot use: {how}. Leave embed out, or name the store's model "
            f"({'minilm' if model[0].lower().startswith('all-minilm') else model[0]!r})",
        )


def _index_fields(mem: Recall, index: IndexConfig | Sequence[str] | str | None) -> tuple[str, ...]:
    """The JSON paths whose text is searched: a list of them, or LangGraph's `IndexConfig` (its
    `fields`; its `dims` and `embed` must be the store's own model). Default: `$`, the whole value."""
    if index is None:
        return ("$",)
    if isinstance(index, Mapping):
        unknown = sorted(repr(k) for k in index if k not in _INDEX_KEYS)
        if unknown:
            raise InvalidInputError(
                "index", f"unknown IndexConfig key {', '.join(unknown)}: recall reads {', '.join(_INDEX_KEYS)}"
            )
        _check_model(mem, index)
        fields: Any = index.get("fields")
    else:
        fields = index
    paths = [fields] if isinstance(fields, str) else list(fields or ())
    for path in paths:
        if not isinstance(path, str) or not path.strip():
            raise InvalidInputError(
                "index", f"fields are JSON paths of the value (such as 'text' or 'user.name'), got {path!r}"
            )
    return tuple(paths) if paths else ("$",)


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
        self.fields: tuple[str, ...] = _index_fields(mem, index)
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
            writes: dict[tuple[tuple[str, ...], str], tuple[_Stored, str]] = {}
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
        gone = self._store.keyed_memory(self.world.key, self._owner, _address(namespace, str(op.key)))
        if gone is not None:
            self._delete(gone.id)

    def _put(
        self, op: PutOp, pending: Mapping[tuple[tuple[str, ...], str], tuple[_Stored, str]]
    ) -> tuple[_Stored, str]:
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
        stored = _Stored(
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
        return stored, _search_text(stored.value, paths) if stored.indexed else ""

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        _check_namespace(prefix)
        _check_filter(op.filter or {})
        if op.query and op.query.strip():
            page = self._ranked(op.query, prefix, op.filter, op.offset + op.limit)[op.offset : op.offset + op.limit]
        else:
            newest = ((s, None) for s in self._newest(prefix, op.filter, op.offset + op.limit))
            page = list(itertools.islice(newest, op.offset, op.offset + op.limit))
        if op.refresh_ttl:
            page = [(self._refresh(s), score) for s, score in page]
        return [s.search_item(score) for s, score in page]

    def _passes(self, stored: _Stored, prefix: tuple[str, ...], filter: Mapping[str, Any] | None) -> bool:
        return stored.namespace[: len(prefix)] == prefix and (not filter or _filter_matches(stored.value, filter))

    def _newest(self, prefix: tuple[str, ...], filter: Mapping[str, Any] | None, wanted: int) -> Iterator[_Stored]:
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
    ) -> list[tuple[_Stored, float | None]]:
        """What recall's search finds for `query` among the store's items under `prefix` that
        pass `filter`, best first, with its scores: at least `wanted` of them when there are."""
        if wanted <= 0:
            return []
        if self.fresh_search:
            self.mem.refresh_index()
        conditions = _conditions(self._owner, prefix, filter)
        k = min(_MAX_K, max(10, 2 * wanted))
        while True:
            hits = self._recall_search(query, k, conditions)
            memories = self._store.memories_among(self.world.key, [h.source_id for h in hits])
            ranked: list[tuple[_Stored, float | None]] = []
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
        kept = {ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)}
        if op.max_depth is not None:
            kept = {ns[: op.max_depth] for ns in kept}
        return sorted(kept)[op.offset : op.offset + op.limit]

    # -- memories -------------------------------------------------------------------------

    @property
    def _store(self) -> Store:
        return self.mem.service.store

    def _at(self, namespace: tuple[str, ...], key: str) -> _Stored | None:
        """The live item at (namespace, key), if there is one."""
        memory = self._store.keyed_memory(self.world.key, self._owner, _address(namespace, key))
        return None if memory is None else self._live(memory)

    def _live(self, memory: Memory) -> _Stored | None:
        """The item a memory of this store holds; None for another memory, or an expired item
        (deleted, as every operation that comes across one does)."""
        if memory.owner.lower() != self._owner.lower():
            return None
        stored = _parse(memory)
        if stored is None:
            return None
        if stored.expired(datetime.now(UTC)):
            self._delete(stored.memory_id)
            return None
        return stored

    def _adopt(self) -> None:
        """Give the items an older recall wrote (without an address) theirs, once per store:
        each written again at its address, oldest first (so the newest copy of an item wins),
        and the old memory deleted."""
        if self._adopted:
            return
        while batch := self._store.unkeyed_memories(self.world.key, self._owner, _ADOPT_BATCH):
            parsed = [(_parse(memory, keyed=False), memory) for memory in batch]
            now = datetime.now(UTC)
            self._write([(s, m.content) for s, m in parsed if s is not None and not s.expired(now)])
            for memory in batch:
                self._delete(memory.id)
        self._adopted = True

    def _write(self, items: Sequence[tuple[_Stored, str]]) -> list[_Stored]:
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

    def _refresh(self, stored: _Stored) -> _Stored:
        """Restart an item's TTL (a read with refresh_ttl): written again with a new expiry."""
        if stored.ttl is None:
            return stored
        old = self._store.get_memory(self.world.key, stored.memory_id)
        fresh = replace(stored, expires_at=datetime.now(UTC) + timedelta(minutes=stored.ttl))
        return self._write([(fresh, old.content if old is not None else "")])[0]

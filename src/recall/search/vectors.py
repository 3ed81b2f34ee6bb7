"""Vectors in memory: exact and approximate nearest neighbours in milliseconds, with filters.

The store keeps every vector (it is the source of truth); this index holds a copy, loaded from
it and kept in step by `VectorIndex.apply` (the rows changed since the last sync). Vectors are
grouped in partitions, one per (tenant, space), as the store's searches are: another tenant's
or space's vector is never compared with a query.

A partition is a float32 matrix (one row per item, unit length) and parallel arrays of the
fields searches filter on, as numbers (strings become codes of one vocabulary). A search

1. turns the filters into a boolean mask over the rows (a few vectorised comparisons);
2. scores what the mask keeps: exactly (one matrix product) when that is cheap — few rows
   pass, or the partition is small — else it asks the partition's HNSW graph (`usearch`, int8)
   for enough candidates that `limit` of them pass the mask, then scores those exactly.

So `limit` hits come back whenever `limit` items pass the filters (the graph is asked again,
deeper, when too few of its candidates pass, and the search falls back to the exact scan), and
every distance reported is exact. Graphs are built by `build_graphs`, called by the index's
background work, never by a search; until one exists a partition is scanned exactly.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import Filters

if TYPE_CHECKING:
    from usearch.index import Index

#: Partitions of at least this many rows get an HNSW graph; below it the exact scan (a 384-d
#: product with 20,000 rows) takes about a millisecond.
GRAPH_MIN_ROWS = 20_000
#: When at most this many rows pass the filters, they are scored exactly, graph or not.
EXACT_MAX_ROWS = 8_000
#: Candidates asked of a graph, per hit wanted, before the filters; and the most it is asked for
#: before the exact scan is cheaper.
GRAPH_OVERSAMPLE = 2
GRAPH_MAX_CANDIDATES = 2_000
#: Rows a partition grows by when full.
_GROWTH = 1024

_KIND_CODES = {"message": 0, "memory": 1, "fact": 2}


@dataclass(frozen=True)
class VectorRow:
    """One item's vector and the fields searches filter on (a row changed in the store)."""

    item_id: int
    tenant: str
    space: str
    kind: str
    owner: str
    chat_id: str | None
    sender: str | None
    importance: int | None
    created_at: float
    vector: NDArray[np.float32]


class _Vocabulary:
    """Strings as small integers, so filters compare numbers."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, value: str) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self._codes)
        return found

    def known(self, values: Iterable[str]) -> list[int]:
        """The codes of the values seen so far (a value never seen matches no row)."""
        return [self._codes[v] for v in values if v in self._codes]


class _Partition:
    """The vectors of one (tenant, space)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.size = 0
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.ids = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.kind = np.zeros(0, dtype=np.int8)
        self.owner = np.zeros(0, dtype=np.int32)
        self.chat = np.zeros(0, dtype=np.int32)
        self.sender = np.zeros(0, dtype=np.int32)
        self.importance = np.zeros(0, dtype=np.int32)
        self.created = np.zeros(0, dtype=np.float64)
        #: The HNSW graph over rows 0..graph_rows-1 (keys are row numbers), if built.
        self.graph: Index | None = None
        self.graph_rows = 0

    def append(self, rows: Sequence[VectorRow], words: _Vocabulary) -> list[int]:
        """Add rows at the end; their row numbers."""
        need = self.size + len(rows)
        if need > len(self.ids):
            self._grow(max(need, 2 * len(self.ids), _GROWTH))
        start = self.size
        for offset, row in enumerate(rows):
            at = start + offset
            self.matrix[at] = row.vector
            self.ids[at] = row.item_id
            self.alive[at] = True
            self.kind[at] = _KIND_CODES[row.kind]
            self.owner[at] = words.code(row.owner.lower())
            self.chat[at] = words.code(row.chat_id or "")
            self.sender[at] = words.code(row.sender or "")
            self.importance[at] = -1 if row.importance is None else row.importance
            self.created[at] = row.created_at
        self.size = need
        return list(range(start, need))

    def _grow(self, capacity: int) -> None:
        """New, larger arrays; a search still holding the old ones reads them unchanged."""

        def grown(array: NDArray[Any]) -> NDArray[Any]:
            bigger = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
            bigger[: self.size] = array[: self.size]
            return bigger

        self.matrix, self.ids, self.alive = grown(self.matrix), grown(self.ids), grown(self.alive)
        self.kind, self.owner, self.chat = grown(self.kind), grown(self.owner), grown(self.chat)
        self.sender, self.importance, self.created = grown(self.sender), grown(self.importance), grown(self.created)

    def mask(self, f: Filters, words: _Vocabulary) -> NDArray[np.bool_]:
        """The rows that pass the filters."""
        n = self.size
        keep = self.alive[:n].copy()
        kinds = [_KIND_CODES[k] for k in f.kinds if k in _KIND_CODES]
        if len(kinds) < len(_KIND_CODES):
            keep &= np.isin(self.kind[:n], kinds)
        if f.owners is not None:
            keep &= np.isin(self.owner[:n], words.known(f.owners))
        for column, value in ((self.chat, f.chat_id), (self.sender, f.sender)):
            if value is not None:
                codes = words.known([value])
                keep &= column[:n] == (codes[0] if codes else -2)
        if f.since is not None:
            keep &= self.created[:n] >= f.since
        if f.until is not None:
            keep &= self.created[:n] < f.until
        if f.min_importance is not None:
            keep &= self.importance[:n] >= f.min_importance
        return keep

    def nearest(self, query: NDArray[np.float32], keep: NDArray[np.bool_], limit: int) -> list[tuple[int, float]]:
        """(item id, cosine distance) of the `limit` nearest rows that `keep` passes, nearest first."""
        passing = int(keep.sum())
        if passing == 0:
            return []
        if passing <= EXACT_MAX_ROWS or self.graph is None:
            rows = np.flatnonzero(keep)
            return self._best(rows, self.matrix[rows] @ query, limit)
        wanted = min(self.size, math.ceil(GRAPH_OVERSAMPLE * limit * self.size / passing))
        while wanted <= GRAPH_MAX_CANDIDATES:
            found = self.graph.search(query, wanted).keys.astype(np.int64)
            found = found[keep[found]] if len(found) else found
            # Rows added since the graph was built are scored exactly beside its candidates.
            recent = np.flatnonzero(keep[self.graph_rows :]) + self.graph_rows
            if len(found) >= limit or wanted >= self.graph_rows:
                rows = np.concatenate([found, recent])
                return self._best(rows, self.matrix[rows] @ query, limit)
            wanted *= 4
        # Too few candidates pass: scoring every row costs less than asking the graph deeper.
        scores = self.matrix[: self.size] @ query
        rows = np.flatnonzero(keep)
        return self._best(rows, scores[rows], limit)

    def _best(self, rows: NDArray[np.int64], similarity: NDArray[np.float32], limit: int) -> list[tuple[int, float]]:
        if len(rows) > limit:
            top = np.argpartition(-similarity, limit - 1)[:limit]
            rows, similarity = rows[top], similarity[top]
        order = np.argsort(-similarity, kind="stable")
        return [(int(self.ids[r]), float(1.0 - s)) for r, s in zip(rows[order], similarity[order], strict=True)]


class VectorIndex:
    """The vectors of one store in memory, by partition. Thread-safe: searches, syncs and graph
    builds may come from different threads."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._partitions: dict[tuple[str, str], _Partition] = {}
        #: Where each item's row is: (partition key, row number).
        self._where: dict[int, tuple[tuple[str, str], int]] = {}
        self._words = _Vocabulary()
        self._lock = threading.Lock()
        #: The store's change counter up to which this copy is in step.
        self.synced = 0

    def __len__(self) -> int:
        return len(self._where)

    def apply(self, changes: Sequence[tuple[int, VectorRow | None]], synced: int) -> None:
        """Take rows changed in the store, oldest change first: (item id, its row, or None when
        its vector was deleted). `synced` is the store's counter they bring this copy up to."""
        with self._lock:
            added: dict[tuple[str, str], list[VectorRow]] = {}
            for item_id, row in changes:
                self._forget(item_id)
                if row is not None:
                    added.setdefault((row.tenant, row.space.lower()), []).append(row)
            for key, rows in added.items():
                partition = self._partitions.get(key)
                if partition is None:
                    partition = self._partitions[key] = _Partition(self.dim)
                for row, at in zip(rows, partition.append(rows, self._words), strict=True):
                    self._forget(row.item_id)  # the same item twice in one batch: the last wins
                    self._where[row.item_id] = (key, at)
            self.synced = max(self.synced, synced)

    def forget(self, item_ids: Iterable[int]) -> None:
        """Stop finding these items (their store rows are gone)."""
        with self._lock:
            for item_id in item_ids:
                self._forget(item_id)

    def _forget(self, item_id: int) -> None:
        place = self._where.pop(item_id, None)
        if place is not None:
            self._partitions[place[0]].alive[place[1]] = False

    def clear(self) -> None:
        with self._lock:
            self._partitions.clear()
            self._where.clear()
            self.synced = 0

    def nearest(self, query: NDArray[np.float32], filters: Filters, limit: int) -> list[tuple[int, float]]:
        """(item id, cosine distance) of the `limit` nearest items that pass the filters,
        nearest first."""
        with self._lock:
            partition = self._partitions.get((filters.tenant, filters.space.lower()))
            if partition is None or limit < 1:
                return []
            keep = partition.mask(filters, self._words)
            return partition.nearest(np.asarray(query, dtype=np.float32), keep, limit)

    def build_graphs(self) -> int:
        """Build or extend the HNSW graph of every partition large enough; how many rows were
        added to graphs. The slow part runs outside the lock: searches go on meanwhile."""
        from usearch.index import Index  # loaded when a partition first needs a graph

        added = 0
        for key in list(self._partitions):
            with self._lock:
                partition = self._partitions.get(key)
                if partition is None or partition.size < GRAPH_MIN_ROWS or partition.graph_rows == partition.size:
                    continue
                if partition.graph is not None:
                    # A few rows more (what was embedded since): added in place, under the lock,
                    # so no search walks the graph while it changes.
                    start, end = partition.graph_rows, partition.size
                    partition.graph.add(np.arange(start, end, dtype=np.int64), partition.matrix[start:end], threads=1)
                    partition.graph_rows = end
                    added += end - start
                    continue
                end, matrix = partition.size, partition.matrix
            # A new graph is built outside the lock. Rows below `end` never change (only `alive`
            # does), and `matrix` stays readable even if the partition grows into new arrays.
            graph = Index(ndim=self.dim, metric="ip", dtype="i8")
            graph.add(np.arange(0, end, dtype=np.int64), matrix[:end], threads=1)
            with self._lock:
                if self._partitions.get(key) is partition and partition.graph is None:
                    partition.graph, partition.graph_rows = graph, end
                    added += end
        return added

"""The search index in memory: BM25 and nearest neighbours in milliseconds, with filters.

The store keeps every item and vector (it is the source of truth); each process holds this
copy, loaded from it and kept in step by `LocalIndex.apply` (the rows changed since the last
sync). Items are grouped in partitions, one per (tenant, space), as the store's searches are:
another tenant's or space's item is never scored.

A partition (`local_partition.py`) holds, per item, the fields searches filter on as numbers
(strings become codes of one vocabulary), its words as postings (term -> rows and weighted
counts: `local_words.py`), its metadata as postings too (key -> value -> rows, and each key's
numbers beside their rows: `local_fields.py`), and its vector as a row of a float32 matrix once
it is embedded. A search

1. turns the filters into a boolean mask over the rows (a few vectorised comparisons; a
   metadata condition sets the rows of its values' postings);
2. keyword: adds up each query term's BM25 contribution over that term's postings (numpy, no
   per-document Python), then keeps the best rows the mask passes;
3. vector: scores what the mask keeps exactly (one matrix product) when that is cheap, else
   asks the partition's HNSW graph (`usearch`, int8) for enough candidates that `limit` of them
   pass the mask, then scores those exactly.

So `limit` hits come back whenever `limit` items pass the filters, and every score is exact.
Graphs are built by `build_graphs`, called by the index's background work, never by a search;
until one exists (or for the rows embedded since), rows are scored exactly.

Words: lowercased, accents dropped, Snowball (Porter 2) stems. A message's text counts 1, the
turn before it (`context`) 0.5: an answer is often a short reply whose question holds the words
a search uses.

This module holds the index over partitions: which partition an item is in, the syncing, and
when a partition gets its graph.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from recall.search.base import Candidate, Filters
from recall.search.local_fields import Vocabulary
from recall.search.local_partition import Found, LocalRow, Partition, Parts

#: Partitions with at least this many vectors get an HNSW graph; below it the exact scan (a
#: 384-d product with 20,000 rows) takes about a millisecond.
GRAPH_MIN_ROWS = 20_000


class LocalIndex:
    """A store's search index in memory, by partition. Thread-safe: searches, syncs and graph
    builds may come from different threads."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._partitions: dict[tuple[str, str], Partition] = {}
        #: Where each item's row is: (partition key, row number).
        self._where: dict[int, tuple[tuple[str, str], int]] = {}
        self._codes = Vocabulary()
        self._lock = threading.Lock()
        #: The store's change counter up to which this copy is in step (-1: nothing read yet).
        self.synced = -1

    def __len__(self) -> int:
        return len(self._where)

    def apply(self, changes: Sequence[tuple[int, LocalRow | None]], synced: int) -> None:
        """Take rows changed in the store, oldest change first: (item id, its row, or None when
        the item was deleted). `synced` is the store's counter they bring this copy up to."""
        with self._lock:
            for item_id, row in changes:
                place = self._where.get(item_id)
                if row is not None and place is not None and place[0] == _key(row):
                    # The same item, embedded (or its vector dropped) since: only the vector changes.
                    self._partitions[place[0]].set_vector(place[1], row.vector)
                    continue
                if place is not None:
                    gone = self._partitions[place[0]]
                    gone.remove(place[1])
                    del self._where[item_id]
                    if not gone.live:
                        del self._partitions[place[0]]  # every item of it deleted: nothing of it stays
                if row is not None:
                    key = _key(row)
                    partition = self._partitions.get(key)
                    if partition is None:
                        partition = self._partitions[key] = Partition(self.dim)
                    self._where[item_id] = (key, partition.append(row, self._codes))
            self.synced = max(self.synced, synced)

    def keyword(self, terms: Sequence[str], filters: Filters, limit: int) -> list[tuple[int, float]]:
        """(item id, BM25 score) of the `limit` best items holding any of `terms` that pass the
        filters, best first."""
        with self._lock:
            partition = self._partitions.get((filters.tenant, filters.space.lower()))
            if partition is None or limit < 1 or not terms:
                return []
            return partition.items(partition.keyword(terms, partition.mask(filters, self._codes), limit))

    def keyword_candidates(self, terms: Sequence[str], filters: Filters, limit: int) -> list[Candidate]:
        """`keyword`'s items as ranking reads them, scored by the negated BM25 score."""
        with self._lock:
            partition = self._partitions.get((filters.tenant, filters.space.lower()))
            if partition is None or limit < 1 or not terms:
                return []
            found = partition.keyword(terms, partition.mask(filters, self._codes), limit)
            return partition.candidates(found, -1.0, self._codes.value)

    def keyword_ceiling(self, terms: Sequence[str], filters: Filters) -> float:
        """What a text of average length holding each of `terms` once would score in `keyword`
        (0 in a space with nothing indexed)."""
        with self._lock:
            partition = self._partitions.get((filters.tenant, filters.space.lower()))
            return 0.0 if partition is None or not partition.live else partition.keyword_ceiling(terms)

    def nearest(self, query: NDArray[np.float32], filters: Filters, limit: int) -> list[tuple[int, float]]:
        """(item id, cosine distance) of the `limit` nearest embedded items that pass the
        filters, nearest first."""
        with self._lock:
            partition = self._partitions.get((filters.tenant, filters.space.lower()))
            if partition is None or limit < 1:
                return []
            return partition.items(self._nearest(partition, query, filters, limit)[0])

    def nearest_candidates(self, query: NDArray[np.float32], filters: Filters, limit: int) -> list[Candidate]:
        """`nearest`'s items as ranking reads them, scored by the cosine distance."""
        with self._lock:
            partition = self._partitions.get((filters.tenant, filters.space.lower()))
            if partition is None or limit < 1:
                return []
            found, parts = self._nearest(partition, query, filters, limit)
            return partition.candidates(found, 1.0, self._codes.value, parts)

    def embedded_passing(self, filters: Filters) -> int:
        """How many embedded items pass the filters."""
        with self._lock:
            partition = self._partitions.get((filters.tenant, filters.space.lower()))
            if partition is None:
                return 0
            keep = partition.mask(filters, self._codes)
            return int(np.count_nonzero(keep & partition.has_vector[: partition.size]))

    def unembedded(self, ids: Sequence[int]) -> list[int]:
        """Of `ids`, those held without a vector, in order (an id not held is left out)."""
        with self._lock:
            places = ((item, self._where.get(item)) for item in ids)
            return [
                item
                for item, place in places
                if place is not None and not self._partitions[place[0]].has_vector[place[1]]
            ]

    def _nearest(
        self, partition: Partition, query: NDArray[np.float32], filters: Filters, limit: int
    ) -> tuple[Found, Parts]:
        keep = partition.mask(filters, self._codes)
        return partition.nearest(np.asarray(query, dtype=np.float32), keep, limit)

    def build_graphs(self) -> int:
        """Build or extend the HNSW graph of every partition with enough vectors; how many rows
        were added to graphs. A new graph is built outside the lock: searches go on meanwhile."""
        if not self.dim:
            return 0  # a copy of words only (no embedder)
        from usearch.index import Index  # loaded when a partition first needs a graph

        added = 0
        for key in list(self._partitions):
            with self._lock:
                partition = self._partitions.get(key)
                if partition is not None and partition.removed:
                    partition.compact()  # what deleted items said leaves the postings
                if partition is None or partition.vectors < GRAPH_MIN_ROWS:
                    continue
                todo = np.flatnonzero(partition.has_vector[: partition.size] & ~partition.in_graph[: partition.size])
                if not len(todo):
                    continue
                if partition.graph is not None:
                    # A few rows more (what was embedded since): added in place, under the lock,
                    # so no search walks the graph while it changes. A row whose vector changed
                    # is replaced.
                    stale = [int(r) for r in todo if partition.graph.contains(int(r))]
                    if stale:
                        partition.graph.remove(stale)
                    partition.graph.add(todo, partition.matrix[todo], threads=1)
                    partition.in_graph[todo] = True
                    added += len(todo)
                    continue
                vectors = partition.matrix[todo]  # a copy: the partition may change meanwhile
            graph = Index(ndim=self.dim, metric="ip", dtype="i8")
            graph.add(todo, vectors, threads=1)
            with self._lock:
                if self._partitions.get(key) is partition and partition.graph is None:
                    # Rows whose vector changed meanwhile stay out of the graph (in_graph False):
                    # the next build replaces them.
                    unchanged = todo[np.all(partition.matrix[todo] == vectors, axis=1) & partition.has_vector[todo]]
                    removed = todo[~partition.alive[todo]]
                    if len(removed):
                        graph.remove(removed)  # deleted while the graph was built: no vector of theirs stays
                    partition.graph = graph
                    partition.in_graph[unchanged] = True
                    added += len(unchanged)
        return added


def _key(row: LocalRow) -> tuple[str, str]:
    return (row.tenant, row.space.lower())

"""One partition of the search index in memory: the items of one (tenant, space), searched.

A partition holds, per item, the fields searches filter on as numbers (`local_fields.py`), its
words as postings (`local_words.py`), and its vector as a row of a float32 matrix once it is
embedded, with an HNSW graph over them once the index built one (`local.py` decides when).
It turns filters into a mask over its rows, scores a keyword search by BM25 and a vector
search exactly (from the rows the mask passes, or the graph's candidates), and gives back the
best rows, best first.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import CONTEXT_WEIGHT, Candidate, Filters
from recall.search.local_fields import Field, Vocabulary
from recall.search.local_words import Postings, stem, words
from recall.search.passage_vectors import PassageVectors

if TYPE_CHECKING:
    from usearch.index import Index

#: When at most this many rows pass the filters, they are scored exactly, graph or not.
EXACT_MAX_ROWS = 8_000
#: Rows scored exactly are multiplied all at once, not gathered first, when more than one in this
#: many pass the filters (`Partition._products`).
GATHER_SHARE = 16
#: A keyword search scores only the postings its filters keep when they keep fewer than one
#: row in this many.
SELECTIVE_SHARE = 4
#: A term held by more than one row in this many is scored from a dense row of its weights (a
#: vector add: a tenth of the scattered add's cost per row at this share), kept beside its
#: postings (4 bytes a row of the partition; the postings of such a term take at least 1.2).
DENSE_SHARE = 10
#: Candidates asked of a graph, per hit wanted, before the filters; and the most it is asked for
#: before the exact scan is cheaper.
GRAPH_OVERSAMPLE = 2
GRAPH_MAX_CANDIDATES = 2_000
#: Above this many scores per hit wanted, the best are first narrowed down by a sample.
SAMPLE_PER_LIMIT = 8
#: Filters whose rows a partition keeps (`Partition.mask`).
_MASKS_KEPT = 8
#: Rows a partition grows by when full.
_GROWTH = 1024

_KIND_CODES = {"message": 0, "memory": 1, "fact": 2}
_KINDS = tuple(_KIND_CODES)
#: What a partition's search found: its rows, best first, and their scores.
Found = tuple[NDArray[np.int64], NDArray[np.floating[Any]]]
_NONE_FOUND: Found = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
#: The part (`core.passages`) each found row matched by: 0 its whole text, n its n-th passage.
Parts = NDArray[np.int32]


def best_positions(scores: NDArray[np.float32], limit: int) -> NDArray[np.int64]:
    """The positions of the `limit` highest scores, ascending; of equal scores at the edge, the
    first. Exact; a strided sample's bound first narrows the selection to a few times `limit`
    scores when there are many (a full partial sort of 100,000 scores costs a millisecond)."""
    positions = np.arange(len(scores))
    step = len(scores) // (SAMPLE_PER_LIMIT * limit)
    if step >= 2:
        sample = scores[::step]
        # About 3 × limit scores lie above the sample's (3 × limit / step)-th highest.
        rank = min(len(sample), -(-3 * limit // step))
        bound = np.partition(sample, len(sample) - rank)[len(sample) - rank]
        narrowed = np.flatnonzero(scores >= bound)
        if len(narrowed) >= limit:  # else (rarely) the whole selection below
            positions, scores = narrowed, scores[narrowed]
    edge = np.partition(scores, len(scores) - limit)[len(scores) - limit]
    above = positions[scores > edge]
    level = positions[scores == edge][: limit - len(above)]
    return np.sort(np.concatenate([above, level]))


@dataclass(frozen=True)
class LocalRow:
    """One item as the copy holds it (a row changed in the store)."""

    item_id: int
    tenant: str
    space: str
    kind: str
    owner: str
    chat_id: str | None
    sender: str | None
    importance: int | None
    created_at: float
    text: str
    context: str
    #: Its text's vector, or (a long text) a matrix: that vector, then one per passage.
    vector: NDArray[np.float32] | None
    #: The id of what it was made from (message, memory or fact).
    source_id: int = 0
    #: What metadata filters match, as canonical JSON text (`metadata.indexed`; None: none).
    metadata: str | None = None


class Partition:
    """The items of one (tenant, space)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.size = 0
        self.live = 0
        self.ids = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.kind = np.zeros(0, dtype=np.int8)
        self.owner = np.zeros(0, dtype=np.int32)
        self.chat = np.zeros(0, dtype=np.int32)
        self.sender = np.zeros(0, dtype=np.int32)
        self.importance = np.zeros(0, dtype=np.int32)
        self.created = np.zeros(0, dtype=np.float64)
        self.source = np.zeros(0, dtype=np.int64)
        #: Characters of each item's text (a ranking feature).
        self.chars = np.zeros(0, dtype=np.int32)
        self.length = np.zeros(0, dtype=np.float32)
        self.total_length = 0.0
        self.terms: dict[str, Postings] = {}
        #: Metadata keys -> their rows and values.
        self.fields: dict[str, Field] = {}
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        #: The passages of long items (their whole vectors are in `matrix`).
        self.passages = PassageVectors(dim)
        self.has_vector = np.zeros(0, dtype=bool)
        self.in_graph = np.zeros(0, dtype=bool)
        self.vectors = 0
        #: The HNSW graph (keys are row numbers), if built.
        self.graph: Index | None = None
        #: Rows removed since the postings were last compacted (`compact`).
        self.removed = 0
        #: The rows recent filters passed (`mask`), until a row is added or removed: a search
        #: asks for its filters' rows twice (words, vectors), and a store's searches mostly
        #: share their filters (0.6 ms a time at 100,000 rows).
        self._masks: dict[Filters, NDArray[np.bool_]] = {}

    # -- writing ------------------------------------------------------------------------------

    def append(self, row: LocalRow, codes: Vocabulary) -> int:
        """Add an item at the end; its row number."""
        self._masks.clear()
        if self.size == len(self.ids):
            self._grow(max(2 * len(self.ids), _GROWTH))
        at = self.size
        self.size += 1
        self.live += 1
        self.ids[at] = row.item_id
        self.alive[at] = True
        self.kind[at] = _KIND_CODES[row.kind]
        self.owner[at] = codes.code(row.owner.lower())
        self.chat[at] = codes.code(row.chat_id or "")
        self.sender[at] = codes.code(row.sender or "")
        self.importance[at] = -1 if row.importance is None else row.importance
        self.created[at] = row.created_at
        self.source[at] = row.source_id
        self.chars[at] = len(row.text)
        counts: dict[str, float] = {term: float(n) for term, n in Counter(words(row.text)).items()}
        length = float(sum(counts.values()))
        if row.context:
            context = Counter(words(row.context))
            for term, times in context.items():
                counts[term] = counts.get(term, 0.0) + CONTEXT_WEIGHT * times
            length += CONTEXT_WEIGHT * sum(context.values())
        for term, n in counts.items():
            postings = self.terms.get(term)
            if postings is None:
                postings = self.terms[term] = Postings()
            postings.rows.append(at)
            postings.counts.append(n)
        self.length[at] = length
        self.total_length += length
        if row.metadata:
            for key, value in json.loads(row.metadata).items():
                found = self.fields.get(key)
                if found is None:
                    found = self.fields[key] = Field()
                found.add(at, value)
        self.set_vector(at, row.vector)
        return at

    def set_vector(self, at: int, vector: NDArray[np.float32] | None) -> None:
        had = bool(self.has_vector[at])
        if vector is None:
            self.has_vector[at] = False
            self.passages.drop(at)
        else:
            self.matrix[at] = vector[0] if vector.ndim == 2 else vector
            self.passages.set(at, vector[1:] if vector.ndim == 2 else None)
            self.has_vector[at] = True
            self.in_graph[at] = False  # a new vector for this row: the graph's is stale
        self.vectors += int(self.has_vector[at]) - int(had)

    def remove(self, at: int) -> None:
        """A deleted item: never found again, and its vector is gone from the copy (the matrix and
        the graph) at once; its words leave the postings at the next `compact`."""
        self._masks.clear()
        self.alive[at] = False
        self.live -= 1
        self.removed += 1
        self.total_length -= float(self.length[at])
        self.set_vector(at, None)
        self.matrix[at] = 0.0
        if self.graph is not None and self.graph.contains(at):
            self.graph.remove(at)

    def compact(self) -> None:
        """Drop removed rows from the postings, and the terms no live row holds any more."""
        alive = self.alive
        for term in list(self.terms):
            postings = self.terms[term]
            rows = np.frombuffer(postings.rows, dtype=np.int64)
            keep = alive[rows]
            if keep.all():
                continue
            if not keep.any():
                del self.terms[term]
                continue
            fresh = Postings()
            fresh.rows.frombytes(rows[keep].tobytes())
            fresh.counts.frombytes(np.frombuffer(postings.counts, dtype=np.float32)[keep].tobytes())
            self.terms[term] = fresh
        for key in list(self.fields):
            field = self.fields[key].compacted(alive)
            if field is None:
                del self.fields[key]
            else:
                self.fields[key] = field
        self.removed = 0

    def _grow(self, capacity: int) -> None:
        """New, larger arrays; a search or graph build holding the old ones reads them unchanged."""

        def grown(old: NDArray[Any]) -> NDArray[Any]:
            bigger = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            bigger[: self.size] = old[: self.size]
            return bigger

        names = (
            "ids",
            "alive",
            "kind",
            "owner",
            "chat",
            "sender",
            "importance",
            "created",
            "source",
            "chars",
            "length",
        )
        for name in (*names, "matrix"):
            setattr(self, name, grown(getattr(self, name)))
        self.has_vector, self.in_graph = grown(self.has_vector), grown(self.in_graph)

    # -- searching ------------------------------------------------------------------------------

    def mask(self, f: Filters, codes: Vocabulary) -> NDArray[np.bool_]:
        """The rows that pass the filters (read-only: it is kept for the next search)."""
        keep = self._masks.get(f)
        if keep is None:
            keep = self._filtered(f, codes)
            keep.flags.writeable = False
            if len(self._masks) >= _MASKS_KEPT:
                self._masks.pop(next(iter(self._masks)))
            self._masks[f] = keep
        return keep

    def _filtered(self, f: Filters, codes: Vocabulary) -> NDArray[np.bool_]:
        n = self.size
        keep = self.alive[:n].copy()
        kinds = [_KIND_CODES[k] for k in f.kinds if k in _KIND_CODES]
        if len(kinds) == 1:  # one kind (the recalled past's messages): a comparison, not a set look-up
            keep &= self.kind[:n] == kinds[0]
        elif len(kinds) < len(_KIND_CODES):
            keep &= np.isin(self.kind[:n], kinds)
        if not keep.any():  # e.g. memories asked of a world that has none: no more to compare
            return keep
        if f.owners is not None:
            keep &= np.isin(self.owner[:n], codes.known(f.owners))
        for column, value in ((self.chat, f.chat_id), (self.sender, f.sender)):
            if value is not None:
                known = codes.known([value])
                keep &= column[:n] == (known[0] if known else -2)
        if f.since is not None:
            keep &= self.created[:n] >= f.since
        if f.until is not None:
            keep &= self.created[:n] < f.until
        if f.min_importance is not None:
            keep &= self.importance[:n] >= f.min_importance
        for condition in f.metadata:
            field = self.fields.get(condition.key)
            if field is None:  # no item has the key: none passes
                keep[:] = False
                break
            keep &= field.passing(condition, n)
        return keep

    def keyword(self, terms: Sequence[str], keep: NDArray[np.bool_], limit: int) -> Found:
        """The `limit` best rows `keep` passes that hold a term, best first, with their BM25 scores."""
        n = self.size
        if not self.live:
            return _NONE_FOUND
        kept = int(np.count_nonzero(keep))
        if not kept:
            return _NONE_FOUND
        # Filters that keep few rows (a world's memories among its messages): only their
        # postings are scored. The idf stays the whole partition's.
        selective = kept * SELECTIVE_SHARE < n
        scores = np.zeros(n, dtype=np.float32)
        average = max(self.total_length / self.live, 1e-9)
        for term in dict.fromkeys(stem(t) for t in terms):
            postings = self.terms.get(term)
            if postings is None:
                continue
            idf = self._idf(len(postings.rows))
            if not selective and len(postings.rows) * DENSE_SHARE > n:
                scores += postings.dense(n, self.length, average, idf)
                continue
            rows, weights = postings.weights(self.length, average, idf)
            if selective:
                passing = keep[rows]
                rows, weights = rows[passing], weights[passing]
            np.add.at(scores, rows, weights)
        scores *= keep  # what the filters leave out scores 0, and only rows above 0 are hits
        found = best_positions(scores, limit) if np.count_nonzero(scores) > limit else np.flatnonzero(scores)
        top = self._best(scores[found], limit)
        return found[top], scores[found][top]

    def keyword_ceiling(self, terms: Sequence[str]) -> float:
        """The BM25 score of a text of average length holding each of `terms` once: the sum of
        their idfs (a word no item holds has the highest)."""
        found = (self.terms.get(term) for term in dict.fromkeys(stem(t) for t in terms))
        return math.fsum(self._idf(0 if postings is None else len(postings.rows)) for postings in found)

    def _idf(self, df: int) -> float:
        return math.log(1 + (self.live - df + 0.5) / (df + 0.5))

    def nearest(self, query: NDArray[np.float32], keep: NDArray[np.bool_], limit: int) -> tuple[Found, Parts]:
        """The `limit` nearest rows `keep` passes, nearest first, with their cosine distances and
        the part each matched by (a long item's best passage, less its penalty, where that beats
        its whole vector: `passage_vectors`)."""
        keep = keep & self.has_vector[: self.size]
        if not keep.any():
            return _NONE_FOUND, np.zeros(0, dtype=np.int32)
        rows = self._scored_rows(query, keep, limit)
        similarity = self._products(rows, query)
        parts = np.zeros(len(rows), dtype=np.int32)
        if self.passages.live:
            rows, similarity, parts = self.passages.joined(rows, similarity, query, keep, self.matrix)
        top = self._best(similarity, limit)
        return (rows[top], 1.0 - similarity[top].astype(np.float64)), parts[top]

    def _scored_rows(self, query: NDArray[np.float32], keep: NDArray[np.bool_], limit: int) -> NDArray[np.int64]:
        """The rows to score exactly: every row `keep` passes, or (a partition with a graph and
        many passing) the graph's candidates and the rows embedded since it was extended."""
        passing = int(keep.sum())
        if passing <= EXACT_MAX_ROWS or self.graph is None:
            return np.flatnonzero(keep)
        wanted = min(self.size, math.ceil(GRAPH_OVERSAMPLE * limit * self.size / passing))
        # Rows embedded since the graph was last extended are scored exactly beside its candidates.
        recent = np.flatnonzero(keep & ~self.in_graph[: self.size])
        while wanted <= GRAPH_MAX_CANDIDATES:
            found = self.graph.search(query, wanted).keys.astype(np.int64)
            found = found[keep[found]] if len(found) else found
            if len(found) >= limit or wanted >= self.vectors:
                return np.union1d(found, recent)
            wanted *= 4
        # Too few candidates pass: scoring every row costs less than asking the graph deeper.
        return np.flatnonzero(keep)

    def _products(self, rows: NDArray[np.int64], query: NDArray[np.float32]) -> NDArray[np.float32]:
        """The query's product with each row's vector. Where a large share of the rows is wanted,
        the product of all rows is taken and the wanted ones picked from it: gathering rows out
        of the matrix costs ~30 times more per row than multiplying one (10,000 of 384
        dimensions: 3.3 ms gathered, 0.1 ms all at once)."""
        if len(rows) * GATHER_SHARE > self.size:
            return _product(self.matrix[: self.size], query)[rows]
        return _product(self.matrix[rows], query)

    def _best(self, scores: NDArray[np.floating[Any]], limit: int) -> NDArray[np.int64]:
        """The positions of the `limit` best scores, best first; equal scores in position order."""
        top = best_positions(scores, limit) if len(scores) > limit else np.arange(len(scores))
        return top[np.argsort(-scores[top], kind="stable")]

    def items(self, found: Found) -> list[tuple[int, float]]:
        """(item id, score) of found rows."""
        rows, scores = found
        return list(zip(self.ids[rows].tolist(), scores.tolist(), strict=True))

    def candidates(
        self, found: Found, sign: float, value: Callable[[int], str], parts: Parts | None = None
    ) -> list[Candidate]:
        """Found rows as ranking reads them, each score times `sign` (lower is better there) and
        with the part it matched by (`nearest`; else 0); `value` reads a coded sender or chat."""
        rows, scores = found
        columns = zip(
            self.ids[rows].tolist(),
            self.kind[rows].tolist(),
            self.source[rows].tolist(),
            self.sender[rows].tolist(),
            self.chat[rows].tolist(),
            self.created[rows].tolist(),
            self.chars[rows].tolist(),
            (scores * sign).tolist(),
            [0] * len(rows) if parts is None else parts.tolist(),
            strict=True,
        )
        return [
            Candidate(
                item, _KINDS[kind], source, value(sender) or None, value(chat) or None, created, chars, score, part
            )
            for item, kind, source, sender, chat, created, chars, score, part in columns
        ]


def _product(matrix: NDArray[np.float32], query: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row's product with the query, on this thread: numpy's `@` would hand a product this
    small to OpenBLAS's threads, which then spin on the cores the embedding model and SQLite
    need (a RecallStore query search over 10,000 items: 21.8 ms against 13.9 ms with BLAS on
    one thread), for no gain (a 12,000 × 384 product: 0.95 ms on two threads, 0.76 here)."""
    product: NDArray[np.float32] = np.einsum("ij,j->i", matrix, query)
    return product

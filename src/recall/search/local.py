"""The search index in memory: BM25 and nearest neighbours in milliseconds, with filters.

The store keeps every item and vector (it is the source of truth); each process holds this
copy, loaded from it and kept in step by `LocalIndex.apply` (the rows changed since the last
sync). Items are grouped in partitions, one per (tenant, space), as the store's searches are:
another tenant's or space's item is never scored.

A partition holds, per item, the fields searches filter on as numbers (strings become codes of
one vocabulary), its words as postings (term -> rows and weighted counts), its metadata as
postings too (key -> value -> rows, and each key's numbers beside their rows: `_Field`), and its
vector as a row of a float32 matrix once it is embedded. A search

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

Words: lowercased, accents dropped, Snowball (Porter 2) stems. A message's text counts 1, the turn before it (`context`) 0.5: an answer
is often a short reply whose question holds the words a search uses.
"""

from __future__ import annotations

import json
import math
import operator
import threading
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import CONTEXT_WEIGHT, WORD, Candidate, Filters
from recall.search.metadata import Condition, canonical
from recall.search.passage_vectors import PassageVectors

if TYPE_CHECKING:
    from usearch.index import Index

#: Partitions with at least this many vectors get an HNSW graph; below it the exact scan (a
#: 384-d product with 20,000 rows) takes about a millisecond.
GRAPH_MIN_ROWS = 20_000
#: When at most this many rows pass the filters, they are scored exactly, graph or not.
EXACT_MAX_ROWS = 8_000
#: Rows scored exactly are multiplied all at once, not gathered first, when more than one in this
#: many pass the filters (`_Partition._products`).
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
#: BM25's term-frequency saturation and length normalisation (the usual values, FTS5's too).
BM25_K1 = 1.2
BM25_B = 0.75
#: Above this many scores per hit wanted, the best are first narrowed down by a sample.
SAMPLE_PER_LIMIT = 8
#: Filters whose rows a partition keeps (`_Partition.mask`).
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


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: loaded with the search index, not with `import recall`

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A lowercased word as the index holds it: accents dropped, then its Snowball stem."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
    return str(_stemmer().stemWord(plain))


def words(text: str) -> list[str]:
    """The terms of a text, in order, repeats kept."""
    return [stem(w) for w in WORD.findall(text.lower())]


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


class _Vocabulary:
    """Strings as small integers, so filters compare numbers."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self._values: list[str] = []

    def code(self, value: str) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self._codes)
            self._values.append(value)
        return found

    def value(self, code: int) -> str:
        return self._values[code]

    def known(self, values: Iterable[str]) -> list[int]:
        """The codes of the values seen so far (a value never seen matches no row)."""
        return [self._codes[v] for v in values if v in self._codes]


class _Postings:
    """The rows holding one term and its weighted count in each (appended in row order)."""

    __slots__ = ("rows", "counts", "_weights", "_weighed", "_dense", "_densed")

    def __init__(self) -> None:
        self.rows = array("q")
        self.counts = array("f")
        self._weights: NDArray[np.float32] | None = None
        self._weighed: tuple[int, float, float] = (0, 0.0, 0.0)
        self._dense: NDArray[np.float32] | None = None
        self._densed: tuple[int, int, float, float] = (0, 0, 0.0, 0.0)

    def weights(
        self, length: NDArray[Any], average: float, idf: float
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The rows, and each row's BM25 score for the term: `idf` × its term-frequency weight
        (length-normalised against `average`): kept until a row is added or the average length
        moves, so a term searched again in a store that did not change costs one gather."""
        rows = np.frombuffer(self.rows, dtype=np.int64)
        if self._weights is None or self._weighed != (len(rows), average, idf):
            counts = np.frombuffer(self.counts, dtype=np.float32)
            # Length normalisation of just the rows holding the term, not of the whole partition.
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length[rows] / average)
            weights = counts * (BM25_K1 + 1) / (counts + norm)
            self._weights = np.float32(idf) * weights.astype(np.float32)
            self._weighed = (len(rows), average, idf)
        return rows, self._weights

    def dense(self, size: int, length: NDArray[Any], average: float, idf: float) -> NDArray[np.float32]:
        """The weights of `weights` as a row per partition row (0 where the term is not), of
        the partition's first `size` rows: kept as long as those weights are."""
        if self._dense is None or self._densed != (size, len(self.rows), average, idf):
            rows, weights = self.weights(length, average, idf)
            dense = np.zeros(size, dtype=np.float32)
            dense[rows] = weights  # a row holds the term once: no two weights meet
            self._dense, self._densed = dense, (size, len(rows), average, idf)
        return self._dense


_COMPARE = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


class _Field:
    """The rows whose metadata holds one key: all of them, by value (canonical JSON text), and
    those whose value is a number with that number (appended in row order)."""

    __slots__ = ("rows", "values", "number_rows", "numbers")

    def __init__(self) -> None:
        self.rows = array("q")
        self.values: dict[str, array[int]] = {}
        self.number_rows = array("q")
        self.numbers = array("d")

    def add(self, at: int, value: object) -> None:
        self.rows.append(at)
        text = canonical(value)  # type: ignore[arg-type]  # `metadata.indexed` keeps only scalars
        rows = self.values.get(text)
        if rows is None:
            rows = self.values[text] = array("q")
        rows.append(at)
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.number_rows.append(at)
            self.numbers.append(float(value))

    def passing(self, c: Condition, n: int) -> NDArray[np.bool_]:
        """The rows (of `n`) whose value passes `c`."""
        found = np.zeros(n, dtype=bool)
        if c.op in ("$eq", "$in", "$ne"):
            if c.op == "$ne":
                found[np.frombuffer(self.rows, dtype=np.int64)] = True
            for value in c.values:
                equal = self.values.get(canonical(value))
                if equal is not None:
                    found[np.frombuffer(equal, dtype=np.int64)] = c.op != "$ne"
        elif self.numbers:
            numbers = np.frombuffer(self.numbers, dtype=np.float64)
            rows = np.frombuffer(self.number_rows, dtype=np.int64)
            found[rows[_COMPARE[c.op](numbers, float(c.values[0]))]] = True  # type: ignore[arg-type]  # a number (parse)
        return found

    def compacted(self, alive: NDArray[np.bool_]) -> _Field | None:
        """This key's rows that are alive (None: none is)."""
        rows = np.frombuffer(self.rows, dtype=np.int64)
        keep = alive[rows]
        if keep.all():
            return self
        if not keep.any():
            return None
        fresh = _Field()
        fresh.rows.frombytes(rows[keep].tobytes())
        for value, found in self.values.items():
            alive_rows = np.frombuffer(found, dtype=np.int64)
            alive_rows = alive_rows[alive[alive_rows]]
            if len(alive_rows):
                fresh.values[value] = array("q", alive_rows.tobytes())
        number_rows = np.frombuffer(self.number_rows, dtype=np.int64)
        numbers = alive[number_rows]
        fresh.number_rows.frombytes(number_rows[numbers].tobytes())
        fresh.numbers.frombytes(np.frombuffer(self.numbers, dtype=np.float64)[numbers].tobytes())
        return fresh


class _Partition:
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
        self.terms: dict[str, _Postings] = {}
        #: Metadata keys -> their rows and values.
        self.fields: dict[str, _Field] = {}
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

    def append(self, row: LocalRow, codes: _Vocabulary) -> int:
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
                postings = self.terms[term] = _Postings()
            postings.rows.append(at)
            postings.counts.append(n)
        self.length[at] = length
        self.total_length += length
        if row.metadata:
            for key, value in json.loads(row.metadata).items():
                found = self.fields.get(key)
                if found is None:
                    found = self.fields[key] = _Field()
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
            fresh = _Postings()
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

    def mask(self, f: Filters, codes: _Vocabulary) -> NDArray[np.bool_]:
        """The rows that pass the filters (read-only: it is kept for the next search)."""
        keep = self._masks.get(f)
        if keep is None:
            keep = self._filtered(f, codes)
            keep.flags.writeable = False
            if len(self._masks) >= _MASKS_KEPT:
                self._masks.pop(next(iter(self._masks)))
            self._masks[f] = keep
        return keep

    def _filtered(self, f: Filters, codes: _Vocabulary) -> NDArray[np.bool_]:
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


class LocalIndex:
    """A store's search index in memory, by partition. Thread-safe: searches, syncs and graph
    builds may come from different threads."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._partitions: dict[tuple[str, str], _Partition] = {}
        #: Where each item's row is: (partition key, row number).
        self._where: dict[int, tuple[tuple[str, str], int]] = {}
        self._codes = _Vocabulary()
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
                        partition = self._partitions[key] = _Partition(self.dim)
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
        self, partition: _Partition, query: NDArray[np.float32], filters: Filters, limit: int
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

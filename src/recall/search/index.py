"""The search index: keyword (BM25), vector and hybrid search over messages, long-term memories
(notes) and facts. What it keeps, and how items reach it, is `index_items.IndexItems`; this adds
embedding them and searching.

Every item is embedded later (`embed_pending`), off the request path: posting never waits for a
model. Until its vector is stored an item is still found by keyword.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import numpy as np
from numpy.typing import NDArray

from recall.limits import check_time
from recall.search.backend import SearchBackend
from recall.search.base import (
    ITEM_COLUMNS,
    KINDS,
    MAX_PARAMS,
    MESSAGE_BATCH,
    Candidate,
    Filters,
    Method,
    Ranked,
    SearchHit,
    hit,
    marks,
    query_terms,
    similarity,
)
from recall.search.checks import check_query, search_filters
from recall.search.index_items import IndexItems
from recall.search.pending import Space, embed_pending
from recall.search.ranking import hybrid_depth, rank, relevance
from recall.search.when import named_periods

if TYPE_CHECKING:
    from recall.search.embeddings import Embedder
    from recall.search.local import LocalIndex

#: Keyword candidates not embedded yet that a hybrid search embeds itself, at most.
UNEMBEDDED_MAX = 16
#: Texts whose query-time vectors are kept for the next searches (`FreshVectors`).
FRESH_VECTORS = 2048


class SearchOptions(TypedDict, total=False):
    """The options of `SearchIndex.ranked` that `search` passes on."""

    kinds: Sequence[str]
    k: int
    method: Method
    owners: Sequence[str] | None
    chat_id: str | None
    sender: str | None
    since: datetime | None
    until: datetime | None
    min_importance: int | None
    metadata: Mapping[str, Any] | None
    now: datetime | None


class FreshVectors:
    """The vectors of texts a search embedded itself (keyword candidates the indexer has not
    reached yet), the most recent FRESH_VECTORS of them, by text: while a backlog is being
    embedded, the searches of a conversation meet the same fresh posts again and again, and
    each would embed them anew (16 texts, ~100 ms on a core the indexer also uses)."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> list[NDArray[np.float32]]:
        """Each text's vector: kept ones again, the others embedded (in one call) and kept."""
        found: dict[str, NDArray[np.float32]] = {}
        with self._lock:
            for text in texts:
                if text in self._vectors:
                    self._vectors.move_to_end(text)
                    found[text] = self._vectors[text]
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            made = np.asarray(embedder.embed(missing), dtype=np.float32)
            found.update(zip(missing, made, strict=True))
            with self._lock:
                self._vectors.update(zip(missing, made, strict=True))
                while len(self._vectors) > FRESH_VECTORS:
                    self._vectors.popitem(last=False)
        return [found[text] for text in texts]


class SearchIndex(IndexItems):
    """The search index of one store, on a backend's primitives.

    With `embedder` None the index is keyword-only: nothing is embedded and vector or
    hybrid searches run as BM25 (their hits say `method='bm25'`).
    """

    def __init__(self, backend: SearchBackend, embedder: Embedder | None = None) -> None:
        super().__init__(backend, embedder)
        #: Texts embedded at query time, until the indexer stores their vectors.
        self._fresh = FreshVectors()

    def embed_pending(
        self, batch: int = 64, space: Space | None = None, should_stop: Callable[[], bool] | None = None
    ) -> int:
        """Embed up to `batch` items not embedded yet (in `space` alone: a world's), oldest first
        (fewer where long texts' passages reach `embed_now.EMBED_MAX_TEXTS`); how many items were stored
        (`pending.embed_pending`). `should_stop()`, asked between runs of the model, ends the
        round early with nothing stored."""
        return embed_pending(self, batch, space, should_stop)

    def step(self, batch: int = 64, should_stop: Callable[[], bool] | None = None) -> int:
        """One bounded round of indexing: copy a batch of new messages, embed a batch of items
        (`should_stop` as for `embed_pending`). The work done (messages copied + vectors
        stored); 0 means nothing was left."""
        return self.index_messages(MESSAGE_BATCH) + self.embed_pending(batch, should_stop=should_stop)

    def maintain(self) -> int:
        """Keep what this process searches with up to date, off the request path: the copy in
        memory brought in step, the HNSW graphs of its large partitions built or extended; rows
        added to graphs. A process that only indexes (the index worker) never calls it."""
        return self._backend.copy.in_step().build_graphs()

    def catch_up(self, batch: int = 64, should_stop: Callable[[], bool] | None = None) -> int:
        """Index and embed until nothing is pending (or `should_stop()` says so); the work done."""
        total = 0
        while should_stop is None or not should_stop():
            done = self.step(batch, should_stop)
            if done == 0:
                break
            total += done
        return total

    # -- searching --------------------------------------------------------------------------

    def search(self, query: str, *, tenant: str, space: str, **options: Unpack[SearchOptions]) -> list[SearchHit]:
        """The `k` best items of one tenant's space for `query`, best first: `ranked`, with each
        item's row read (an item deleted by another process since is left out), scored by its
        relevance (`relevances`)."""
        found = self.ranked(query, tenant=tenant, space=space, **options)
        if not found:
            return []
        ids = [r.id for r in found]
        rows = {
            row[0]: row
            for row in self._read(f"SELECT {ITEM_COLUMNS} FROM search_items s WHERE s.id IN ({marks(ids)})", ids)
        }
        scores = self.relevances(query, tenant, space, found)
        return [
            hit(rows[r.id], r._replace(score=score)) for r, score in zip(found, scores, strict=True) if r.id in rows
        ]

    def relevances(self, query: str, tenant: str, space: str, found: Sequence[Ranked]) -> list[float]:
        """Each hit's relevance, 0..1, in the order of its score (a search's hits stay in order):
        for hybrid, the ranking model's probability with the rarity of answers among the
        candidates taken out (`ranking.relevance`); for vector, the cosine similarity; for
        bm25, the keyword score over that of a text holding each of the query's words once
        (capped at 1: a text with all of them scores about 1, one with a common word of several
        little)."""
        if not found or found[0].method != "bm25":
            return [relevance(r.score) if r.method == "hybrid" else r.score for r in found]
        filters = search_filters(tenant, space, KINDS, None, None, None, None, None, None)
        ceiling = self._backend.copy.in_step().keyword_ceiling(query_terms(query), filters)
        return [min(1.0, r.score / ceiling) if ceiling > 0 else 0.0 for r in found]

    def ranked(
        self,
        query: str,
        *,
        tenant: str,
        space: str,
        kinds: Sequence[str] = KINDS,
        k: int = 10,
        method: Method = "hybrid",
        owners: Sequence[str] | None = None,
        chat_id: str | None = None,
        sender: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        exclude: Collection[int] = (),
    ) -> list[Ranked]:
        """The `k` best items of one tenant's space for `query`, best first, before their rows
        are read: ids, source ids and scores (`search` reads the rows; the recalled past reads
        the messages themselves).

        Filters: `kinds`; `owners` the owners whose items are visible (None: all; '' is the
        shared owner, so an agent passes ['', agent_id]); `chat_id` ('' = the default chat);
        `sender`; `since` (inclusive) and `until` (exclusive); `min_importance` (keeps only
        items with an importance, i.e. memories); `metadata`, conditions on the metadata of
        messages and memories (`metadata.parse`: facts never pass one). Every filter applies
        before the `k` best are picked. A hybrid search favours items from the times
        the query names; `now` is when relative ones ("last week") count back from (default:
        the current time). `exclude`: ids of messages that are no candidates at all (a context's
        incoming messages, whose words are the query: they would match best of all and set the
        scale every other candidate's keyword and similarity features are measured on).
        """
        check_query(query, k, method)
        filters = search_filters(tenant, space, kinds, owners, chat_id, sender, since, until, min_importance, metadata)
        if now is not None:
            now = check_time("now", now)
        if not query.strip() or filters.owners == ():
            return []
        ran: Method = method if self.embedder is not None else "bm25"
        local = self._backend.copy.in_step()  # once per search: on PostgreSQL, a round trip

        def kept(found: list[Candidate]) -> list[Candidate]:
            if not exclude:
                return found
            return [c for c in found if c.kind != "message" or c.source_id not in exclude]

        more = len(exclude)  # so `k` are left when the excluded are among the best
        if ran == "bm25":
            return [
                # Positional: a context build ranks hundreds (keywords cost a slower path).
                Ranked(c.id, c.kind, c.source_id, -c.score, ran, place, None, None, None, None, c.sender, c.chat_id)
                for place, c in enumerate(kept(self._keyword(local, query, filters, k + more))[:k], 1)
            ]
        if ran == "vector":
            return [
                Ranked(
                    c.id,
                    c.kind,
                    c.source_id,
                    similarity(c.score),
                    ran,
                    vector_rank=place,
                    similarity=similarity(c.score),
                    sender=c.sender,
                    chat_id=c.chat_id,
                    part=c.part,
                )
                for place, c in enumerate(
                    kept(self._vector(local, self._query_vector(query), filters, k + more))[:k], 1
                )
            ]
        embedded = self._query_vector(query)
        keyword, vector, neighbours = self._candidates(local, query, embedded, filters, k)
        keyword, vector = kept(keyword), kept(vector)
        unembedded = self._unembedded(local, embedded, keyword, vector)
        return rank(query, keyword, vector, neighbours, k, unembedded, named_periods(query, now))

    def candidates(
        self, query: str, *, tenant: str, space: str, kinds: Sequence[str] = KINDS, k: int = 10
    ) -> tuple[list[Candidate], list[Candidate], dict[int, tuple[int | None, int | None]]]:
        """What a hybrid search for `k` hits ranks: each method's candidates, best first, and
        the neighbours among them (`ranking.features` says what is made of them). For fitting
        and explaining the ranking (bench/locomo_fit.py)."""
        check_query(query, k, "hybrid")
        filters = search_filters(tenant, space, kinds, None, None, None, None, None, None)
        return self._candidates(self._backend.copy.in_step(), query, self._query_vector(query), filters, k)

    def _query_vector(self, query: str) -> Callable[[], NDArray[np.float32]]:
        """The query's vector, embedded when first asked for, then kept: a hybrid search may
        need it twice (its vector candidates, its keyword candidates not embedded yet) or not
        at all (nothing passing its filters has a vector)."""

        @functools.cache
        def vector() -> NDArray[np.float32]:
            assert self.embedder is not None
            first: NDArray[np.float32] = np.asarray(self.embedder.embed([query]), dtype=np.float32)[0]
            return first

        return vector

    def _candidates(
        self, local: LocalIndex, query: str, embedded: Callable[[], NDArray[np.float32]], filters: Filters, k: int
    ) -> tuple[list[Candidate], list[Candidate], dict[int, tuple[int | None, int | None]]]:
        depth = hybrid_depth(k)
        keyword, vector = self._keyword(local, query, filters, depth), self._vector(local, embedded, filters, depth)
        return keyword, vector, self._neighbours([*keyword, *vector])

    def _unembedded(
        self,
        local: LocalIndex,
        embedded: Callable[[], NDArray[np.float32]],
        keyword: Sequence[Candidate],
        vector: Sequence[Candidate],
    ) -> dict[int, float]:
        """The similarity to the query of keyword candidates not embedded yet (recent posts),
        embedded now: at most UNEMBEDDED_MAX, the best-ranked first (also when nothing of the
        space is embedded yet: what was just written scores by its meaning at once)."""
        if self.embedder is None:
            return {}
        found = {c.id for c in vector}
        ids = local.unembedded([c.id for c in keyword if c.id not in found])
        if not ids:
            return {}
        rows = self._read(
            f"SELECT id, text FROM search_items WHERE {self._backend.not_embedded} AND id IN ({marks(ids)})", ids
        )
        order = {item: place for place, item in enumerate(ids)}
        rows = sorted(rows, key=lambda r: order[r[0]])[:UNEMBEDDED_MAX]
        if not rows:
            return {}
        vectors = self._fresh.embed(self.embedder, [str(r[1]) for r in rows])
        query_vector = embedded()
        return {int(r[0]): similarity(1.0 - float(v @ query_vector)) for r, v in zip(rows, vectors, strict=True)}

    def _neighbours(self, candidates: Sequence[Candidate]) -> dict[int, tuple[int | None, int | None]]:
        """For each message among the candidates, the items of the messages just before and
        after it in its chat (None where that message is not among them)."""
        by_message = {int(c.source_id): int(c.id) for c in candidates if c.kind == "message"}
        ids = list(by_message)[:MAX_PARAMS]
        if not ids:
            return {}
        found = self._read(
            "SELECT m.id,"
            " (SELECT MAX(p.id) FROM messages p WHERE p.world_id = m.world_id AND p.chat_id = m.chat_id AND p.id < m.id),"
            " (SELECT MIN(n.id) FROM messages n WHERE n.world_id = m.world_id AND n.chat_id = m.chat_id AND n.id > m.id)"
            f" FROM messages m WHERE m.id IN ({marks(ids)})",
            ids,
        )
        return {
            by_message[int(m)]: (
                None if before is None else by_message.get(int(before)),
                None if after is None else by_message.get(int(after)),
            )
            for m, before, after in found
        }

    def _keyword(self, local: LocalIndex, query: str, filters: Filters, limit: int) -> list[Candidate]:
        terms = query_terms(query)
        return local.keyword_candidates(terms, filters, limit) if terms else []

    def _vector(
        self, local: LocalIndex, embedded: Callable[[], NDArray[np.float32]], filters: Filters, limit: int
    ) -> list[Candidate]:
        if self.embedder is None or not local.embedded_passing(filters):
            return []  # nothing to compare the query with: it is not embedded for nothing
        return local.nearest_candidates(embedded(), filters, limit)

"""The search index: keyword (BM25), vector and hybrid search over messages, long-term memories
(notes) and facts, written once over a database's primitives (`base.SearchBackend`).

Everything searchable is copied into `search_items` with the fields searches filter on; the
backend indexes its text for full-text search and, once embedded, stores its vector.

Messages reach the index in batches (`index_messages`, from a watermark) and every item is
embedded later (`embed_pending`), off the request path: posting never waits for a model.
Until its vector is stored an item is still found by keyword. Progress lives in the database
(the watermark in `search_state`, an `embedded` flag per item), so a restarted process, or
another one, carries on where the last stopped.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, Unpack

import numpy as np
from numpy.typing import NDArray

from recall.core.routing import private_owner
from recall.errors import InvalidInputError
from recall.limits import check_time
from recall.search.base import (
    ITEM_COLUMNS,
    KINDS,
    MAX_PARAMS,
    MESSAGE_BATCH,
    Candidate,
    Filters,
    IndexItem,
    ItemRow,
    Method,
    Ranked,
    SearchBackend,
    SearchHit,
    hit,
    indexed_text,
    marks,
    query_terms,
    similarity,
)
from recall.search.checks import check_id, check_kinds, check_query, item_row, search_filters
from recall.search.embed_now import EMBED_MAX_TEXTS as EMBED_MAX_TEXTS  # where it was defined before
from recall.search.metadata import indexed
from recall.search.pending import Space, embed_pending
from recall.search.ranking import hybrid_depth, rank, relevance
from recall.search.when import named_periods
from recall.store.rows import load_json

if TYPE_CHECKING:
    from recall.search.embeddings import Embedder
    from recall.search.local import LocalIndex

#: Keyword candidates not embedded yet that a hybrid search embeds itself, at most.
UNEMBEDDED_MAX = 16
#: Texts whose query-time vectors are kept for the next searches (`FreshVectors`).
FRESH_VECTORS = 2048
#: Largest embedding dimension accepted (backends write it into their DDL, so it is checked).
MAX_DIM = 8192

_STATE_MESSAGES = "messages"
#: Messages as the index copies them (then a condition on `m.id`).
_MESSAGE_ROWS = (
    "SELECT m.id, m.world_id, w.tenant, m.chat_id, m.sender, m.content, m.metadata, m.created_at, w.id"
    " FROM messages m JOIN worlds w ON w.key = m.world_id"
)
_STATE_MODEL = "vector_model"
#: Left by the migration that gave items their `metadata`: the id of the last item given it since.
_STATE_METADATA = "metadata_backfill"
#: Items given their metadata per transaction by `_backfill_metadata`.
_BACKFILL_PAGE = 2000
_SET_STATE = (
    "INSERT INTO search_state (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)


def model_key(name: str, dim: int) -> int:
    """A stable 63-bit number for the embedding model (search_state holds integers)."""
    return int.from_bytes(hashlib.sha256(f"{name}\n{dim}".encode()).digest()[:8], "big") >> 1


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


class _Before(NamedTuple):
    """The message before another in its chat: its id, indexed text, and whether it is for one
    agent alone."""

    id: int
    text: str
    private: bool


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


class SearchIndex:
    """The search index of one store, on a backend's primitives.

    With `embedder` None the index is keyword-only: nothing is embedded and vector or
    hybrid searches run as BM25 (their hits say `method='bm25'`).
    """

    def __init__(self, backend: SearchBackend, embedder: Embedder | None = None) -> None:
        self._backend = backend
        self._store = backend.store
        self.embedder = embedder
        #: Whether the embedding model's key is recorded (written with the first vectors).
        self._model_recorded = False
        #: Texts embedded at query time, until the indexer stores their vectors.
        self._fresh = FreshVectors()
        if embedder is not None:
            dim = embedder.dim
            if isinstance(dim, bool) or not isinstance(dim, int) or not 0 < dim <= MAX_DIM:
                raise InvalidInputError("embedder.dim", f"must be a whole number 1-{MAX_DIM}, got {dim!r}")
            backend.copy.hold_vectors(dim)
            self._check_model(model_key(embedder.name, dim))
        self._backfill_metadata()

    @property
    def has_vectors(self) -> bool:
        """Whether vector search is available (an embedder is configured)."""
        return self.embedder is not None

    def _sql(self, statement: str) -> str:
        return self._backend.sql(statement)

    def _read(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._store._read(self._sql(statement), params)

    # -- the embedding model and the vector storage -------------------------------------

    def _check_model(self, key: int) -> None:
        """Vectors of another model (or dimension) are meaningless to this one: if the stored
        vectors were made by a different embedder, drop them all and embed everything again."""
        rows = self._read("SELECT value FROM search_state WHERE name = ?", (_STATE_MODEL,))
        stored = int(rows[0][0]) if rows else None
        if stored == key:
            self._model_recorded = True
            return
        if stored is None and not self._backend.vectors_exist():
            return  # nothing embedded yet; the key is written with the first vectors
        with self._store._write() as db:
            self._backend.lock_indexing(db)
            self._backend.drop_vectors(db)
            db.execute(self._sql("DELETE FROM search_state WHERE name = ?"), (_STATE_MODEL,))

    def _record_model(self, db: Any) -> None:
        """Record which model made the vectors (in the caller's transaction), with the first."""
        if self._model_recorded:
            return
        assert self.embedder is not None
        db.execute(self._sql(_SET_STATE), (_STATE_MODEL, model_key(self.embedder.name, int(self.embedder.dim))))
        self._model_recorded = True

    def _backfill_metadata(self) -> None:
        """Give the items indexed before `search_items` had `metadata` their message's or
        memory's metadata (`metadata.indexed`), a page a transaction, before this process
        searches. The migration that added the column left a marker (`_STATE_METADATA`) when
        there were items; whoever opens the index first does the work, and a process stopped
        half-way leaves the rest to the next."""
        while self._read("SELECT 1 FROM search_state WHERE name = ?", (_STATE_METADATA,)):
            with self._store._write() as db:
                self._backend.lock_indexing(db)  # one process at a time (PostgreSQL replicas)
                mark = db.execute(
                    self._sql("SELECT value FROM search_state WHERE name = ?"), (_STATE_METADATA,)
                ).fetchone()
                if mark is None:
                    return  # another process finished it meanwhile
                items = db.execute(
                    self._sql(
                        "SELECT s.id, COALESCE(m.metadata, n.metadata) FROM search_items s"
                        " LEFT JOIN messages m ON s.kind = 'message' AND m.id = s.source_id"
                        " LEFT JOIN notes n ON s.kind = 'memory' AND n.id = s.source_id"
                        " WHERE s.id > ? AND s.kind <> 'fact' ORDER BY s.id LIMIT ?"
                    ),
                    (int(mark[0]), _BACKFILL_PAGE),
                ).fetchall()
                kept = [(indexed(load_json(text)), item) for item, text in items if text and text != "{}"]
                if updates := [(metadata, item) for metadata, item in kept if metadata is not None]:
                    db.executemany(
                        self._sql(f"UPDATE search_items SET metadata = {self._backend.json_param} WHERE id = ?"),
                        updates,
                    )
                if len(items) < _BACKFILL_PAGE:
                    db.execute(self._sql("DELETE FROM search_state WHERE name = ?"), (_STATE_METADATA,))
                else:
                    db.execute(
                        self._sql("UPDATE search_state SET value = ? WHERE name = ?"),
                        (int(items[-1][0]), _STATE_METADATA),
                    )

    # -- writing ----------------------------------------------------------------------------

    def add(self, items: Sequence[IndexItem]) -> None:
        """Add items, or replace the item of the same kind and source id, in one transaction.
        A replaced item gets a new row (and so is embedded again)."""
        rows = [item_row(item) for item in items]
        if not rows:
            return
        with self._store._write_pipelined() as db:  # `_add_rows` reads no result
            self._add_rows(db, rows)

    def add_in(self, db: Any, items: Sequence[IndexItem]) -> None:
        """`add` in the caller's write transaction (a memory changed in place: `store.AlsoWrite`),
        so that a crash leaves both or neither."""
        self._add_rows(db, [item_row(item) for item in items])

    def _add_rows(self, db: Any, rows: Sequence[ItemRow]) -> None:
        """Replace the items of the rows' kinds and source ids: one deletion per kind, then one
        insert (of a source written twice, the last row stands). Nothing here reads a result,
        so in a pipelined transaction (`_write_pipelined`) they all go in one round trip.
        Like every write of items, it takes the indexing lock first."""
        self._backend.lock_indexing(db)
        latest = {(row.kind, row.source_id): row for row in rows}
        by_kind: dict[str, list[int]] = {}
        for kind, source_id in latest:
            by_kind.setdefault(kind, []).append(source_id)
        for kind, ids in by_kind.items():
            for start in range(0, len(ids), MAX_PARAMS):
                self._backend.delete_items(db, kind, ids[start : start + MAX_PARAMS])
        self._backend.insert_items(db, list(latest.values()))

    def remove(self, kind: str, source_ids: Sequence[int]) -> int:
        """Remove the items of `kind` with these source ids; how many were there."""
        check_kinds([kind])
        ids = [check_id(i) for i in source_ids]
        removed = 0
        with self._store._write() as db:
            self._backend.lock_indexing(db)
            for start in range(0, len(ids), MAX_PARAMS):
                removed += self._backend.delete_items(db, kind, ids[start : start + MAX_PARAMS])
        return removed

    def index_messages(self, limit: int = MESSAGE_BATCH) -> int:
        """Copy messages above the watermark into the index, in one transaction; how many.

        Message ids are assigned in commit order under the store's write lock, so every message
        below the watermark is already indexed and none is copied twice. System and world
        messages are indexed like the rest: they are part of what was said in a world (an
        announcement is worth finding), and the `sender` filter can leave them out. Each
        message's `context` is the indexed text of the message before it in its chat.
        """
        if self._messages_indexed():
            return 0  # a read, so searches do not queue behind writers when nothing is new
        with self._store._write() as db:
            self._backend.lock_indexing(db)
            mark = self._watermark(db)
            messages = db.execute(
                self._sql(f"{_MESSAGE_ROWS} WHERE m.id > ? ORDER BY m.id LIMIT ?"), (mark, limit)
            ).fetchall()
            if not messages:
                return 0
            self._backend.insert_items(db, self._message_items(db, messages, {}))
            db.execute(self._sql(_SET_STATE), (_STATE_MESSAGES, messages[-1][0]))
        return len(messages)

    def _watermark(self, db: Any) -> int:
        row = db.execute(self._sql("SELECT value FROM search_state WHERE name = ?"), (_STATE_MESSAGES,)).fetchone()
        return int(row[0]) if row else 0

    def _message_items(
        self, db: Any, messages: Sequence[Sequence[Any]], previous: dict[tuple[str, str], _Before]
    ) -> list[ItemRow]:
        """The items of messages (rows of _MESSAGE_ROWS, in id order); `previous` holds the
        latest message seen per chat, so far.

        A message's words count with those of the turn before it (its `context`) only where
        everyone who heard it heard that turn too: not after a message for one agent alone,
        nor when an agent first heard the chat between the two (it joined since). Else an agent
        could rank what it heard by the words of what it never heard, and so test guesses."""
        rows: list[ItemRow] = []
        joined: dict[tuple[str, str], list[int]] = {}
        for m in messages:
            metadata = load_json(m[6]) if m[6] != "{}" else {}
            text = indexed_text(m[4], m[5], metadata)
            # World keys are unique regardless of case on both databases.
            chat = (str(m[1]).lower(), m[3])
            if chat not in previous:
                previous[chat] = self._previous(db, m[0], m[1], m[3])
            before = previous[chat]
            if chat not in joined:
                joined[chat] = self._first_heard(db, m[1], m[3], after=before.id)
            firsts, joiner = joined[chat], bisect_right(joined[chat], before.id)
            late = joiner < len(firsts) and firsts[joiner] <= m[0]  # someone first heard the chat since
            context = "" if before.private or late else before.text
            # The space is the world's id in its tenant, as for its notes and facts.
            rows.append(
                ItemRow(
                    m[2], m[8], "message", m[0], "", m[3] or None, m[4], None, m[7], text, context,
                    indexed(metadata),
                )
            )  # fmt: skip
            previous[chat] = _Before(m[0], text, private_owner(metadata) is not None)
        return rows

    def _first_heard(self, db: Any, world_id: str, chat_id: str, after: int) -> list[int]:
        """The first message each agent of the world heard (or wrote) in the chat, where above
        `after`, in order (`memory_counts.first_id`)."""
        found = db.execute(
            self._sql(
                "SELECT c.first_id FROM participants p JOIN memory_counts c ON c.agent_key = p.key"
                " WHERE p.world_id = ? AND p.kind = 'agent' AND c.chat_id = ? AND c.first_id > ?"
            ),
            (world_id, chat_id, after),
        ).fetchall()
        return sorted(int(r[0]) for r in found)

    def index_message_ids(self, message_ids: Sequence[int]) -> int:
        """Copy these messages into the index now, wherever the watermark is (an imported world
        keeps its message ids, which may lie below it); one already there stays as it is. How
        many were copied. Each message's context is the one before it among these, in its chat:
        name every message of a chat from some message on (as an import does)."""
        ids = sorted({check_id(i) for i in message_ids})
        copied = 0
        with self._store._write() as db:
            self._backend.lock_indexing(db)
            previous: dict[tuple[str, str], _Before] = {}
            for start in range(0, len(ids), MAX_PARAMS):
                chunk = ids[start : start + MAX_PARAMS]
                messages = db.execute(
                    self._sql(f"{_MESSAGE_ROWS} WHERE m.id IN ({marks(chunk)}) ORDER BY m.id"), chunk
                ).fetchall()
                self._backend.insert_items(db, self._message_items(db, messages, previous))
                copied += len(messages)
        return copied

    def forget(self, items: Mapping[str, Sequence[int]], successors: Sequence[int] = ()) -> int:
        """Remove items of several kinds (kind → source ids) with their vectors, in one
        transaction; how many were there. `successors` are messages that followed a removed
        one in its chat: their items are made again, with the context of the message now before
        them. It waits for an indexer copying messages meanwhile (the indexing lock), so no
        copy of a removed message stays behind; on SQLite each process's copy in memory drops
        the items at its next catch-up (`search_deleted`)."""
        with self._store._write() as db:
            return self.forget_in(db, items, successors)

    def forget_in(self, db: Any, items: Mapping[str, Sequence[int]], successors: Sequence[int] = ()) -> int:
        """`forget` in the caller's write transaction (a store's deletion: `store.AlsoRemove`),
        so that a crash leaves both or neither."""
        checked = {kind: [check_id(i) for i in ids] for kind, ids in items.items() if ids}
        check_kinds(list(checked) or ["message"])
        removed = 0
        self._backend.lock_indexing(db)
        for kind, ids in checked.items():
            for start in range(0, len(ids), MAX_PARAMS):
                removed += self._backend.delete_items(db, kind, ids[start : start + MAX_PARAMS])
        mark = self._watermark(db)
        # Above the watermark the indexer copies them later, with their context as it is then.
        # One at a time, oldest first: a successor's context may be another successor's text.
        for message_id in sorted({check_id(i) for i in successors if i <= mark}):
            self._backend.delete_items(db, "message", [message_id])
            message = db.execute(self._sql(f"{_MESSAGE_ROWS} WHERE m.id = ?"), (message_id,)).fetchall()
            self._backend.insert_items(db, self._message_items(db, message, {}))
        return removed

    def _previous(self, db: Any, message_id: int, world_id: str, chat_id: str) -> _Before:
        """The message before `message_id` in its chat, with its indexed text (none: id 0)."""
        row = db.execute(
            self._sql(
                "SELECT m.id, m.metadata, s.text FROM messages m"
                " LEFT JOIN search_items s ON s.kind = 'message' AND s.source_id = m.id"
                " WHERE m.id = (SELECT MAX(id) FROM messages WHERE world_id = ? AND chat_id = ? AND id < ?)"
            ),
            (world_id, chat_id, message_id),
        ).fetchone()
        if row is None:
            return _Before(0, "", False)
        metadata = load_json(row[1]) if row[1] != "{}" else {}
        return _Before(int(row[0]), str(row[2] or ""), private_owner(metadata) is not None)

    def _messages_indexed(self) -> bool:
        """Whether every message is already copied into the index."""
        row = self._read(
            "SELECT COALESCE((SELECT value FROM search_state WHERE name = ?), 0) >= COALESCE(MAX(id), 0) FROM messages",
            (_STATE_MESSAGES,),
        )
        return bool(row[0][0])

    def embed_pending(self, batch: int = 64, space: Space | None = None) -> int:
        """Embed up to `batch` items not embedded yet (in `space` alone: a world's), oldest first
        (fewer where long texts' passages reach EMBED_MAX_TEXTS); how many items were stored
        (`pending.embed_pending`)."""
        return embed_pending(self, batch, space)

    def step(self, batch: int = 64) -> int:
        """One bounded round of indexing: copy a batch of new messages, embed a batch of items.
        The work done (messages copied + vectors stored); 0 means nothing was left."""
        return self.index_messages(MESSAGE_BATCH) + self.embed_pending(batch)

    def maintain(self) -> int:
        """Keep what this process searches with up to date, off the request path: the copy in
        memory brought in step, the HNSW graphs of its large partitions built or extended; rows
        added to graphs. A process that only indexes (the index worker) never calls it."""
        return self._backend.copy.in_step().build_graphs()

    def catch_up(self, batch: int = 64, should_stop: Callable[[], bool] | None = None) -> int:
        """Index and embed until nothing is pending (or `should_stop()` says so); the work done."""
        total = 0
        while should_stop is None or not should_stop():
            done = self.step(batch)
            if done == 0:
                break
            total += done
        return total

    def pending(self) -> int:
        """Work left: messages not copied yet, plus items not embedded (with an embedder)."""
        row = self._read(
            "SELECT (SELECT COUNT(*) FROM messages WHERE id > COALESCE("
            " (SELECT value FROM search_state WHERE name = ?), 0)),"
            f" (SELECT COUNT(*) FROM search_items WHERE {self._backend.not_embedded})",
            (_STATE_MESSAGES,),
        )[0]
        return int(row[0]) + (int(row[1]) if self.embedder is not None else 0)

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

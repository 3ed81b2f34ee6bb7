"""The search index of the SQLite store: keyword (FTS5 BM25), vector (sqlite-vec) and hybrid.

Everything searchable — messages, long-term memories (notes) and facts — is copied into
`search_items` with the fields searches filter on, and into the external-content FTS5 table
`search_fts` (no triggers: this module writes both). Vectors live in the `vec0` table
`search_vec`, created on first use with the embedder's dimension.

Messages reach the index in batches (`index_messages`, from a watermark) and every item is
embedded later (`embed_pending`), off the request path: posting never waits for a model.
Until its vector is stored an item is still found by BM25.

`search_vec` layout and why (sqlite-vec 0.1.9, verified by experiment):

- `tenant` and `space` are PARTITION KEYs: a KNN query scans only the vectors of one
  (tenant, space), so another tenant's or space's items can never appear, and a search costs
  what its own space holds. Both are needed: 'user:ID' spaces repeat across tenants.
  Partition keys compare case-sensitively, so the space is stored lowercased (world ids are
  case-insensitive).
- A partition allocates whole chunks of `chunk_size` vectors (at 384-d the default 1024 is
  1.5 MB per partition, even for a user with three facts), so chunks are 32 vectors
  (~50 KB); KNN over 20k vectors in one space measured the same (~17-19 ms) either way.
- kind, owner, chat_id, sender, importance, created_at are metadata columns, filtered
  inside the KNN (so `k` results still come back after filtering). They accept =, !=, <,
  <=, >, >= and IN; not IS NULL, and they cannot hold NULL: '' stands for no chat or
  sender and -1 for no importance. Owners are lowercased like spaces.
- `k` is at most 4096 per query; INSERT OR REPLACE is not supported (delete, then insert).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from recall.core.models import Message
from recall.errors import InvalidInputError
from recall.retrieval.hybrid import reciprocal_rank_fusion
from recall.retrieval.stopwords import content_terms
from recall.store.rows import load_json

if TYPE_CHECKING:
    from recall.retrieval.embeddings import Embedder
    from recall.store.sqlite import SQLiteStore

Kind = Literal["message", "memory", "fact"]
Method = Literal["hybrid", "bm25", "vector"]
KINDS: tuple[Kind, ...] = ("message", "memory", "fact")
METHODS: tuple[Method, ...] = ("hybrid", "bm25", "vector")

#: Hybrid fusion, tuned on LoCoMo (docs/benchmarks.md): a small RRF constant lets each method's
#: top hits count, and BM25 weighs more than the vectors because all-MiniLM-L6-v2, trained on
#: short sentence pairs, ranks chat turns less precisely than their exact words do.
HYBRID_RRF_K = 10
HYBRID_WEIGHTS = {"bm25": 1.5, "vector": 1.0}
#: BM25 weight of a message's preceding turn (the `context` FTS column) against its own text (1).
CONTEXT_WEIGHT = 0.5
#: Largest `k` a search accepts.
MAX_K = 1000
#: sqlite-vec refuses a KNN `k` above this.
_VEC_MAX_K = 4096
#: Candidates each method contributes to a hybrid search: enough that an item ranked low by
#: one method but high by the other still meets it in the fusion.
_HYBRID_MIN_DEPTH = 50
#: Query terms kept: a pasted page as a query should not become a 5,000-term OR.
_MAX_QUERY_TERMS = 64
#: Owners a search may name (each is one SQL parameter).
_MAX_OWNERS = 500
#: Messages copied per `index_messages` call by `step`.
MESSAGE_BATCH = 1000
#: Vectors per partition chunk; see the module docstring.
_VEC_CHUNK = 32
#: Largest embedding dimension accepted (it is written into the DDL, so it is checked).
_MAX_DIM = 8192

_STATE_MESSAGES = "messages"
_STATE_MODEL = "vector_model"
#: Words as FTS5's unicode61 tokenizer sees them; everything else (quotes, *, -, :, parens) is
#: dropped, so no user text can be read as FTS5 query syntax.
_TERM = re.compile(r"\w+", re.UNICODE)

_ITEM_COLUMNS = "s.id, s.kind, s.source_id, s.text, s.space, s.owner, s.chat_id, s.sender, s.created_at, s.importance"


@dataclass(frozen=True)
class IndexItem:
    """One thing to make searchable. `owner` '' is visible to everyone in the space."""

    tenant: str
    space: str
    kind: Kind
    source_id: int
    owner: str
    text: str
    created_at: datetime
    chat_id: str | None = None
    sender: str | None = None
    importance: int | None = None


@dataclass(frozen=True)
class SearchHit:
    """One result. `score` is higher-is-better: the RRF score for hybrid, the negated BM25
    for bm25, the cosine similarity for vector. `method` is what actually ran (a vector or
    hybrid search without an embedder runs as bm25). Ranks are 1-based within each method's
    candidate list; `similarity` is 1 - cosine distance (clamped to 0..1) when the vector
    search found the item."""

    kind: Kind
    source_id: int
    score: float
    text: str
    space: str
    owner: str
    chat_id: str | None
    sender: str | None
    created_at: datetime
    importance: int | None
    method: Method
    bm25_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None


@dataclass(frozen=True)
class _Filters:
    tenant: str
    space: str
    kinds: tuple[str, ...]
    owners: tuple[str, ...] | None
    chat_id: str | None
    sender: str | None
    since: float | None
    until: float | None
    min_importance: int | None


def message_text(message: Message) -> str:
    """What a message is indexed as: who said it and what, plus an image's caption, so a
    search for "the photo of the beach" finds the message that shared it."""
    return _message_text(message.sender, message.content, message.metadata)


def _message_text(sender: str, content: str, metadata: Mapping[str, Any]) -> str:
    text = f"{sender}: {content}"
    caption = metadata.get("image_caption") or metadata.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text += f" [shares an image: {caption.strip()}]"
    return text


def match_expression(query: str) -> str:
    """A safe FTS5 MATCH expression for free text: each word but the stop words quoted, joined
    with OR (BM25 then ranks documents with more and rarer words higher). '' when the text has
    no words."""
    return " OR ".join(f'"{t}"' for t in query_terms(query))


def query_terms(query: str) -> list[str]:
    """The words of a free-text query a keyword search looks for: lowercased, once each, stop
    words left out (unless that leaves none), at most _MAX_QUERY_TERMS."""
    return content_terms(list(dict.fromkeys(t.lower() for t in _TERM.findall(query))))[:_MAX_QUERY_TERMS]


def _ts(value: datetime) -> float:
    # A naive datetime is taken as UTC, as everywhere else in recall.
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def _model_key(name: str, dim: int) -> int:
    """A stable 63-bit number for the embedding model (search_state holds integers)."""
    return int.from_bytes(hashlib.sha256(f"{name}\n{dim}".encode()).digest()[:8], "big") >> 1


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


class SQLiteSearchIndex:
    """The search index of one `SQLiteStore`, on its connection and under its lock.

    With `embedder` None the index is keyword-only: nothing is embedded and vector or
    hybrid searches run as BM25 (their hits say `method='bm25'`).
    """

    def __init__(self, store: SQLiteStore, embedder: Embedder | None = None) -> None:
        self._store = store
        self.embedder = embedder
        self._vec_ready = False
        if embedder is not None:
            dim = embedder.dim
            if isinstance(dim, bool) or not isinstance(dim, int) or not 0 < dim <= _MAX_DIM:
                raise InvalidInputError("embedder.dim", f"must be a whole number 1-{_MAX_DIM}, got {dim!r}")
            self._check_model(_model_key(embedder.name, dim))

    @property
    def has_vectors(self) -> bool:
        """Whether vector search is available (an embedder is configured)."""
        return self.embedder is not None

    # -- the embedding model and the vector table ---------------------------------------

    def _vec_exists(self) -> bool:
        rows = self._store._read("SELECT 1 FROM sqlite_master WHERE name = 'search_vec'")
        return bool(rows)

    def _check_model(self, key: int) -> None:
        """Vectors of another model (or dimension) are meaningless to this one: if the stored
        vectors were made by a different embedder, drop them all and embed everything again."""
        rows = self._store._read("SELECT value FROM search_state WHERE name = ?", (_STATE_MODEL,))
        stored = int(rows[0][0]) if rows else None
        if stored == key:
            self._vec_ready = self._vec_exists()
            return
        if stored is None and not self._vec_exists():
            return  # nothing embedded yet; the table and the key are written with the first vectors
        with self._store._write() as db:
            db.execute("DROP TABLE IF EXISTS search_vec")
            db.execute("UPDATE search_items SET embedded = 0 WHERE embedded = 1")
            db.execute("DELETE FROM search_state WHERE name = ?", (_STATE_MODEL,))
        self._vec_ready = False

    def _ensure_vec(self, db: Any) -> None:
        """Create the vector table (in the caller's transaction) on first use."""
        if self._vec_ready:
            return
        assert self.embedder is not None
        dim = self.embedder.dim
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS search_vec USING vec0("
            " id INTEGER PRIMARY KEY,"
            " tenant TEXT PARTITION KEY,"
            " space TEXT PARTITION KEY,"
            f" embedding float[{int(dim)}] distance_metric=cosine,"
            " kind TEXT, owner TEXT, chat_id TEXT, sender TEXT, importance INTEGER, created_at FLOAT,"
            f" chunk_size={_VEC_CHUNK})"
        )
        db.execute(
            "INSERT INTO search_state (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (_STATE_MODEL, _model_key(self.embedder.name, dim)),
        )
        self._vec_ready = True

    def _delete_rows(self, db: Any, rows: Sequence[Sequence[Any]]) -> None:
        """Delete items given as (id, text, context) rows: their FTS rows (which need the old
        values, the FTS table being external-content), their vectors, and the rows."""
        if not rows:
            return
        db.executemany("INSERT INTO search_fts (search_fts, rowid, text, context) VALUES ('delete', ?, ?, ?)", rows)
        if self._vec_ready or self._vec_exists():
            db.executemany("DELETE FROM search_vec WHERE id = ?", [(r[0],) for r in rows])
        db.executemany("DELETE FROM search_items WHERE id = ?", [(r[0],) for r in rows])

    # -- writing ----------------------------------------------------------------------------

    def add(self, items: Sequence[IndexItem]) -> None:
        """Add items, or replace the item of the same kind and source id, in one transaction.
        A replaced item gets a new row (and so is embedded again)."""
        rows = [_item_row(item) for item in items]
        if not rows:
            return
        with self._store._write() as db:
            for row in rows:
                old = db.execute(
                    "SELECT id, text, context FROM search_items WHERE kind = ? AND source_id = ?", (row[2], row[3])
                ).fetchall()
                self._delete_rows(db, old)
                new_id = db.execute(
                    "INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance,"
                    " created_at, text, embedded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0) RETURNING id",
                    row,
                ).fetchone()[0]
                db.execute("INSERT INTO search_fts (rowid, text) VALUES (?, ?)", (new_id, row[9]))

    def remove(self, kind: str, source_ids: Sequence[int]) -> int:
        """Remove the items of `kind` with these source ids; how many were there."""
        _check_kinds([kind])
        ids = [_check_id(i) for i in source_ids]
        removed = 0
        with self._store._write() as db:
            for start in range(0, len(ids), _MAX_OWNERS):
                chunk = ids[start : start + _MAX_OWNERS]
                rows = db.execute(
                    f"SELECT id, text, context FROM search_items WHERE kind = ? AND source_id IN ({_marks(chunk)})",
                    (kind, *chunk),
                ).fetchall()
                self._delete_rows(db, rows)
                removed += len(rows)
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
            row = db.execute("SELECT value FROM search_state WHERE name = ?", (_STATE_MESSAGES,)).fetchone()
            mark = int(row[0]) if row else 0
            messages = db.execute(
                "SELECT m.id, m.world_id, w.tenant, m.chat_id, m.sender, m.content, m.metadata, m.created_at, w.id"
                " FROM messages m JOIN worlds w ON w.key = m.world_id WHERE m.id > ? ORDER BY m.id LIMIT ?",
                (mark, limit),
            ).fetchall()
            if not messages:
                return 0
            previous: dict[tuple[str, str | None], str] = {}
            for m in messages:
                metadata = load_json(m[6]) if m[6] != "{}" else {}
                text = _message_text(m[4], m[5], metadata)
                chat = (m[1], m[3])
                context = previous[chat] if chat in previous else _previous_text(db, m[0], m[1], m[3])
                previous[chat] = text
                new = db.execute(
                    "INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance,"
                    " created_at, text, context, embedded) VALUES (?, ?, 'message', ?, '', ?, ?, NULL, ?, ?, ?, 0)"
                    " ON CONFLICT (kind, source_id) DO NOTHING RETURNING id",
                    # The space is the world's id in its tenant, as for its notes and facts.
                    (m[2], m[8], m[0], m[3] or None, m[4], m[7], text, context),
                ).fetchone()
                if new is not None:
                    db.execute(
                        "INSERT INTO search_fts (rowid, text, context) VALUES (?, ?, ?)", (new[0], text, context)
                    )
            db.execute(
                "INSERT INTO search_state (name, value) VALUES (?, ?)"
                " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (_STATE_MESSAGES, messages[-1][0]),
            )
        return len(messages)

    def _messages_indexed(self) -> bool:
        """Whether every message is already copied into the index."""
        row = self._store._read(
            "SELECT COALESCE((SELECT value FROM search_state WHERE name = ?), 0) >= COALESCE(MAX(id), 0) FROM messages",
            (_STATE_MESSAGES,),
        )
        return bool(row[0][0])

    def embed_pending(self, batch: int = 64) -> int:
        """Embed up to `batch` items not embedded yet, oldest first; how many vectors were stored.

        The model runs outside the store's lock (it takes tens of milliseconds; posts must not
        wait for it). An item deleted or replaced meanwhile is skipped: its row is gone, or its
        text is no longer the text that was embedded.
        """
        if self.embedder is None or batch < 1:
            return 0
        rows = self._store._read(
            "SELECT id, text FROM search_items WHERE embedded = 0 ORDER BY id LIMIT ?", (int(batch),)
        )
        if not rows:
            return 0
        vectors = np.asarray(self.embedder.embed([r[1] for r in rows]), dtype=np.float32)
        stored = 0
        with self._store._write() as db:
            self._ensure_vec(db)
            for (item_id, text), vector in zip(rows, vectors, strict=True):
                item = db.execute(
                    "UPDATE search_items SET embedded = 1 WHERE id = ? AND embedded = 0 AND text = ?"
                    " RETURNING tenant, space, kind, owner, chat_id, sender, importance, created_at",
                    (item_id, text),
                ).fetchone()
                if item is None:
                    continue
                db.execute(
                    "INSERT INTO search_vec (id, tenant, space, embedding, kind, owner, chat_id, sender, importance,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        item_id, item[0], item[1].lower(), vector.tobytes(), item[2], item[3].lower(),
                        item[4] or "", item[5] or "", -1 if item[6] is None else item[6], float(item[7]),
                    ),
                )  # fmt: skip
                stored += 1
        return stored

    def step(self, batch: int = 64) -> int:
        """One bounded round of indexing: copy a batch of new messages, embed a batch of items.
        The work done (messages copied + vectors stored); 0 means nothing was left."""
        return self.index_messages(MESSAGE_BATCH) + self.embed_pending(batch)

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
        row = self._store._read(
            "SELECT (SELECT COUNT(*) FROM messages WHERE id > COALESCE("
            " (SELECT value FROM search_state WHERE name = ?), 0)),"
            " (SELECT COUNT(*) FROM search_items WHERE embedded = 0)",
            (_STATE_MESSAGES,),
        )[0]
        return int(row[0]) + (int(row[1]) if self.embedder is not None else 0)

    # -- searching --------------------------------------------------------------------------

    def search(
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
    ) -> list[SearchHit]:
        """The `k` best items of one tenant's space for `query`, best first.

        Filters: `kinds`; `owners` the owners whose items are visible (None: all; '' is the
        shared owner, so an agent passes ['', agent_id]); `chat_id` ('' = the default chat);
        `sender`; `since` (inclusive) and `until` (exclusive); `min_importance` (keeps only
        items with an importance, i.e. memories).
        """
        if not isinstance(query, str):
            raise InvalidInputError("query", "must be text")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InvalidInputError("k", f"must be a whole number 1-{MAX_K}, got {k!r}")
        if method not in METHODS:
            raise InvalidInputError("method", f"must be one of {', '.join(METHODS)}, got {method!r}")
        filters = _filters(tenant, space, kinds, owners, chat_id, sender, since, until, min_importance)
        if not query.strip() or filters.owners == ():
            return []
        ran: Method = method if self.embedder is not None else "bm25"
        if ran == "bm25":
            return [
                _hit(row, ran, -row[10], bm25_rank=rank) for rank, row in enumerate(self._bm25(query, filters, k), 1)
            ]
        if ran == "vector":
            return [
                _hit(row, ran, _similarity(row[10]), vector_rank=rank, similarity=_similarity(row[10]))
                for rank, row in enumerate(self._vector(query, filters, k), 1)
            ]
        return self._hybrid(query, filters, k)

    def _hybrid(self, query: str, filters: _Filters, k: int) -> list[SearchHit]:
        depth = max(k * 4, _HYBRID_MIN_DEPTH)
        keyword = self._bm25(query, filters, depth)
        vector = self._vector(query, filters, depth)
        rows = {row[0]: row for row in (*keyword, *vector)}
        bm25_ranks = {row[0]: rank for rank, row in enumerate(keyword, 1)}
        vector_ranks = {row[0]: rank for rank, row in enumerate(vector, 1)}
        distances = {row[0]: row[10] for row in vector}
        fused = reciprocal_rank_fusion(
            [[r[0] for r in keyword], [r[0] for r in vector]],
            HYBRID_RRF_K,
            [HYBRID_WEIGHTS["bm25"], HYBRID_WEIGHTS["vector"]],
        )
        return [
            _hit(
                rows[item_id],
                "hybrid",
                score,
                bm25_rank=bm25_ranks.get(item_id),
                vector_rank=vector_ranks.get(item_id),
                similarity=_similarity(distances[item_id]) if item_id in distances else None,
            )
            for item_id, score in fused[:k]
        ]

    def _bm25(self, query: str, f: _Filters, limit: int) -> list[Any]:
        """Rows of the best keyword matches: the item columns, then bm25() (lower is better)."""
        expression = match_expression(query)
        if not expression:
            return []
        where, params = _sql_filters(f)
        # FTS5 ranks the whole corpus's matches, then the item filters apply; the join goes
        # FTS-first because a MATCH is the selective part for most queries. CROSS JOIN makes
        # SQLite keep that order: with a plain JOIN the planner drives from search_items' kind
        # index and runs the full-text query once per item (measured on a 419-message world:
        # 68 ms per search instead of 1 ms).
        return self._store._read(
            f"SELECT {_ITEM_COLUMNS}, bm25(search_fts, 1.0, ?) AS rank FROM search_fts"
            " CROSS JOIN search_items s ON s.id = search_fts.rowid"
            f" WHERE search_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
            (CONTEXT_WEIGHT, expression, *params, limit),
        )

    def _vector(self, query: str, f: _Filters, limit: int) -> list[Any]:
        """Rows of the nearest items: the item columns, then the cosine distance."""
        if self.embedder is None:
            return []
        if not self._vec_ready:
            self._vec_ready = self._vec_exists()
            if not self._vec_ready:
                return []  # nothing embedded yet
        # Embedding the query happens before the store's lock is taken.
        vector = np.asarray(self.embedder.embed([query]), dtype=np.float32)[0]
        where, params = _vec_filters(f)
        return self._store._read(
            f"SELECT {_ITEM_COLUMNS}, v.distance FROM ("
            " SELECT id, distance FROM search_vec"
            f" WHERE embedding MATCH ? AND k = ? AND {where}) v"
            " JOIN search_items s ON s.id = v.id ORDER BY v.distance",
            (vector.tobytes(), min(limit, _VEC_MAX_K), *params),
        )


# -- helpers --------------------------------------------------------------------------------


def _previous_text(db: Any, message_id: int, world_id: str, chat_id: str | None) -> str:
    """The indexed text of the message before `message_id` in its chat ('' for the first)."""
    row = db.execute(
        "SELECT s.text FROM search_items s WHERE s.kind = 'message' AND s.source_id = ("
        " SELECT MAX(id) FROM messages WHERE world_id = ? AND chat_id IS ? AND id < ?)",
        (world_id, chat_id, message_id),
    ).fetchone()
    return str(row[0]) if row else ""


def _item_row(item: IndexItem) -> tuple[Any, ...]:
    if not isinstance(item, IndexItem):
        raise InvalidInputError("items", f"must be IndexItem values, got {type(item).__name__}")
    _check_kinds([item.kind])
    for name in ("tenant", "space", "owner", "text"):
        if not isinstance(getattr(item, name), str):
            raise InvalidInputError(name, "must be text")
    if not item.space:
        raise InvalidInputError("space", "must not be empty")
    if not isinstance(item.created_at, datetime):
        raise InvalidInputError("created_at", "must be a datetime")
    importance = None if item.importance is None else _check_int("importance", item.importance)
    return (
        item.tenant, item.space, item.kind, _check_id(item.source_id), item.owner, item.chat_id or None,
        item.sender or None, importance, _ts(item.created_at), item.text,
    )  # fmt: skip


def _check_int(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(field, f"must be a whole number, got {value!r}")
    return value


def _check_id(value: object) -> int:
    number = _check_int("source_id", value)
    if not 0 < number < 2**63:
        raise InvalidInputError("source_id", f"must be a positive id, got {number}")
    return number


def _check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    if isinstance(kinds, str) or not kinds:
        raise InvalidInputError("kinds", f"must be a non-empty list of {', '.join(KINDS)}")
    for kind in kinds:
        if kind not in KINDS:
            raise InvalidInputError("kinds", f"must be among {', '.join(KINDS)}, got {kind!r}")
    return tuple(dict.fromkeys(kinds))


def _optional_text(field: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(field, "must be text")
    return value


def _optional_time(field: str, value: object) -> float | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(field, "must be a datetime")
    return _ts(value)


def _filters(
    tenant: object,
    space: object,
    kinds: Sequence[str],
    owners: Sequence[str] | None,
    chat_id: object,
    sender: object,
    since: object,
    until: object,
    min_importance: object,
) -> _Filters:
    if not isinstance(tenant, str):
        raise InvalidInputError("tenant", "must be text")
    if not isinstance(space, str) or not space:
        raise InvalidInputError("space", "must be non-empty text")
    if owners is not None:
        if isinstance(owners, str) or len(owners) > _MAX_OWNERS:
            raise InvalidInputError("owners", f"must be a list of at most {_MAX_OWNERS} owner ids")
        if any(not isinstance(o, str) for o in owners):
            raise InvalidInputError("owners", "must be text")
    return _Filters(
        tenant=tenant,
        space=space,
        kinds=_check_kinds(kinds),
        owners=None if owners is None else tuple(dict.fromkeys(o.lower() for o in owners)),
        chat_id=_optional_text("chat_id", chat_id),
        sender=_optional_text("sender", sender),
        since=_optional_time("since", since),
        until=_optional_time("until", until),
        min_importance=None if min_importance is None else _check_int("min_importance", min_importance),
    )


def _sql_filters(f: _Filters) -> tuple[str, list[Any]]:
    """The WHERE clause of a keyword search over `search_items s`, and its parameters."""
    clauses = ["s.tenant = ?", "s.space = ?", f"s.kind IN ({_marks(f.kinds)})"]
    params: list[Any] = [f.tenant, f.space, *f.kinds]
    if f.owners is not None:
        clauses.append(f"s.owner IN ({_marks(f.owners)})")  # the column's NOCASE applies
        params += f.owners
    optional: list[tuple[str, object]] = [
        ("COALESCE(s.chat_id, '') = ?", f.chat_id),
        ("s.sender = ?", f.sender),
        ("s.created_at >= ?", f.since),
        ("s.created_at < ?", f.until),
        ("s.importance >= ?", f.min_importance),
    ]
    for clause, value in optional:
        if value is not None:
            clauses.append(clause)
            params.append(value)
    return " AND ".join(clauses), params


def _vec_filters(f: _Filters) -> tuple[str, list[Any]]:
    """The same filters as KNN constraints on `search_vec` (sentinels instead of NULL:
    '' for no chat or sender, -1 for no importance, which `>= min_importance` excludes)."""
    clauses = ["tenant = ?", "space = ?", f"kind IN ({_marks(f.kinds)})"]
    params: list[Any] = [f.tenant, f.space.lower(), *f.kinds]
    if f.owners is not None:
        clauses.append(f"owner IN ({_marks(f.owners)})")
        params += f.owners
    optional: list[tuple[str, object]] = [
        ("chat_id = ?", f.chat_id),
        ("sender = ?", f.sender),
        ("created_at >= ?", f.since),
        ("created_at < ?", f.until),
        ("importance >= ?", f.min_importance),
    ]
    for clause, value in optional:
        if value is not None:
            clauses.append(clause)
            params.append(value)
    return " AND ".join(clauses), params


def _similarity(distance: float) -> float:
    """Cosine similarity from sqlite-vec's cosine distance, clamped to 0..1 (float error and
    opposite vectors would leave it)."""
    return min(1.0, max(0.0, 1.0 - float(distance))) if math.isfinite(distance) else 0.0


def _hit(
    row: Sequence[Any],
    method: Method,
    score: float,
    *,
    bm25_rank: int | None = None,
    vector_rank: int | None = None,
    similarity: float | None = None,
) -> SearchHit:
    return SearchHit(
        kind=row[1],
        source_id=row[2],
        score=float(score),
        text=row[3],
        space=row[4],
        owner=row[5],
        chat_id=row[6],
        sender=row[7],
        created_at=datetime.fromtimestamp(row[8], tz=UTC),
        importance=row[9],
        method=method,
        bm25_rank=bm25_rank,
        vector_rank=vector_rank,
        similarity=similarity,
    )

"""The search index of the PostgreSQL store: the same index as SQLite's (`sqlite_search.py`), on
PostgreSQL's full-text search and pgvector.

One table holds everything: each item's text and the turn before it (messages), a generated
`tsvector` (own words weight A, the previous turn's B) with a GIN index, and, once embedded, its
vector in a pgvector column (HNSW index, cosine distance) created with the embedder's
dimension on first use. Searching, filtering, fusing and validation are the SQLite index's own
(this class inherits them); only the SQL differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from recall.store.rows import load_json
from recall.store.sqlite_search import (
    _ITEM_COLUMNS,
    _STATE_MESSAGES,
    _STATE_MODEL,
    CONTEXT_WEIGHT,
    MESSAGE_BATCH,
    IndexItem,
    SQLiteSearchIndex,
    _check_id,
    _check_kinds,
    _Filters,
    _item_row,
    _message_text,
    _model_key,
    _sql_filters,
    query_terms,
)

if TYPE_CHECKING:
    from recall.retrieval.embeddings import Embedder
    from recall.store.postgres import PostgresStore

#: ts_rank weights for {D, C, B, A}: the previous turn (B) counts CONTEXT_WEIGHT of the text (A).
_RANK_WEIGHTS = f"{{0.1, 0.2, {CONTEXT_WEIGHT}, 1.0}}"
#: HNSW candidates per query: at least the deepest hybrid list.
_EF_SEARCH = 200
#: pgvector refuses a larger hnsw.ef_search.
_EF_SEARCH_MAX = 1000
#: Up to this many matching items (or `limit`, if more), a vector search compares the query with
#: every one of them: exact, and cheaper than walking the HNSW graph past the items a filter
#: rejects (a few milliseconds for a thousand 384-d vectors).
EXACT_SCAN_MAX = 1000
#: The first pgvector release whose HNSW scans can go on past `ef_search` candidates until
#: enough rows pass the filters (`hnsw.iterative_scan`).
_ITERATIVE_SCAN_VERSION = (0, 8)


def tsquery_text(query: str) -> str:
    """A safe `to_tsquery` text for free text: the words but the stop words, OR-ed ('' for none).
    Only word characters survive, so no input is read as tsquery syntax."""
    return " | ".join(query_terms(query))


def _vector_text(vector: np.ndarray[Any, Any]) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


class PostgresSearchIndex(SQLiteSearchIndex):
    """The search index of one `PostgresStore`."""

    def __init__(self, store: PostgresStore, embedder: Embedder | None = None) -> None:
        super().__init__(store, embedder)  # type: ignore[arg-type]  # the same _read/_write shape
        #: Whether the server's pgvector has iterative index scans (None: not asked yet).
        self._iterative: bool | None = None

    # -- the embedding model and the vector column ---------------------------------------

    def _vec_exists(self) -> bool:
        rows = self._store._read(
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'search_items' AND column_name = 'embedding'"
        )
        return bool(rows)

    def _check_model(self, key: int) -> None:
        rows = self._store._read("SELECT value FROM search_state WHERE name = %s", (_STATE_MODEL,))
        stored = int(rows[0][0]) if rows else None
        if stored == key:
            self._vec_ready = self._vec_exists()
            return
        if stored is None and not self._vec_exists():
            return
        with self._store._write() as db:
            db.execute("ALTER TABLE search_items DROP COLUMN IF EXISTS embedding")
            db.execute("UPDATE search_items SET embedded = false WHERE embedded")
            db.execute("DELETE FROM search_state WHERE name = %s", (_STATE_MODEL,))
        self._vec_ready = False

    def _ensure_vec(self, db: Any) -> None:
        if self._vec_ready:
            return
        assert self.embedder is not None
        dim = int(self.embedder.dim)
        db.execute(f"ALTER TABLE search_items ADD COLUMN IF NOT EXISTS embedding vector({dim})")
        db.execute(
            "CREATE INDEX IF NOT EXISTS search_items_embedding ON search_items USING hnsw (embedding vector_cosine_ops)"
        )
        db.execute(
            "INSERT INTO search_state (name, value) VALUES (%s, %s)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (_STATE_MODEL, _model_key(self.embedder.name, dim)),
        )
        self._vec_ready = True

    # -- writing ----------------------------------------------------------------------------

    def add(self, items: Sequence[IndexItem]) -> None:
        rows = [_item_row(item) for item in items]
        if not rows:
            return
        with self._store._write() as db:
            for row in rows:
                db.execute("DELETE FROM search_items WHERE kind = %s AND source_id = %s", (row[2], row[3]))
                db.execute(
                    "INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance,"
                    " created_at, text) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    row,
                )

    def remove(self, kind: str, source_ids: Sequence[int]) -> int:
        _check_kinds([kind])
        ids = [_check_id(i) for i in source_ids]
        with self._store._write() as db:
            db.execute("DELETE FROM search_items WHERE kind = %s AND source_id = ANY(%s)", (kind, ids))
            return int(db.rowcount)

    def _messages_indexed(self) -> bool:
        row = self._store._read(
            "SELECT COALESCE((SELECT value FROM search_state WHERE name = %s), 0) >= COALESCE(MAX(id), 0)"
            " FROM messages",
            (_STATE_MESSAGES,),
        )
        return bool(row[0][0])

    def index_messages(self, limit: int = MESSAGE_BATCH) -> int:
        if self._messages_indexed():
            return 0
        with self._store._write() as db:
            # One indexer at a time across replicas; the others find the work done.
            db.execute("SELECT pg_advisory_xact_lock(7311002)")
            row = db.execute("SELECT value FROM search_state WHERE name = %s", (_STATE_MESSAGES,)).fetchone()
            mark = int(row[0]) if row else 0
            messages = db.execute(
                "SELECT m.id, m.world_id, w.tenant, m.chat_id, m.sender, m.content, m.metadata, m.created_at, w.id"
                " FROM messages m JOIN worlds w ON w.key = m.world_id WHERE m.id > %s ORDER BY m.id LIMIT %s",
                (mark, limit),
            ).fetchall()
            if not messages:
                return 0
            previous: dict[tuple[str, str], str] = {}
            rows = []
            for m in messages:
                metadata = load_json(m[6]) if m[6] != "{}" else {}
                text = _message_text(m[4], m[5], metadata)
                chat = (str(m[1]).lower(), m[3])
                if chat not in previous:
                    found = db.execute(
                        "SELECT s.text FROM search_items s WHERE s.kind = 'message' AND s.source_id = ("
                        " SELECT MAX(id) FROM messages WHERE world_id = %s AND chat_id = %s AND id < %s)",
                        (m[1], m[3], m[0]),
                    ).fetchone()
                    previous[chat] = str(found[0]) if found else ""
                # The space is the world's id in its tenant, as for its notes and facts.
                rows.append((m[2], m[8], m[0], m[3] or None, m[4], m[7], text, previous[chat]))
                previous[chat] = text
            db.executemany(
                "INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance,"
                " created_at, text, context) VALUES (%s, %s, 'message', %s, '', %s, %s, NULL, %s, %s, %s)"
                " ON CONFLICT (kind, source_id) DO NOTHING",
                rows,
            )
            db.execute(
                "INSERT INTO search_state (name, value) VALUES (%s, %s)"
                " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (_STATE_MESSAGES, messages[-1][0]),
            )
        return len(messages)

    def embed_pending(self, batch: int = 64) -> int:
        if self.embedder is None or batch < 1:
            return 0
        rows = self._store._read(
            "SELECT id, text FROM search_items WHERE NOT embedded ORDER BY id LIMIT %s", (int(batch),)
        )
        if not rows:
            return 0
        vectors = np.asarray(self.embedder.embed([r[1] for r in rows]), dtype=np.float32)
        with self._store._write() as db:
            self._ensure_vec(db)
            db.executemany(
                "UPDATE search_items SET embedded = true, embedding = %s::vector"
                " WHERE id = %s AND NOT embedded AND text = %s",
                [(_vector_text(v), r[0], r[1]) for r, v in zip(rows, vectors, strict=True)],
            )
            stored = int(db.rowcount) if db.rowcount >= 0 else len(rows)
        return stored

    def pending(self) -> int:
        row = self._store._read(
            "SELECT (SELECT COUNT(*) FROM messages WHERE id > COALESCE("
            " (SELECT value FROM search_state WHERE name = %s), 0)),"
            " (SELECT COUNT(*) FROM search_items WHERE NOT embedded)",
            (_STATE_MESSAGES,),
        )[0]
        return int(row[0]) + (int(row[1]) if self.embedder is not None else 0)

    # -- searching --------------------------------------------------------------------------

    def _bm25(self, query: str, f: _Filters, limit: int) -> list[Any]:
        """Rows of the best keyword matches: the item columns, then minus the rank (lower is
        better, as SQLite's bm25())."""
        text = tsquery_text(query)
        if not text:
            return []
        where, params = _sql_filters(f)  # `?` placeholders: the store's _read turns them into %s
        return self._store._read(
            f"SELECT {_ITEM_COLUMNS}, -ts_rank(?::float4[], s.tsv, q) AS rank"
            " FROM search_items s, to_tsquery('english', ?) q"
            f" WHERE s.tsv @@ q AND {where} ORDER BY rank, s.id LIMIT ?",
            (_RANK_WEIGHTS, text, *params, limit),
        )

    def _vector(self, query: str, f: _Filters, limit: int) -> list[Any]:
        """Rows of the `limit` nearest items that pass the filters, nearest first: the item
        columns, then the cosine distance.

        An HNSW scan yields its `ef_search` nearest candidates and the filters apply after it,
        so on its own it returns fewer than `limit` rows (or none) when few items pass them.
        Hence: when few items match, all of them are compared with the query (exact); else
        the graph walk goes on until `limit` rows pass (pgvector's iterative scan, in strict
        distance order), and should it stop short (hnsw.max_scan_tuples), the exact scan
        answers. Either way `limit` rows come back whenever that many items match, as
        sqlite-vec's filtered KNN gives on SQLite."""
        if self.embedder is None:
            return []
        if not self._vec_ready:
            self._vec_ready = self._vec_exists()
            if not self._vec_ready:
                return []
        vector = _vector_text(np.asarray(self.embedder.embed([query]), dtype=np.float32)[0])
        where, params = _sql_filters(f)
        where = "s.embedded AND " + where.replace("?", "%s")
        with self._store._write() as db:  # SET LOCAL needs a transaction
            exact_up_to = max(EXACT_SCAN_MAX, limit)
            if _count_up_to(db, where, params, exact_up_to + 1) > exact_up_to:
                rows = self._walk_graph(db, vector, where, params, limit)
                if len(rows) == limit:
                    return rows
            return _exact_nearest(db, vector, where, params, limit)

    def _walk_graph(self, db: Any, vector: str, where: str, params: Sequence[Any], limit: int) -> list[Any]:
        """The nearest matching rows by the HNSW index (the planner may still choose another plan)."""
        db.execute(f"SET LOCAL hnsw.ef_search = {min(max(_EF_SEARCH, limit), _EF_SEARCH_MAX)}")
        if self._iterative_scans(db):
            db.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        rows: list[Any] = db.execute(
            f"SELECT {_ITEM_COLUMNS}, s.embedding <=> %s::vector AS distance FROM search_items s"
            f" WHERE {where} ORDER BY distance LIMIT %s",
            (vector, *params, limit),
        ).fetchall()
        return rows

    def _iterative_scans(self, db: Any) -> bool:
        if self._iterative is None:
            row = db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            self._iterative = row is not None and _version(str(row[0])) >= _ITERATIVE_SCAN_VERSION
        return self._iterative


def _count_up_to(db: Any, where: str, params: Sequence[Any], cap: int) -> int:
    """How many embedded items pass the filters, counted no further than `cap`."""
    row = db.execute(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM search_items s WHERE {where} LIMIT %s) matching", (*params, cap)
    ).fetchone()
    return int(row[0])


def _exact_nearest(db: Any, vector: str, where: str, params: Sequence[Any], limit: int) -> list[Any]:
    """The nearest matching rows, every match compared with the query. The subquery's OFFSET 0
    keeps the ORDER BY out of it, so the HNSW index (approximate) cannot answer it."""
    rows: list[Any] = db.execute(
        f"SELECT * FROM (SELECT {_ITEM_COLUMNS}, s.embedding <=> %s::vector AS distance FROM search_items s"
        f" WHERE {where} OFFSET 0) matching ORDER BY distance, id LIMIT %s",
        (vector, *params, limit),
    ).fetchall()
    return rows


def _version(text: str) -> tuple[int, ...]:
    """(0, 8, 6) from '0.8.6'; a part that is not a number ends it."""
    parts: list[int] = []
    for part in text.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)

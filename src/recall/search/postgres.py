"""The search primitives of the PostgreSQL store: full-text search and pgvector.

One table holds everything: each item's text and the turn before it (messages), a generated
`tsvector` (own words weight A, the previous turn's B) with a GIN index, and, once embedded, its
vector in a pgvector column (HNSW index, cosine distance) created with the embedder's
dimension on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import CANDIDATE_COLUMNS, CONTEXT_WEIGHT, Candidate, Filters, ItemRow, query_terms, where_clause

if TYPE_CHECKING:
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
#: The advisory lock that lets one replica at a time copy messages into the index.
_INDEXING_LOCK = 7311002


def tsquery_text(query: str) -> str:
    """A safe `to_tsquery` text for free text: the words but the stop words, OR-ed ('' for none).
    Only word characters survive, so no input is read as tsquery syntax."""
    return " | ".join(query_terms(query))


def _vector_text(vector: NDArray[np.float32]) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


class PostgresSearch:
    """The `SearchBackend` of a `PostgresStore`."""

    not_embedded = "NOT embedded"
    json_param = "CAST(? AS jsonb)"

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        #: Whether the server's pgvector has iterative index scans (None: not asked yet).
        self._iterative: bool | None = None

    def sql(self, statement: str) -> str:
        # No SQL of recall's holds a literal question mark.
        return statement.replace("?", "%s")

    def lock_indexing(self, db: Any) -> None:
        """One indexer at a time across replicas; the others find the work done."""
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_INDEXING_LOCK,))

    # -- the vector column --------------------------------------------------------------

    def vectors_exist(self) -> bool:
        rows = self.store._read(
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'search_items' AND column_name = 'embedding'"
        )
        return bool(rows)

    def create_vectors(self, db: Any, dim: int) -> None:
        db.execute(f"ALTER TABLE search_items ADD COLUMN IF NOT EXISTS embedding vector({int(dim)})")
        db.execute(
            "CREATE INDEX IF NOT EXISTS search_items_embedding ON search_items USING hnsw (embedding vector_cosine_ops)"
        )

    def drop_vectors(self, db: Any) -> None:
        db.execute("ALTER TABLE search_items DROP COLUMN IF EXISTS embedding")
        db.execute("UPDATE search_items SET embedded = false WHERE embedded")

    # -- items ----------------------------------------------------------------------------

    def insert_items(self, db: Any, rows: Sequence[ItemRow]) -> None:
        # The tsvector column is generated: full-text indexing needs nothing more.
        db.executemany(
            "INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance,"
            " created_at, text, context, metadata)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, CAST(%s AS jsonb))"
            " ON CONFLICT (kind, source_id) DO NOTHING",
            rows,
        )

    def delete_items(self, db: Any, kind: str, source_ids: Sequence[int]) -> int:
        db.execute("DELETE FROM search_items WHERE kind = %s AND source_id = ANY(%s)", (kind, list(source_ids)))
        return int(db.rowcount)

    def store_vectors(self, db: Any, items: Sequence[Sequence[Any]], vectors: NDArray[np.float32]) -> int:
        db.executemany(
            "UPDATE search_items SET embedded = true, embedding = %s::vector WHERE id = %s AND NOT embedded AND text = %s",
            [(_vector_text(v), r[0], r[1]) for r, v in zip(items, vectors, strict=True)],
        )
        return int(db.rowcount) if db.rowcount >= 0 else len(items)

    # -- searching --------------------------------------------------------------------------

    def maintain(self, dim: int) -> int:
        """Nothing to do: pgvector's HNSW index is kept by the database."""
        return 0

    def maybe_unembedded(self, ids: Sequence[int]) -> list[int]:
        """All of them: which have a vector is read with their text (`SearchIndex._unembedded`)."""
        return list(ids)

    def keyword(self, terms: Sequence[str], filters: Filters, limit: int) -> list[Candidate]:
        """Candidates scored by minus ts_rank (lower is better, as SQLite's bm25())."""
        where, params = where_clause(filters)
        rows = self.store._read(
            self.sql(
                f"SELECT {CANDIDATE_COLUMNS}, -ts_rank(?::float4[], s.tsv, q) AS rank"
                " FROM search_items s, to_tsquery('english', ?) q"
                f" WHERE s.tsv @@ q AND {where} ORDER BY rank, s.id LIMIT ?"
            ),
            (_RANK_WEIGHTS, " | ".join(terms), *params, limit),
        )
        return [Candidate(*row) for row in rows]

    def keyword_ceiling(self, terms: Sequence[str], filters: Filters) -> float:
        """ts_rank's score of a text holding each of `terms` once, in its own words (weight A)."""
        text = " ".join(terms)
        rows = self.store._read(
            self.sql(
                "SELECT ts_rank(?::float4[], setweight(to_tsvector('english', ?), 'A'), to_tsquery('english', ?))"
            ),
            (_RANK_WEIGHTS, text, " | ".join(terms)),
        )
        return float(rows[0][0]) if rows else 0.0

    def nearest(self, vector: NDArray[np.float32], filters: Filters, limit: int) -> list[Candidate]:
        """Candidates scored by the cosine distance.

        An HNSW scan yields its `ef_search` nearest candidates and the filters apply after it,
        so on its own it returns fewer than `limit` rows (or none) when few items pass them.
        Hence: when few items match, all of them are compared with the query (exact); else
        the graph walk goes on until `limit` rows pass (pgvector's iterative scan, in strict
        distance order), and should it stop short (hnsw.max_scan_tuples), the exact scan
        answers. Either way `limit` rows come back whenever that many items match, as
        sqlite-vec's filtered KNN gives on SQLite."""
        where, params = where_clause(filters)
        where = self.sql("s.embedded AND " + where)
        text = _vector_text(vector)
        with self.store._write() as db:  # SET LOCAL needs a transaction
            exact_up_to = max(EXACT_SCAN_MAX, limit)
            rows: list[Any] = []
            if _count_up_to(db, where, params, exact_up_to + 1) > exact_up_to:
                rows = self._walk_graph(db, text, where, params, limit)
            if len(rows) != limit:
                rows = _exact_nearest(db, text, where, params, limit)
        return [Candidate(*row) for row in rows]

    def _walk_graph(self, db: Any, vector: str, where: str, params: Sequence[Any], limit: int) -> list[Any]:
        """The nearest matching rows by the HNSW index (the planner may still choose another plan)."""
        db.execute(f"SET LOCAL hnsw.ef_search = {min(max(_EF_SEARCH, limit), _EF_SEARCH_MAX)}")
        if self._iterative_scans(db):
            db.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        return _fetch(db, f"{_distances(where)} ORDER BY distance LIMIT %s", vector, params, limit)

    def _iterative_scans(self, db: Any) -> bool:
        if self._iterative is None:
            row = db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            self._iterative = row is not None and _version(str(row[0])) >= _ITERATIVE_SCAN_VERSION
        return self._iterative


def _distances(where: str) -> str:
    """The candidates passing `where`, scored by their distance to a vector."""
    return f"SELECT {CANDIDATE_COLUMNS}, s.embedding <=> %s::vector AS distance FROM search_items s WHERE {where}"


def _fetch(db: Any, statement: str, vector: str, params: Sequence[Any], limit: int) -> list[Any]:
    rows: list[Any] = db.execute(statement, (vector, *params, limit)).fetchall()
    return rows


def _count_up_to(db: Any, where: str, params: Sequence[Any], cap: int) -> int:
    """How many embedded items pass the filters, counted no further than `cap`."""
    row = db.execute(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM search_items s WHERE {where} LIMIT %s) matching", (*params, cap)
    ).fetchone()
    return int(row[0])


def _exact_nearest(db: Any, vector: str, where: str, params: Sequence[Any], limit: int) -> list[Any]:
    """The nearest matching rows, every match compared with the query. The subquery's OFFSET 0
    keeps the ORDER BY out of it, so the HNSW index (approximate) cannot answer it."""
    statement = f"SELECT * FROM ({_distances(where)} OFFSET 0) matching ORDER BY distance, id LIMIT %s"
    return _fetch(db, statement, vector, params, limit)


def _version(text: str) -> tuple[int, ...]:
    """(0, 8, 6) from '0.8.6'; a part that is not a number ends it."""
    parts: list[int] = []
    for part in text.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)

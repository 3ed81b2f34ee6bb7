"""The search primitives of the PostgreSQL store: words in a copy in memory, vectors in pgvector.

Searches by words run on a copy in memory of the items (`copy.LocalCopy`, as on SQLite), kept
in step from the rows changed since it last looked: ranking every match of a query with
ts_rank took ~100 ms for a common word at 100,000 items. The copy holds no vectors: they stay
in a pgvector column (HNSW index, cosine distance) created with the embedder's dimension on
first use, so a replica's memory grows with the words of the store, not its vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import CANDIDATE_COLUMNS, Candidate, Filters, ItemRow, where_clause
from recall.search.copy import LocalCopy, counting
from recall.search.local import LocalIndex

if TYPE_CHECKING:
    from recall.store.postgres import PostgresStore

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
#: The columns the copy in memory reads: no vector (those stay in pgvector), only whether there is one.
_COPY_COLUMNS = (
    "id, changed, tenant, space, kind, owner, chat_id, sender, importance, created_at, text, context,"
    " CASE WHEN embedded THEN ''::bytea END, source_id, metadata::text"
)
#: An insert that counts itself as a change (one round trip; `executemany` pipelines the rows).
_INSERT_ITEM = (
    f"WITH counted AS ({counting()})"
    " INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance,"
    " created_at, text, context, metadata, changed)"
    " SELECT %s::text, %s::citext, %s::text, %s::bigint, %s::citext, %s::text, %s::text, %s::integer,"
    " %s::double precision, %s::text, %s::text, CAST(%s AS jsonb), counted.value FROM counted"
    " ON CONFLICT (kind, source_id) DO NOTHING"
)
#: A deletion that leaves the ids for the copies, counted as a change when it deletes anything.
_DELETE_ITEMS = (
    "WITH gone AS (DELETE FROM search_items WHERE kind = %s AND source_id = ANY(%s) RETURNING id),"
    f" counted AS ({counting('EXISTS (SELECT 1 FROM gone)')})"
    " INSERT INTO search_deleted (id, changed) SELECT gone.id, counted.value FROM gone, counted"
)


def _vector_text(vector: NDArray[np.float32]) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


class PostgresSearch:
    """The `SearchBackend` of a `PostgresStore`."""

    not_embedded = "NOT embedded"
    json_param = "CAST(? AS jsonb)"

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self._copy = LocalCopy(store, self.sql, _COPY_COLUMNS)
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
        changed = self._copy.count_change(db)  # the copies learn which items have a vector
        db.execute("UPDATE search_items SET embedded = false, changed = %s WHERE embedded", (changed,))

    # -- items ----------------------------------------------------------------------------

    def insert_items(self, db: Any, rows: Sequence[ItemRow]) -> None:
        db.executemany(_INSERT_ITEM, rows)

    def delete_items(self, db: Any, kind: str, source_ids: Sequence[int]) -> int:
        db.execute(_DELETE_ITEMS, (kind, list(source_ids)))
        return int(db.rowcount)

    def store_vectors(self, db: Any, items: Sequence[Sequence[Any]], vectors: NDArray[np.float32]) -> int:
        changed = self._copy.count_change(db)  # the copies learn which items have a vector
        db.executemany(
            "UPDATE search_items SET embedded = true, embedding = %s::vector, changed = %s"
            " WHERE id = %s AND NOT embedded AND text = %s",
            [(_vector_text(v), changed, r[0], r[1]) for r, v in zip(items, vectors, strict=True)],
        )
        return int(db.rowcount) if db.rowcount >= 0 else len(items)

    # -- searching --------------------------------------------------------------------------

    def maintain(self, dim: int) -> int:
        """Bring the copy in memory in step (pgvector's HNSW index is kept by the database)."""
        self._copy.in_step()
        return 0

    def in_step(self) -> LocalIndex:
        return self._copy.in_step()

    def nearest(self, local: LocalIndex, vector: NDArray[np.float32], filters: Filters, limit: int) -> list[Candidate]:
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
        # The copy knows how many embedded items pass (not their vectors): no COUNT query.
        rows: list[Any] = []
        if local.embedded_passing(filters) > max(EXACT_SCAN_MAX, limit):
            rows = self._walk_graph(text, where, params, limit)
        if len(rows) != limit:
            # Every match compared with the query. The subquery's OFFSET 0 keeps the ORDER BY
            # out of it, so the HNSW index (approximate) cannot answer it.
            exact = f"SELECT * FROM ({_distances(where)} OFFSET 0) matching ORDER BY distance, id LIMIT %s"
            rows = self.store._read(exact, (text, *params, limit))
        return [Candidate(*row) for row in rows]

    def _walk_graph(self, vector: str, where: str, params: Sequence[Any], limit: int) -> list[Any]:
        """The nearest matching rows by the HNSW index."""
        # The walk is asked for only when the copy counted many items passing, so the graph is
        # the plan wanted; but before the table is first analyzed (a store just loaded) the
        # planner estimates one row passes and sorts every match instead: 22-28 ms at 10,000
        # items against 1.5 ms. Without sorts the ordered index scan is the only plan left.
        settings = {"enable_sort": "off", "hnsw.ef_search": str(min(max(_EF_SEARCH, limit), _EF_SEARCH_MAX))}
        if self._iterative_scans():
            settings["hnsw.iterative_scan"] = "strict_order"
        walk = f"{_distances(where)} ORDER BY distance LIMIT %s"
        return self.store._read_with(settings, walk, (vector, *params, limit))

    def _iterative_scans(self) -> bool:
        if self._iterative is None:
            row = self.store._read("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            self._iterative = bool(row) and _version(str(row[0][0])) >= _ITERATIVE_SCAN_VERSION
        return self._iterative


def _distances(where: str) -> str:
    """The candidates passing `where`, scored by their distance to a vector."""
    return f"SELECT {CANDIDATE_COLUMNS}, s.embedding <=> %s::vector AS distance FROM search_items s WHERE {where}"


def _version(text: str) -> tuple[int, ...]:
    """(0, 8, 6) from '0.8.6'; a part that is not a number ends it."""
    parts: list[int] = []
    for part in text.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)

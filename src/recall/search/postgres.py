"""The search primitives of the PostgreSQL store: searched in a copy in memory, as on SQLite.

Searches by words and by vectors run on a copy in memory of the items (`copy.LocalCopy`),
kept in step from the rows changed since it last looked: ranking every match of a query with
ts_rank took ~100 ms for a common word at 100,000 items, and pgvector's HNSW walk 3-5 ms a
query with its round trips (the copy's graph: well under one). The vectors stay in a column,
the store's record of them, which the copy reads when it catches up: of pgvector's type where
the database has the extension (`vector_send`'s bytes are read), else bytea holding the same
big-endian floats. Nothing searches the column in SQL, so the two behave alike.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import ItemRow
from recall.search.copy import LocalCopy, counting

if TYPE_CHECKING:
    from recall.store.postgres import PostgresStore

#: The advisory lock that lets one replica at a time copy messages into the index.
_INDEXING_LOCK = 7311002

logger = logging.getLogger("recall.search.postgres")


def _copy_columns(column_type: str) -> Callable[[int], str]:
    """The columns the copy in memory reads: with `dim` 0 (no embedder) only whether an item has
    a vector, else its floats (big-endian: bytea's own, or after vector_send's 4-byte header)."""
    floats = "substring(vector_send(embedding) from 5)" if column_type == "vector" else "embedding"

    def columns(dim: int) -> str:
        vector = floats if dim else "''::bytea"
        return (
            "id, changed, tenant, space, kind, owner, chat_id, sender, importance, created_at, text, context,"
            f" CASE WHEN embedded THEN {vector} END, source_id, metadata::text"
        )

    return columns


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


#: Dimensions of one pgvector value at most; a bytea column keeps as many, so an item holds the
#: same passages with or without pgvector.
PGVECTOR_MAX_DIMS = 16_000


def _kept(vector: NDArray[np.float32]) -> NDArray[np.float32]:
    """A vector, or a long item's vectors (as many as one pgvector value holds: with a model of
    more than 384 dimensions, fewer passages)."""
    rows = np.atleast_2d(vector)
    return rows[: max(1, PGVECTOR_MAX_DIMS // rows.shape[1])]


def _vector_text(vector: NDArray[np.float32]) -> str:
    """The vectors kept, one after another, as pgvector's text."""
    return "[" + ",".join(f"{float(x):.7g}" for x in _kept(vector).ravel()) + "]"


def _vector_bytes(vector: NDArray[np.float32]) -> bytes:
    """The vectors kept, one after another, as big-endian float32s (what vector_send gives)."""
    return _kept(vector).astype(">f4").tobytes()


def embedding_type(store: PostgresStore) -> str:
    """The type of `search_items.embedding`: "vector" (pgvector) or "bytea" (the database
    has no pgvector; postgres_schema.py, version 12)."""
    rows = store._read(
        "SELECT atttypid::regtype::text FROM pg_attribute"
        " WHERE attrelid = 'search_items'::regclass AND attname = 'embedding' AND NOT attisdropped"
    )
    return "vector" if rows and str(rows[0][0]) == "vector" else "bytea"


class PostgresSearch:
    """The `SearchBackend` of a `PostgresStore`."""

    not_embedded = "NOT embedded"
    json_param = "CAST(? AS jsonb)"

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        # Fixed for the store's life: a new model's column is made again of the same type.
        self.column_type = embedding_type(store)
        if self.column_type == "bytea":
            logger.info("%s has no pgvector extension: vectors are stored as bytea", store.path)
        self.copy = LocalCopy(store, self.sql, _copy_columns(self.column_type), vector_dtype=">f4")

    def sql(self, statement: str) -> str:
        # No SQL of recall's holds a literal question mark.
        return statement.replace("?", "%s")

    def lock_indexing(self, db: Any) -> None:
        """One indexer at a time across replicas; the others find the work done."""
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_INDEXING_LOCK,))

    # -- the vector column --------------------------------------------------------------

    def vectors_exist(self) -> bool:
        return bool(self.store._read("SELECT 1 FROM search_items WHERE embedded LIMIT 1"))

    def drop_vectors(self, db: Any) -> None:
        # Dropped and added again (both change only the catalog): the next model's vectors may
        # have another length than a column typed for the last one's.
        db.execute(
            "ALTER TABLE search_items DROP COLUMN IF EXISTS embedding;"
            f" ALTER TABLE search_items ADD COLUMN embedding {self.column_type}"
        )
        changed = self.copy.count_change(db)
        db.execute("UPDATE search_items SET embedded = false, changed = %s WHERE embedded", (changed,))

    # -- items ----------------------------------------------------------------------------

    def insert_items(self, db: Any, rows: Sequence[ItemRow]) -> None:
        db.executemany(_INSERT_ITEM, rows)

    def delete_items(self, db: Any, kind: str, source_ids: Sequence[int]) -> int:
        db.execute(_DELETE_ITEMS, (kind, list(source_ids)))
        return int(db.rowcount)

    def store_vectors(self, db: Any, items: Sequence[Sequence[Any]], vectors: Sequence[NDArray[np.float32]]) -> int:
        changed = self.copy.count_change(db)  # the copies learn which items have a vector
        pgvector = self.column_type == "vector"
        value = _vector_text if pgvector else _vector_bytes
        db.executemany(
            f"UPDATE search_items SET embedded = true, embedding = %s{'::vector' if pgvector else ''}, changed = %s"
            " WHERE id = %s AND NOT embedded AND text = %s",
            [(value(v), changed, r[0], r[1]) for r, v in zip(items, vectors, strict=True)],
        )
        return int(db.rowcount) if db.rowcount >= 0 else len(items)

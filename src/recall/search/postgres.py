"""The search primitives of the PostgreSQL store: searched in a copy in memory, as on SQLite.

Searches by words and by vectors run on a copy in memory of the items (`copy.LocalCopy`),
kept in step from the rows changed since it last looked: ranking every match of a query with
ts_rank took ~100 ms for a common word at 100,000 items, and pgvector's HNSW walk 3-5 ms a
query with its round trips (the copy's graph: well under one). The vectors stay in a pgvector
column, the store's record of them, which the copy reads (`vector_send`'s bytes) when it
catches up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import ItemRow
from recall.search.copy import LocalCopy, counting

if TYPE_CHECKING:
    from recall.store.postgres import PostgresStore

#: The advisory lock that lets one replica at a time copy messages into the index.
_INDEXING_LOCK = 7311002


def _copy_columns(dim: int) -> str:
    """The columns the copy in memory reads: with `dim` 0 (no embedder) only whether an item has
    a vector, else its floats (big-endian, after vector_send's 4-byte header)."""
    vector = "substring(vector_send(embedding) from 5)" if dim else "''::bytea"
    return (
        "id, changed, tenant, space, kind, owner, chat_id, sender, importance, created_at, text, context,"
        f" CASE WHEN embedded THEN {vector} END, source_id, metadata::text"
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


#: Dimensions of one pgvector value at most.
PGVECTOR_MAX_DIMS = 16_000


def _vector_text(vector: NDArray[np.float32]) -> str:
    """A vector, or a long item's vectors one after another (as many as one pgvector value
    holds: with a model of more than 384 dimensions, fewer passages), as pgvector's text."""
    rows = np.atleast_2d(vector)
    kept = rows[: max(1, PGVECTOR_MAX_DIMS // rows.shape[1])]
    return "[" + ",".join(f"{float(x):.7g}" for x in kept.ravel()) + "]"


class PostgresSearch:
    """The `SearchBackend` of a `PostgresStore`."""

    not_embedded = "NOT embedded"
    json_param = "CAST(? AS jsonb)"

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self.copy = LocalCopy(store, self.sql, _copy_columns, vector_dtype=">f4")

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
            "ALTER TABLE search_items DROP COLUMN IF EXISTS embedding; ALTER TABLE search_items ADD COLUMN embedding vector"
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
        db.executemany(
            "UPDATE search_items SET embedded = true, embedding = %s::vector, changed = %s"
            " WHERE id = %s AND NOT embedded AND text = %s",
            [(_vector_text(v), changed, r[0], r[1]) for r, v in zip(items, vectors, strict=True)],
        )
        return int(db.rowcount) if db.rowcount >= 0 else len(items)

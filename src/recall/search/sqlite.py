"""The search primitives of the SQLite store, searched in a copy in memory.

Items live in `search_items` (the source of truth), with their vector (`embedding`) once
embedded. Searches run on a copy in memory, words and vectors (`copy.LocalCopy`): FTS5 (which
recall used before) ranks every match of a query before it filters, and a vector scan in SQL
took about 90 ms at 100,000 items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import ItemRow, marks
from recall.search.copy import LocalCopy

if TYPE_CHECKING:
    from recall.store.sqlite import SQLiteStore

_COPY_COLUMNS = (
    "id, changed, tenant, space, kind, owner, chat_id, sender, importance, created_at, text, context, embedding,"
    " source_id, metadata"
)


def load_vector_extension(db: Any) -> None:
    """sqlite-vec: needed only to drop the `vec0` table (`search_vec`) of stores made before
    schema version 7."""
    import sqlite_vec  # imported here: it loads numpy, which `import recall` does not need

    db.enable_load_extension(True)
    sqlite_vec.load(db)
    db.enable_load_extension(False)


class SQLiteSearch:
    """The `SearchBackend` of a `SQLiteStore`: writes on its connection and under its lock,
    searches in the copy in memory."""

    not_embedded = "embedded = 0"
    json_param = "?"

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self.copy = LocalCopy(store, self.sql, lambda dim: _COPY_COLUMNS)

    def sql(self, statement: str) -> str:
        return statement

    def lock_indexing(self, db: Any) -> None:
        """Nothing to do: the write transaction (BEGIN IMMEDIATE) already excludes every writer."""

    # -- vectors ----------------------------------------------------------------------------

    def vectors_exist(self) -> bool:
        return bool(
            self.store._read(
                "SELECT 1 FROM search_items WHERE embedding IS NOT NULL"
                " UNION ALL SELECT 1 FROM sqlite_master WHERE name = 'search_vec' LIMIT 1"
            )
        )

    def drop_vectors(self, db: Any) -> None:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'search_vec'").fetchone():
            load_vector_extension(db)  # a vec0 table can only be dropped with its module loaded
            db.execute("DROP TABLE search_vec")
        changed = self.copy.count_change(db)
        db.execute("UPDATE search_items SET embedded = 0, embedding = NULL, changed = ? WHERE embedded = 1", (changed,))

    def store_vectors(self, db: Any, items: Sequence[Sequence[Any]], vectors: Sequence[NDArray[np.float32]]) -> int:
        changed = self.copy.count_change(db)
        stored = 0
        for (item_id, text), vector in zip(items, vectors, strict=True):
            stored += db.execute(
                "UPDATE search_items SET embedded = 1, embedding = ?, changed = ?"
                " WHERE id = ? AND embedded = 0 AND text = ?",
                (np.asarray(vector, dtype=np.float32).tobytes(), changed, item_id, text),
            ).rowcount
        return stored

    # -- items ----------------------------------------------------------------------------

    def insert_items(self, db: Any, rows: Sequence[ItemRow]) -> None:
        changed = self.copy.count_change(db)
        for row in rows:
            db.execute(
                "INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance,"
                " created_at, text, context, metadata, embedded, changed)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)"
                " ON CONFLICT (kind, source_id) DO NOTHING",
                (*row, changed),
            )

    def delete_items(self, db: Any, kind: str, source_ids: Sequence[int]) -> int:
        rows = db.execute(
            f"SELECT id FROM search_items WHERE kind = ? AND source_id IN ({marks(source_ids)})", (kind, *source_ids)
        ).fetchall()
        self.copy.delete(db, [int(r[0]) for r in rows])
        return len(rows)

"""The search primitives of the SQLite store: FTS5 (BM25) and vectors searched in memory.

Items live in `search_items`, their words in the external-content FTS5 table `search_fts` (no
triggers: this module writes both). Vectors live as rows of `search_vectors` (the source of
truth) and are searched in a copy in memory (`vectors.VectorIndex`): a scan of 100,000 vectors
in SQL costs about 90 ms, the copy answers in a few. The copy is brought in step before each
search, and by the background indexer (`maintain`), from the rows changed since it last
looked: `search_state.vectors_changed` counts the transactions that wrote vectors, and each
row keeps the count of the last one that wrote it. So vectors written by another process (the
index worker, a CLI command) are found too, and a deleted item's vector (a tombstone row, its
embedding gone) is forgotten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import CONTEXT_WEIGHT, ITEM_COLUMNS, Filters, ItemRow, marks, query_terms, where_clause
from recall.search.vectors import VectorIndex, VectorRow

if TYPE_CHECKING:
    from recall.store.sqlite import SQLiteStore

_CHANGED = "vectors_changed"
#: Counts one more vector-writing transaction; its value marks the rows that transaction writes.
_BUMP = (
    "INSERT INTO search_state (name, value) VALUES (?, 1)"
    " ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value"
)
#: Rows read per statement when the copy catches up.
_SYNC_PAGE = 5000


def match_expression(query: str) -> str:
    """A safe FTS5 MATCH expression for free text: each word but the stop words quoted, joined
    with OR (BM25 then ranks documents with more and rarer words higher). '' when the text has
    no words."""
    return _match(query_terms(query))


def _match(terms: Sequence[str]) -> str:
    return " OR ".join(f'"{t}"' for t in terms)


class SQLiteSearch:
    """The `SearchBackend` of a `SQLiteStore`: on its connection and under its lock; vectors
    searched in memory."""

    not_embedded = "embedded = 0"

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self._memory: VectorIndex | None = None

    def sql(self, statement: str) -> str:
        return statement

    def lock_indexing(self, db: Any) -> None:
        """Nothing to do: the write transaction (BEGIN IMMEDIATE) already excludes every writer."""

    # -- vectors ----------------------------------------------------------------------------

    def vectors_exist(self) -> bool:
        return bool(
            self.store._read(
                "SELECT 1 FROM search_vectors WHERE embedding IS NOT NULL"
                " UNION ALL SELECT 1 FROM sqlite_master WHERE name = 'search_vec' LIMIT 1"
            )
        )

    def create_vectors(self, db: Any, dim: int) -> None:
        """Nothing to create (the table is part of the schema); the copy in memory starts empty."""
        if self._memory is None or self._memory.dim != dim:
            self._memory = VectorIndex(dim)

    def drop_vectors(self, db: Any) -> None:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'search_vec'").fetchone():
            from recall.store.sqlite_schema import load_vector_extension

            load_vector_extension(db)  # a vec0 table can only be dropped with its module loaded
            db.execute("DROP TABLE search_vec")
        (changed,) = db.execute(_BUMP, (_CHANGED,)).fetchone()
        db.execute("UPDATE search_vectors SET embedding = NULL, changed = ? WHERE embedding IS NOT NULL", (changed,))
        db.execute("UPDATE search_items SET embedded = 0 WHERE embedded = 1")
        self._memory = None

    def store_vectors(self, db: Any, items: Sequence[Sequence[Any]], vectors: NDArray[np.float32]) -> int:
        stored = []
        for (item_id, text), vector in zip(items, vectors, strict=True):
            marked = db.execute(
                "UPDATE search_items SET embedded = 1 WHERE id = ? AND embedded = 0 AND text = ? RETURNING id",
                (item_id, text),
            ).fetchone()
            if marked is not None:
                stored.append((item_id, np.asarray(vector, dtype=np.float32).tobytes()))
        if stored:
            (changed,) = db.execute(_BUMP, (_CHANGED,)).fetchone()
            db.executemany(
                "INSERT INTO search_vectors (id, changed, embedding) VALUES (?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET changed = excluded.changed, embedding = excluded.embedding",
                [(item_id, changed, blob) for item_id, blob in stored],
            )
        return len(stored)

    # -- items ----------------------------------------------------------------------------

    def insert_items(self, db: Any, rows: Sequence[ItemRow]) -> None:
        for row in rows:
            new = db.execute(
                "INSERT INTO search_items (tenant, space, kind, source_id, owner, chat_id, sender, importance,"
                " created_at, text, context, embedded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
                " ON CONFLICT (kind, source_id) DO NOTHING RETURNING id",
                row,
            ).fetchone()
            if new is not None:
                db.execute(
                    "INSERT INTO search_fts (rowid, text, context) VALUES (?, ?, ?)", (new[0], row.text, row.context)
                )

    def delete_items(self, db: Any, kind: str, source_ids: Sequence[int]) -> int:
        rows = db.execute(
            f"SELECT id, text, context, embedded FROM search_items WHERE kind = ? AND source_id IN ({marks(source_ids)})",
            (kind, *source_ids),
        ).fetchall()
        if not rows:
            return 0
        # The FTS table is external-content: deleting its rows takes their old values.
        db.executemany(
            "INSERT INTO search_fts (search_fts, rowid, text, context) VALUES ('delete', ?, ?, ?)",
            [r[:3] for r in rows],
        )
        embedded = [(r[0],) for r in rows if r[3]]
        if embedded:
            (changed,) = db.execute(_BUMP, (_CHANGED,)).fetchone()
            db.executemany(
                f"UPDATE search_vectors SET embedding = NULL, changed = {int(changed)} WHERE id = ?", embedded
            )
        db.executemany("DELETE FROM search_items WHERE id = ?", [(r[0],) for r in rows])
        return len(rows)

    # -- the copy in memory ---------------------------------------------------------------

    def _in_step(self, dim: int) -> VectorIndex:
        """The copy in memory, with every vector change the store holds applied."""
        memory = self._memory
        if memory is None or memory.dim != dim:
            memory = self._memory = VectorIndex(dim)
        latest = self.store._read("SELECT value FROM search_state WHERE name = ?", (_CHANGED,))
        if not latest or int(latest[0][0]) <= memory.synced:
            return memory
        while True:
            rows = self.store._read(
                "SELECT v.id, v.changed, v.embedding, s.tenant, s.space, s.kind, s.owner, s.chat_id, s.sender,"
                " s.importance, s.created_at FROM search_vectors v LEFT JOIN search_items s ON s.id = v.id"
                " WHERE v.changed > ? ORDER BY v.changed, v.id LIMIT ?",
                (memory.synced, _SYNC_PAGE),
            )
            if not rows:
                return memory
            # A page ends at a whole transaction: the rest of the last one comes with the next page.
            last = rows[-1][1]
            whole = [r for r in rows if r[1] < last] if len(rows) == _SYNC_PAGE else rows
            if not whole:  # one transaction wrote more rows than a page: take it all
                whole = self.store._read(
                    "SELECT v.id, v.changed, v.embedding, s.tenant, s.space, s.kind, s.owner, s.chat_id, s.sender,"
                    " s.importance, s.created_at FROM search_vectors v LEFT JOIN search_items s ON s.id = v.id"
                    " WHERE v.changed = ? ORDER BY v.id",
                    (last,),
                )
            memory.apply([(int(r[0]), _vector_row(r, dim)) for r in whole], int(whole[-1][1]))

    def maintain(self, dim: int) -> int:
        """Bring the copy in memory in step and build the graphs of large partitions (the
        background indexer's work, never a search's); rows added to graphs."""
        return self._in_step(dim).build_graphs()

    # -- searching --------------------------------------------------------------------------

    def keyword(self, terms: Sequence[str], filters: Filters, limit: int) -> list[Any]:
        """Search rows scored by bm25() (lower is better)."""
        where, params = where_clause(filters)
        # FTS5 ranks the whole corpus's matches, then the item filters apply; the join goes
        # FTS-first because a MATCH is the selective part for most queries. CROSS JOIN makes
        # SQLite keep that order: with a plain JOIN the planner drives from search_items' kind
        # index and runs the full-text query once per item (measured on a 419-message world:
        # 68 ms per search instead of 1 ms).
        return self.store._read(
            f"SELECT {ITEM_COLUMNS}, bm25(search_fts, 1.0, ?) AS rank FROM search_fts"
            " CROSS JOIN search_items s ON s.id = search_fts.rowid"
            f" WHERE search_fts MATCH ? AND {where} ORDER BY rank LIMIT ?",
            (CONTEXT_WEIGHT, _match(terms), *params, limit),
        )

    def nearest(self, vector: NDArray[np.float32], filters: Filters, limit: int) -> list[Any]:
        """Search rows scored by the cosine distance: the copy in memory finds the nearest
        items that pass the filters (`limit` whenever that many do), the store gives their rows.
        An item deleted by another process since the copy was brought in step is left out."""
        found = self._in_step(len(vector)).nearest(vector, filters, limit)
        if not found:
            return []
        ids = [item_id for item_id, _ in found]
        rows = {
            row[0]: row
            for row in self.store._read(f"SELECT {ITEM_COLUMNS} FROM search_items s WHERE s.id IN ({marks(ids)})", ids)
        }
        return [(*rows[item_id], distance) for item_id, distance in found if item_id in rows]


def _vector_row(row: Sequence[Any], dim: int) -> VectorRow | None:
    """The copy's row of a `search_vectors` row joined with its item; None for a tombstone (or a
    vector of another length, from a model no longer in use)."""
    if row[2] is None or row[3] is None or len(row[2]) != 4 * dim:
        return None
    return VectorRow(
        item_id=int(row[0]),
        tenant=row[3],
        space=row[4],
        kind=row[5],
        owner=row[6],
        chat_id=row[7],
        sender=row[8],
        importance=row[9],
        created_at=float(row[10]),
        vector=np.frombuffer(row[2], dtype=np.float32),
    )

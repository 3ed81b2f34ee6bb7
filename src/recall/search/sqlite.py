"""The search primitives of the SQLite store, searched in a copy in memory.

Items live in `search_items` (the source of truth), with their vector (`embedding`) once
embedded. Searches run on a copy in memory (`local.LocalIndex`), words and vectors: FTS5
(which recall used before) ranks every match of a query before it filters, so a common word in
20,000 of 100,000 messages cost 15-25 ms, and a vector scan in SQL about 90 ms; the copy
answers both in a few. It is brought in step before each search, and by the
background indexer (`maintain`), from the rows changed since it last looked:
`search_state.search_changed` counts the transactions that insert, embed or delete items; each
item keeps the count of the last one that wrote it, and a deleted item leaves its id and count
in `search_deleted`. So what another process writes or deletes (the index worker, a CLI
command) is searched too.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import Candidate, Filters, ItemRow, marks
from recall.search.local import LocalIndex, LocalRow

if TYPE_CHECKING:
    from recall.store.sqlite import SQLiteStore

_CHANGED = "search_changed"
#: Counts one more transaction that changes items; its value marks the rows that transaction writes.
_BUMP = (
    "INSERT INTO search_state (name, value) VALUES (?, 1)"
    " ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value"
)
#: Rows read per statement when the copy catches up.
_SYNC_PAGE = 5000
_SYNC_COLUMNS = (
    "id, changed, tenant, space, kind, owner, chat_id, sender, importance, created_at, text, context, embedding,"
    " source_id, metadata"
)


class SQLiteSearch:
    """The `SearchBackend` of a `SQLiteStore`: writes on its connection and under its lock,
    searches in the copy in memory."""

    not_embedded = "embedded = 0"
    json_param = "?"

    def __init__(self, store: SQLiteStore, dim: int = 0) -> None:
        self.store = store
        self._local: LocalIndex | None = None
        #: One catch-up at a time (a search and the background indexer would read the same rows).
        self._syncing = threading.Lock()
        #: The vector length of the embedder (0: keyword search only).
        self._dim = dim

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

    def create_vectors(self, db: Any, dim: int) -> None:
        """Nothing to create (vectors are a column); the copy holds vectors of `dim` floats (read
        again from the store if it held another length)."""
        if dim != self._dim:
            self._dim, self._local = dim, None

    def drop_vectors(self, db: Any) -> None:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'search_vec'").fetchone():
            from recall.store.sqlite_schema import load_vector_extension

            load_vector_extension(db)  # a vec0 table can only be dropped with its module loaded
            db.execute("DROP TABLE search_vec")
        (changed,) = db.execute(_BUMP, (_CHANGED,)).fetchone()
        db.execute("UPDATE search_items SET embedded = 0, embedding = NULL, changed = ? WHERE embedded = 1", (changed,))

    def store_vectors(self, db: Any, items: Sequence[Sequence[Any]], vectors: NDArray[np.float32]) -> int:
        (changed,) = db.execute(_BUMP, (_CHANGED,)).fetchone()
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
        (changed,) = db.execute(_BUMP, (_CHANGED,)).fetchone()
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
        if not rows:
            return 0
        (changed,) = db.execute(_BUMP, (_CHANGED,)).fetchone()
        db.executemany("INSERT INTO search_deleted (id, changed) VALUES (?, ?)", [(r[0], changed) for r in rows])
        db.executemany("DELETE FROM search_items WHERE id = ?", [(r[0],) for r in rows])
        return len(rows)

    # -- the copy in memory ---------------------------------------------------------------

    def _in_step(self) -> LocalIndex:
        """The copy in memory, with every change the store holds applied."""
        with self._syncing:
            return self._catch_up()

    def _catch_up(self) -> LocalIndex:
        local = self._local
        if local is None:
            local = self._local = LocalIndex(self._dim)
        latest = self.store._read("SELECT value FROM search_state WHERE name = ?", (_CHANGED,))
        if local.synced >= 0 and (not latest or int(latest[0][0]) <= local.synced):
            return local
        while True:
            # Items written and items deleted since, oldest change first; a page ends with a
            # whole transaction (the rest of the last one comes with the next page).
            after = local.synced
            written = self.store._read(
                f"SELECT {_SYNC_COLUMNS} FROM search_items WHERE changed > ? ORDER BY changed, id LIMIT ?",
                (after, _SYNC_PAGE),
            )
            if len(written) == _SYNC_PAGE:
                last = written[-1][1]
                written = [r for r in written if r[1] < last] or self.store._read(
                    f"SELECT {_SYNC_COLUMNS} FROM search_items WHERE changed = ? ORDER BY id", (last,)
                )
            upto = written[-1][1] if written else None
            deleted = self.store._read(
                "SELECT id, changed FROM search_deleted WHERE changed > ?"
                + (" AND changed <= ?" if upto is not None else "")
                + " ORDER BY changed",
                (after, upto) if upto is not None else (after,),
            )
            if not written and not deleted:
                local.synced = max(local.synced, 0)
                return local
            changes = sorted(
                [(int(r[1]), 1, int(r[0]), self._row(r)) for r in written]
                + [(int(r[1]), 0, int(r[0]), None) for r in deleted],
                key=lambda change: change[:2],  # within a transaction, deletions first
            )
            local.apply([(item, row) for _, _, item, row in changes], max(c[0] for c in changes))

    def _row(self, r: Sequence[Any]) -> LocalRow:
        blob = r[12]
        vector = np.frombuffer(blob, dtype=np.float32) if blob is not None and len(blob) == 4 * self._dim else None
        return LocalRow(
            item_id=int(r[0]),
            tenant=r[2],
            space=r[3],
            kind=r[4],
            owner=r[5],
            chat_id=r[6],
            sender=r[7],
            importance=r[8],
            created_at=float(r[9]),
            text=r[10],
            context=r[11] or "",
            vector=vector,
            source_id=int(r[13]),
            metadata=r[14],
        )

    def maintain(self, dim: int) -> int:
        """Bring the copy in memory in step and build the graphs of large partitions (the
        background indexer's work, never a search's); rows added to graphs."""
        if dim:
            self.create_vectors(None, dim)
        return self._in_step().build_graphs()

    # -- searching --------------------------------------------------------------------------

    def keyword(self, terms: Sequence[str], filters: Filters, limit: int) -> list[Candidate]:
        """Candidates scored by the negated BM25 score (lower is better)."""
        return self._in_step().keyword_candidates(terms, filters, limit)

    def keyword_ceiling(self, terms: Sequence[str], filters: Filters) -> float:
        """BM25's score of a text of average length holding each of `terms` once."""
        return self._in_step().keyword_ceiling(terms, filters)

    def nearest(self, vector: NDArray[np.float32], filters: Filters, limit: int) -> list[Candidate]:
        """Candidates scored by the cosine distance: `limit` whenever that many items pass the
        filters."""
        self.create_vectors(None, len(vector))  # a no-op but for a backend made without the length
        return self._in_step().nearest_candidates(vector, filters, limit)

    def maybe_unembedded(self, ids: Sequence[int]) -> list[int]:
        """Those the copy in memory (in step with the store) holds without a vector."""
        return self._in_step().unembedded(ids)

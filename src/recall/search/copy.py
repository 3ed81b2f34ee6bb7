"""A store's search items in memory (`local.LocalIndex`), kept in step with the store.

Searches run on the copy: ranking every match of a query in SQL (FTS5's bm25(), PostgreSQL's
ts_rank) costs time in proportion to the matches (a common word in 20,000 of 100,000 items:
15-25 ms on SQLite, ~100 ms on PostgreSQL), the copy a few milliseconds. It is brought in step
before each search, and by the background indexer, from the rows changed since it last looked:
`search_state.search_changed` counts the transactions that insert or delete items or store
their vectors; each item keeps the count of the last transaction that wrote it, and a deleted
item leaves its id and count in `search_deleted`. So
what another process writes or deletes (the index worker, a CLI command, another replica) is
searched too.

The counter is one row, and a transaction that counts itself holds that row until it commits:
transactions that change items commit in the order of their counts, so every count up to the
one read is committed, and a catch-up reads exactly the changes up to it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from recall.search.base import RowStore, marks
from recall.search.local import LocalIndex
from recall.search.local_partition import LocalRow

_CHANGED = "search_changed"


def counting(when: str = "true") -> str:
    """The statement that counts one more change of items, if the SQL condition `when` holds,
    returning the count: the value the change's rows carry. A backend may run it inside a
    statement of its own (a PostgreSQL CTE), saving a round trip."""
    return (
        f"INSERT INTO search_state (name, value) SELECT '{_CHANGED}', 1 WHERE {when}"
        " ON CONFLICT (name) DO UPDATE SET value = search_state.value + 1 RETURNING value"
    )


#: Rows read per statement when the copy catches up.
_SYNC_PAGE = 5000


class LocalCopy:
    """The copy in memory of one store's `search_items`, read with `columns(dim)`: id, changed,
    tenant, space, kind, owner, chat_id, sender, importance, created_at, text, context, the
    vector (`dim` float32s of the byte order `vector_dtype` names, a long item's passages'
    vectors after it; with `dim` 0, an empty blob for an item embedded; NULL for none), source_id and the metadata (JSON text)."""

    def __init__(
        self, store: RowStore, sql: Callable[[str], str], columns: Callable[[int], str], vector_dtype: str = "<f4"
    ) -> None:
        self._store = store
        self._sql = sql
        self._columns = columns
        self._vector_dtype = np.dtype(vector_dtype)
        #: The vector length the copy holds (0: none).
        self.dim = 0
        self._local: LocalIndex | None = None
        #: One catch-up at a time (a search and the background indexer would read the same rows).
        self._syncing = threading.Lock()

    def hold_vectors(self, dim: int) -> None:
        """Hold vectors of `dim` floats from now on (read again from the store if it held another length)."""
        if dim != self.dim:
            self.dim, self._local = dim, None  # a catch-up under way fills the copy dropped here

    # -- writing (inside the store's write transaction) --------------------------------------

    def count_change(self, db: Any) -> int:
        """Count this transaction as one more that changes items; the value its rows carry."""
        (changed,) = db.execute(counting()).fetchone()
        return int(changed)

    def delete(self, db: Any, ids: Sequence[int]) -> None:
        """Delete the items `ids`, leaving each one's id and count for the copies to drop."""
        if not ids:
            return
        changed = self.count_change(db)
        db.executemany(self._sql("INSERT INTO search_deleted (id, changed) VALUES (?, ?)"), [(i, changed) for i in ids])
        db.execute(self._sql(f"DELETE FROM search_items WHERE id IN ({marks(ids)})"), list(ids))

    # -- reading ------------------------------------------------------------------------------

    def in_step(self) -> LocalIndex:
        """The copy, with every change the store holds applied."""
        with self._syncing:
            local = self._local
            if local is None:
                local = self._local = LocalIndex(self.dim)
            latest = self._store._read(self._sql("SELECT value FROM search_state WHERE name = ?"), (_CHANGED,))
            target = int(latest[0][0]) if latest else 0
            while local.synced < target:
                self._catch_up(local, target)
            return local

    def _catch_up(self, local: LocalIndex, target: int) -> None:
        """Apply the next page of changes up to `target`: items written and deleted, oldest
        first; a page ends with a whole transaction (the rest of the last one comes with the next)."""
        after = local.synced
        columns = self._columns(local.dim)
        written = self._store._read(
            self._sql(
                f"SELECT {columns} FROM search_items s WHERE changed > ? AND changed <= ? ORDER BY changed, id LIMIT ?"
            ),
            (after, target, _SYNC_PAGE),
        )
        upto = target
        if len(written) == _SYNC_PAGE:
            last = int(written[-1][1])
            written = [r for r in written if r[1] < last] or self._store._read(
                self._sql(f"SELECT {columns} FROM search_items s WHERE changed = ? ORDER BY id"), (last,)
            )
            upto = int(written[-1][1])
        deleted = self._store._read(
            self._sql("SELECT id, changed FROM search_deleted WHERE changed > ? AND changed <= ? ORDER BY changed"),
            (after, upto),
        )
        changes = sorted(
            [(int(r[1]), 1, int(r[0]), self._row(r, local.dim)) for r in written]
            + [(int(r[1]), 0, int(r[0]), None) for r in deleted],
            key=lambda change: change[:2],  # within a transaction, deletions first
        )
        local.apply([(item, row) for _, _, item, row in changes], upto)

    def _row(self, r: Sequence[Any], dim: int) -> LocalRow:
        blob = r[12]
        vector = None
        if blob is not None and dim and len(blob) and len(blob) % (4 * dim) == 0:
            vector = np.frombuffer(blob, dtype=self._vector_dtype).astype(np.float32, copy=False)
            if len(vector) > dim:  # a long item's: its text's vector, then its passages'
                vector = vector.reshape(-1, dim)
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

"""The primitives a database implements for the search index (`SearchBackend`): where its words
and vectors are searched and how its items and vectors are written. `sqlite.py` and
`postgres.py` implement it; the index (`index.SearchIndex`) is written once over it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from recall.search.base import ItemRow, RowStore
from recall.search.copy import LocalCopy

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


class SearchBackend(Protocol):
    """The primitives a database implements for the index; `db` is the cursor of a write
    transaction (`store._write()`). Shared SQL is written with `?` and passed through `sql()`."""

    #: The SQL condition of an item not embedded yet (the one its partial index is built on).
    not_embedded: str
    #: The SQL of a parameter written into the `metadata` column (JSON text).
    json_param: str

    @property
    def store(self) -> RowStore:
        """The store whose rows are indexed (and where the index lives)."""
        ...

    @property
    def copy(self) -> LocalCopy:
        """The copy in memory of the items, which searches read (`copy.LocalCopy`)."""
        ...

    def sql(self, statement: str) -> str:
        """`statement` with this database's parameter placeholders instead of `?`."""
        ...

    def lock_indexing(self, db: Any) -> None:
        """Keep other writers of index items (other processes' too) waiting until this
        transaction ends. Every transaction that writes items takes it first: they count a
        change (one row) and touch items in different orders, so without it two of them could
        each wait for the other."""
        ...

    def vectors_exist(self) -> bool:
        """Whether any vector is stored."""
        ...

    def drop_vectors(self, db: Any) -> None:
        """Drop every vector (and the storage) and mark every item not embedded."""
        ...

    def insert_items(self, db: Any, rows: Sequence[ItemRow]) -> None:
        """Insert items, keeping the existing one where one of the same kind and source id is
        there; counted as a change for the copies in memory (`copy.py`)."""
        ...

    def delete_items(self, db: Any, kind: str, source_ids: Sequence[int]) -> int:
        """Delete the items of `kind` with these source ids, their vectors included, leaving
        their ids for the copies in memory to drop; how many there were."""
        ...

    def store_vectors(self, db: Any, items: Sequence[Sequence[Any]], vectors: Sequence[NDArray[np.float32]]) -> int:
        """Store each (id, text) item's vector (a long text's: a matrix, its passages' vectors
        after its own), marking it embedded, unless the item is gone or its text changed
        meanwhile; how many were stored."""
        ...

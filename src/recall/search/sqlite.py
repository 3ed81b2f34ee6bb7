"""The search primitives of the SQLite store: FTS5 (BM25) and sqlite-vec.

Items live in `search_items`, their words in the external-content FTS5 table `search_fts` (no
triggers: this module writes both). Vectors live in the `vec0` table `search_vec`, created on
first use with the embedder's dimension.

`search_vec` layout and why (sqlite-vec 0.1.9, verified by experiment):

- `tenant` and `space` are PARTITION KEYs: a KNN query scans only the vectors of one
  (tenant, space), so another tenant's or space's items can never appear, and a search costs
  what its own space holds. Both are needed: 'user:ID' spaces repeat across tenants.
  Partition keys compare case-sensitively, so the space is stored lowercased (world ids are
  case-insensitive).
- A partition allocates whole chunks of `chunk_size` vectors (at 384-d the default 1024 is
  1.5 MB per partition, even for a user with three facts), so chunks are 32 vectors
  (~50 KB); KNN over 20k vectors in one space measured the same (~17-19 ms) either way.
- kind, owner, chat_id, sender, importance, created_at are metadata columns, filtered
  inside the KNN (so `k` results still come back after filtering). They accept =, !=, <,
  <=, >, >= and IN; not IS NULL, and they cannot hold NULL: '' stands for no chat or
  sender and -1 for no importance. Owners are lowercased like spaces.
- `k` is at most 4096 per query; INSERT OR REPLACE is not supported (delete, then insert).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import CONTEXT_WEIGHT, ITEM_COLUMNS, Filters, ItemRow, marks, query_terms, where_clause

if TYPE_CHECKING:
    from recall.store.sqlite import SQLiteStore

#: sqlite-vec refuses a KNN `k` above this.
_VEC_MAX_K = 4096
#: Vectors per partition chunk; see the module docstring.
_VEC_CHUNK = 32


def match_expression(query: str) -> str:
    """A safe FTS5 MATCH expression for free text: each word but the stop words quoted, joined
    with OR (BM25 then ranks documents with more and rarer words higher). '' when the text has
    no words."""
    return _match(query_terms(query))


def _match(terms: Sequence[str]) -> str:
    return " OR ".join(f'"{t}"' for t in terms)


class SQLiteSearch:
    """The `SearchBackend` of a `SQLiteStore`: on its connection and under its lock."""

    not_embedded = "embedded = 0"

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def sql(self, statement: str) -> str:
        return statement

    def lock_indexing(self, db: Any) -> None:
        """Nothing to do: the write transaction (BEGIN IMMEDIATE) already excludes every writer."""

    # -- the vector table ---------------------------------------------------------------

    def vectors_exist(self) -> bool:
        return bool(self.store._read("SELECT 1 FROM sqlite_master WHERE name = 'search_vec'"))

    def create_vectors(self, db: Any, dim: int) -> None:
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS search_vec USING vec0("
            " id INTEGER PRIMARY KEY,"
            " tenant TEXT PARTITION KEY,"
            " space TEXT PARTITION KEY,"
            f" embedding float[{int(dim)}] distance_metric=cosine,"
            " kind TEXT, owner TEXT, chat_id TEXT, sender TEXT, importance INTEGER, created_at FLOAT,"
            f" chunk_size={_VEC_CHUNK})"
        )

    def drop_vectors(self, db: Any) -> None:
        db.execute("DROP TABLE IF EXISTS search_vec")
        db.execute("UPDATE search_items SET embedded = 0 WHERE embedded = 1")

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
            f"SELECT id, text, context FROM search_items WHERE kind = ? AND source_id IN ({marks(source_ids)})",
            (kind, *source_ids),
        ).fetchall()
        if not rows:
            return 0
        # The FTS table is external-content: deleting its rows takes their old values.
        db.executemany("INSERT INTO search_fts (search_fts, rowid, text, context) VALUES ('delete', ?, ?, ?)", rows)
        if self.vectors_exist():
            db.executemany("DELETE FROM search_vec WHERE id = ?", [(r[0],) for r in rows])
        db.executemany("DELETE FROM search_items WHERE id = ?", [(r[0],) for r in rows])
        return len(rows)

    def store_vectors(self, db: Any, items: Sequence[Sequence[Any]], vectors: NDArray[np.float32]) -> int:
        stored = 0
        for (item_id, text), vector in zip(items, vectors, strict=True):
            item = db.execute(
                "UPDATE search_items SET embedded = 1 WHERE id = ? AND embedded = 0 AND text = ?"
                " RETURNING tenant, space, kind, owner, chat_id, sender, importance, created_at",
                (item_id, text),
            ).fetchone()
            if item is None:
                continue
            db.execute(
                "INSERT INTO search_vec (id, tenant, space, embedding, kind, owner, chat_id, sender, importance,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    item_id, item[0], item[1].lower(), vector.tobytes(), item[2], item[3].lower(),
                    item[4] or "", item[5] or "", -1 if item[6] is None else item[6], float(item[7]),
                ),
            )  # fmt: skip
            stored += 1
        return stored

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
        """Search rows scored by the cosine distance. The filters are KNN constraints on
        `search_vec`, so `limit` rows come back whenever that many items pass them (with
        sentinels instead of NULL: '' for no chat or sender, -1 for no importance, which
        `>= min_importance` excludes)."""
        where, params = where_clause(replace(filters, space=filters.space.lower()), _vec_column)
        return self.store._read(
            f"SELECT {ITEM_COLUMNS}, v.distance FROM ("
            " SELECT id, distance FROM search_vec"
            f" WHERE embedding MATCH ? AND k = ? AND {where}) v"
            " JOIN search_items s ON s.id = v.id ORDER BY v.distance",
            (vector.tobytes(), min(limit, _VEC_MAX_K), *params),
        )


def _vec_column(name: str) -> str:
    """A filter field as a metadata column of `search_vec`."""
    return name

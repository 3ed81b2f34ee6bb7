"""A deleted item leaves the search index's copy in memory entirely: its vector (the matrix and
the HNSW graph) at once, its words at the next maintenance, and a partition whose every item
was deleted goes whole."""

from __future__ import annotations

import numpy as np
import pytest

from recall.search import local as local_module
from recall.search import local_partition
from recall.search.base import Filters
from recall.search.local import LocalIndex
from recall.search.local_partition import LocalRow

DIM = 8
ALL = Filters("t", "w", ("message", "memory", "fact"), None, None, None, None, None, None)


def rows(n: int, space: str = "w") -> list[LocalRow]:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        LocalRow(i, "t", space, "message", "", None, "ann", None, float(i), f"word{i} common", "", vectors[i - 1])
        for i in range(1, n + 1)
    ]


def test_a_deleted_item_leaves_the_matrix_the_graph_and_the_postings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "GRAPH_MIN_ROWS", 50)
    monkeypatch.setattr(local_partition, "EXACT_MAX_ROWS", 5)
    index = LocalIndex(DIM)
    made = rows(80)
    index.apply([(r.item_id, r) for r in made], 1)
    assert index.build_graphs() == 80
    partition = index._partitions[("t", "w")]
    assert partition.graph is not None and partition.graph.contains(6)

    index.apply([(7, None)], 2)  # item 7 is row 6

    assert not partition.matrix[6].any() and not partition.graph.contains(6)
    assert 7 not in [item for item, _ in index.nearest(made[6].vector, ALL, 10)]
    assert index.keyword(["word7"], ALL, 5) == []
    assert "word7" in partition.terms  # until maintenance compacts the postings
    index.build_graphs()
    assert "word7" not in partition.terms and partition.removed == 0
    assert len(partition.terms["common"].rows) == 79
    assert [item for item, _ in index.keyword(["word8"], ALL, 5)] == [8]


def test_a_partition_whose_items_are_all_deleted_goes() -> None:
    index = LocalIndex(DIM)
    index.apply([(r.item_id, r) for r in rows(3, "user:maria")], 1)
    index.apply([(1, None), (2, None), (3, None)], 2)
    assert ("t", "user:maria") not in index._partitions and len(index) == 0

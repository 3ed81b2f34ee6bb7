"""Hybrid ranking: reciprocal rank fusion (RRF) of several rankings of the same items.

BM25 scores and cosine similarities live on different scales (BM25 is unbounded and depends
on the corpus; cosine is 0..1 and compressed for short texts), so adding them needs tuning
per corpus. RRF only uses ranks: an item's score is the sum over the rankings that contain
it of `weight / (k + rank)`. Items found by both methods rise; the constant `k` (60 in the
original paper, Cormack et al. 2009) keeps one method's top hit from dominating.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from recall.errors import InvalidInputError
from recall.search.base import SearchHit, hit, similarity

#: The usual RRF constant; larger values flatten the difference between top and lower ranks.
DEFAULT_RRF_K = 60
#: Hybrid fusion, tuned on LoCoMo (docs/benchmarks.md): a small RRF constant lets each method's
#: top hits count, and BM25 weighs more than the vectors because all-MiniLM-L6-v2, trained on
#: short sentence pairs, ranks chat turns less precisely than their exact words do.
HYBRID_RRF_K = 10
HYBRID_WEIGHTS = {"bm25": 1.5, "vector": 1.0}
#: Candidates each method contributes to a hybrid search: enough that an item ranked low by
#: one method but high by the other still meets it in the fusion.
HYBRID_MIN_DEPTH = 50


def hybrid_depth(k: int) -> int:
    """How many candidates each method contributes to a hybrid search for `k` hits."""
    return max(k * 4, HYBRID_MIN_DEPTH)


def fuse(keyword: Sequence[Sequence[Any]], vector: Sequence[Sequence[Any]], k: int) -> list[SearchHit]:
    """The `k` best hits of a hybrid search from the search rows of each method (best first)."""
    rows = {row[0]: row for row in (*keyword, *vector)}
    bm25_ranks = {row[0]: rank for rank, row in enumerate(keyword, 1)}
    vector_ranks = {row[0]: rank for rank, row in enumerate(vector, 1)}
    distances = {row[0]: row[10] for row in vector}
    fused = reciprocal_rank_fusion(
        [[r[0] for r in keyword], [r[0] for r in vector]],
        HYBRID_RRF_K,
        [HYBRID_WEIGHTS["bm25"], HYBRID_WEIGHTS["vector"]],
    )
    return [
        hit(
            rows[item_id],
            "hybrid",
            score,
            bm25_rank=bm25_ranks.get(item_id),
            vector_rank=vector_ranks.get(item_id),
            similarity=similarity(distances[item_id]) if item_id in distances else None,
        )
        for item_id, score in fused[:k]
    ]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k: int = DEFAULT_RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[int, float]]:
    """Fuse rankings (ids, best first) into one: `(id, score)` pairs, highest score first.

    Ranks are 1-based. An id repeated within one ranking counts at its first (best) place.
    Ties keep the order in which the ids were first seen (ranking by ranking), so the
    result is deterministic.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidInputError("k", f"must be a whole number ≥ 0, got {k!r}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise InvalidInputError("weights", f"needs one weight per ranking ({len(rankings)}), got {len(weights)}")
    if any(not math.isfinite(w) or w < 0 for w in weights):
        raise InvalidInputError("weights", "must be finite numbers ≥ 0")
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[int] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    # dicts keep insertion order, and sorted() is stable: equal scores stay in first-seen order.
    return sorted(scores.items(), key=lambda pair: -pair[1])

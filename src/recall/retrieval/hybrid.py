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

from recall.errors import InvalidInputError

#: The usual RRF constant; larger values flatten the difference between top and lower ranks.
DEFAULT_RRF_K = 60


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

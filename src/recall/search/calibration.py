"""The score a search reports for each hit, per kind, so one `min_score` means the same for
every kind (docs/long-term-memory.md, "Scores and min_score").

The hybrid ranking's relevance (`ranking.relevance`) is fitted on conversations: it weighs a
turn's words most, as chat answers share words with their questions. A long-term memory or a
fact is one short statement that a question often shares no word with ("what beverage do I
like?" for "I only drink green tea"): the ranking still puts it first (its meaning is the
closest), but scores it 0.03-0.07, so no threshold keeps it and leaves out the rest. Their
reported score is therefore the higher of that relevance and what their cosine similarity to
the query says: the probability that the hit is what the query asks about, from a logistic
fit on similarity (`bench/score_calibration.py`: 20 questions about statements sharing no
word with them among 30 statements, fitted on half, checked on the other half). Messages keep
the ranking's relevance, which was fitted on them.

Only what a search reports (and `min_score` keeps) changes: the ranking a context is built from
(`SearchIndex.ranked`, `SearchIndex.search`) keeps its own scores and order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from recall.search.base import MAX_K, SearchHit

#: Kinds whose score is calibrated on their similarity to the query.
SIMILARITY_KINDS = ("memory", "fact")
#: The logistic fit of "is the match" on cosine similarity (bench/score_calibration.py, FIT
#: pairs, 10 matches among 300 hits): the score is 1 / (1 + exp(-SLOPE × (similarity - CENTER))).
#: A similarity of 0.376 scores 0.5 and 0.343 scores 0.3; unrelated statements (median 0.05)
#: score nothing.
SIMILARITY_SLOPE = 25.19
SIMILARITY_CENTER = 0.3764
#: Hits a search asks the ranking for beyond its `k` when calibration may reorder them: a memory
#: just below the ranking's `k` best may score above one of them once calibrated.
REORDER_POOL = 20


def similarity_score(similarity: float) -> float:
    """The calibrated score of a memory's or fact's cosine similarity to the query, 0..1."""
    return 1.0 / (1.0 + math.exp(-SIMILARITY_SLOPE * (similarity - SIMILARITY_CENTER)))


def calibrated(kind: str, score: float, similarity: float | None, method: str = "hybrid") -> float:
    """The score to report for a hit of `kind` that the index scored `score` (its relevance,
    `SearchIndex.relevances`) at `similarity` to the query (None: not compared, as in a
    keyword search): for memories and facts, the higher of that score and `similarity_score`
    (for a vector search, `similarity_score` alone: its score is the similarity itself)."""
    if kind not in SIMILARITY_KINDS or similarity is None or method == "bm25":
        return score
    meaning = similarity_score(similarity)
    return meaning if method == "vector" else max(score, meaning)


def reorders(kinds: Sequence[str], method: str) -> bool:
    """Whether calibrating a search's hits may change their order."""
    return method != "bm25" and any(kind in SIMILARITY_KINDS for kind in kinds)


def pool(k: int, kinds: Sequence[str], method: str) -> int:
    """How many hits to ask the index for, to report the `k` best once calibrated."""
    return min(MAX_K, k + REORDER_POOL) if reorders(kinds, method) else k


def calibrate(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """The hits with their calibrated scores, best first (equal scores keep the index's order)."""
    scored = [replace(h, score=calibrated(h.kind, h.score, h.similarity, h.method)) for h in hits]
    return sorted(scored, key=lambda h: -h.score)

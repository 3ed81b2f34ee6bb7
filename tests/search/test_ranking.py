"""The hybrid ranking: each candidate's features from the two candidate lists and its
neighbours, and the order they give."""

from __future__ import annotations

import math
from typing import Any

import pytest

from recall.search.ranking import FEATURES, features, rank


def _row(item: int, text: str, score: float, sender: str | None = "maria", kind: str = "message") -> tuple[Any, ...]:
    """A search row: the ten item columns, then the score (lower is better)."""
    return (item, kind, item * 10, text, "w", "", None, sender, 1_700_000_000.0, None, score)


def test_features_of_candidates_found_by_one_method_or_both() -> None:
    keyword = [_row(1, "maria: my invoice is wrong", -8.0), _row(2, "bob: invoice paid", -2.0, sender="bob")]
    vector = [_row(3, "maria: I was charged twice", 0.2), _row(1, "maria: my invoice is wrong", 0.4)]
    found = features("Why was Maria's invoice wrong?", keyword, vector, {1: (None, 3), 3: (1, None)})
    named = {item: dict(zip(FEATURES, values, strict=True)) for item, values in found.items()}
    assert set(named) == {1, 2, 3}
    assert named[1]["keyword"] == 1.0 and named[2]["keyword"] == pytest.approx(0.25)
    assert named[3]["keyword"] == 0.0 and named[3]["keyword_rr"] == 0.0
    assert named[1]["keyword_rr"] == pytest.approx(1 / 11) and named[1]["vector_rr"] == pytest.approx(1 / 12)
    assert named[3]["similarity"] == pytest.approx(0.8) and named[1]["similarity"] == pytest.approx(0.6)
    assert named[2]["similarity"] == pytest.approx(0.6)  # not a vector hit: the lowest similarity found
    assert named[1]["speaker"] == 1.0 and named[2]["speaker"] == 0.0  # the query names maria, not bob
    assert named[1]["length"] == pytest.approx(math.log1p(len("maria: my invoice is wrong")))
    # Neighbours lend their scores: 3 follows 1 in its chat.
    assert named[3]["neighbour_keyword"] == 1.0 and named[1]["neighbour_similarity"] == pytest.approx(0.8)
    assert named[2]["neighbour_keyword"] == 0.0


def test_rank_orders_by_probability_and_explains_each_hit() -> None:
    keyword = [_row(1, "maria: the parcel to Lyon never arrived at the depot", -9.0), _row(2, "bob: ok", -1.0, "bob")]
    vector = [_row(1, "maria: the parcel to Lyon never arrived at the depot", 0.3), _row(4, "bob: fine", 0.7, "bob")]
    hits = rank("where is maria's parcel to Lyon?", keyword, vector, {}, k=3)
    # Found first by both methods, naming its sender: first; the two weak one-method hits follow.
    assert hits[0].source_id == 10 and {h.source_id for h in hits[1:]} == {20, 40}
    top = hits[0]
    assert (top.method, top.bm25_rank, top.vector_rank) == ("hybrid", 1, 1)
    assert top.similarity == pytest.approx(0.7) and 0 < top.score < 1
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(rank("x", keyword, vector, {}, k=1)) == 1
    assert rank("x", [], [], {}, k=5) == []

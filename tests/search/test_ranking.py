"""The hybrid ranking: each candidate's features from the two candidate lists and its
neighbours, and the order they give."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from recall.search.base import Candidate
from recall.search.ranking import (
    BASE_FEATURES,
    FEATURES,
    INTERCEPT,
    LENGTH_CAP_CHARS,
    LONG_CHARS,
    TIME_SCALE_DAYS,
    WEIGHTS,
    features,
    rank,
)
from recall.search.when import named_periods


def _row(
    item: int, text: str, score: float, sender: str | None = "maria", kind: str = "message", at: float = 1_700_000_000.0
) -> Candidate:
    """A search's candidate: item `item` of source `item` × 10, its score (lower is better)."""
    return Candidate(item, kind, item * 10, sender, None, at, len(text), score)


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
    # How far each is from the best match; short chat lines: nothing past the length cap.
    assert named[3]["similarity_gap"] == 0.0 and named[1]["similarity_gap"] == pytest.approx(-0.2)
    assert all(named[i]["over_length"] == 0.0 and named[i]["long_share"] == 0.0 for i in named)
    assert all(value == 0.0 for i in named for name, value in named[i].items() if name.endswith("*long_share"))


def test_long_replies_among_the_candidates_slide_the_weights() -> None:
    """Each feature is given again multiplied by the share of candidates longer than LONG_CHARS:
    among long model replies the model weighs the features as it learnt to there."""
    reply = "assistant: " + "Here is a detailed plan for your sprint. " * 40
    keyword = [_row(1, reply, -6.0, sender="assistant"), _row(2, "maria: the deadline is Friday", -3.0)]
    vector = [_row(2, "maria: the deadline is Friday", 0.5), _row(3, "maria: ok", 0.9)]
    found = features("When is the deadline?", keyword, vector, {})
    named = {item: dict(zip(FEATURES, values, strict=True)) for item, values in found.items()}
    assert len(reply) > LONG_CHARS and all(named[i]["long_share"] == pytest.approx(1 / 3) for i in named)
    assert named[1]["over_length"] == pytest.approx(math.log1p(len(reply) - LENGTH_CAP_CHARS))
    assert named[1]["length"] == pytest.approx(math.log1p(LENGTH_CAP_CHARS))
    for name in BASE_FEATURES:
        assert named[1][f"{name}*long_share"] == pytest.approx(named[1][name] / 3)


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


def test_a_named_time_favours_what_was_said_then() -> None:
    may_8 = datetime(2023, 5, 8, 19, tzinfo=UTC).timestamp()
    two_days_later = datetime(2023, 5, 10, 12, tzinfo=UTC).timestamp()
    june = datetime(2023, 6, 20, tzinfo=UTC).timestamp()
    # Three equally good matches for the words; only the time tells them apart.
    keyword = [
        _row(1, "maria: ordered sushi for dinner", -5.0, at=june),
        _row(2, "maria: ordered sushi for dinner", -5.0, at=may_8),
        _row(3, "maria: ordered sushi for dinner", -5.0, at=two_days_later),
    ]
    query = "What did Maria eat for dinner on May 8, 2023?"
    periods = named_periods(query)
    found = features(query, keyword, [], {}, None, periods)
    named = {item: dict(zip(FEATURES, values, strict=True)) for item, values in found.items()}
    assert (named[2]["time_inside"], named[2]["time_near"]) == (1.0, 1.0)
    assert named[3]["time_inside"] == 0.0
    assert named[3]["time_near"] == pytest.approx(math.exp(-(36 * 3600 + 1) / 86400 / TIME_SCALE_DAYS))
    assert named[1]["time_near"] < 1e-5
    assert [h.source_id for h in rank(query, keyword, [], {}, 3, None, periods)] == [20, 30, 10]
    # A query naming no time: the time features are 0 and the order is the lists' own.
    plain = features("What did Maria eat?", keyword, [], {})
    times = [FEATURES.index("time_inside"), FEATURES.index("time_near")]
    assert all([values[i] for i in times] == [0.0, 0.0] for values in plain.values())
    assert [h.source_id for h in rank("What did Maria eat?", keyword, [], {}, 3)] == [10, 20, 30]


def test_rank_scores_as_the_full_model_does() -> None:
    """`rank` folds `long_share` into the weights; its probabilities are those of the fitted
    model over every one of `FEATURES`, as `bench/locomo_fit.py` fits it."""
    reply = "assistant: " + "Here is a detailed plan for your sprint. " * 40
    keyword = [_row(1, reply, -6.0, sender="assistant"), _row(2, "maria: the deadline is Friday", -3.0)]
    vector = [_row(2, "maria: the deadline is Friday", 0.5), _row(3, "maria: ok", 0.9), _row(1, reply, 0.6)]
    query = "When is the deadline?"
    full = features(query, keyword, vector, {2: (1, 3)})
    expected = {
        item: 1 / (1 + math.exp(-(INTERCEPT + sum(v * w for v, w in zip(row, WEIGHTS, strict=True)))))
        for item, row in full.items()
    }
    hits = rank(query, keyword, vector, {2: (1, 3)}, k=3)
    assert {h.id: pytest.approx(expected[h.id], rel=1e-9) for h in hits} == {h.id: h.score for h in hits}

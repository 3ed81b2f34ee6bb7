"""Hybrid ranking: the keyword and vector candidates of a search, scored together by what each
says about a candidate and about its neighbours.

Reciprocal rank fusion of a strong signal (keywords, on chat turns) and a weak one (a small
sentence model) barely beats the strong one alone. This ranking instead scores each candidate
with a logistic model over features that every search has at hand:

- `keyword`: its BM25 score over the best keyword score of the query (0 when the keyword
  search did not find it), and `keyword_rr`, 1 / (10 + its keyword rank);
- `similarity`: its cosine similarity to the query (for a candidate the vector search did not
  return, the lowest similarity it did), and `vector_rr`, 1 / (10 + its vector rank);
- `neighbour_keyword` and `neighbour_similarity`: the same two scores of the message just
  before or after it in its chat, whichever is higher (an answer often spans two turns);
- `speaker`: 1 when the query names the message's sender (questions say whose life they ask
  about);
- `length`: log(1 + characters), up to LENGTH_CAP_CHARS: a turn that carries information is
  seldom a one-liner; and `over_length`, log(1 + the characters past that cap): a long model
  reply is not more likely to answer for being long (on BEAM less likely: its answers are
  mostly what the user said);
- `similarity_gap`: its similarity minus the best similarity among the candidates (how far it
  is from the best match of this query, whatever the query's own level of similarities);
- `time_inside` and `time_near`: when the query names a time ("on May 8, 2023", "last week":
  `when.named_periods`), 1 if the candidate was written in it, and exp(-days / 3) for how far
  outside it was written (both 0 when the query names no time).

Which features tell an answer differs with the shape of the conversation: among chat lines the
query's words point to it; among long model replies, which repeat the user's words back, the
meaning does. So each feature is given twice, once as it is and once multiplied by `long_share`,
the share of the candidates longer than LONG_CHARS (0 for chat lines, about one half where a
user and an assistant alternate): one model, whose weights slide with the conversation's shape,
not a rule per data set.

The weights were fitted by logistic regression (evidence turns against the other candidates)
across both shapes of conversation, each weighing the same: LoCoMo conversations 0-4 (short
chat lines) and BEAM conversations 1-10 (long model replies), with `bench/locomo_fit.py`, and
are checked on LoCoMo 5-9 and BEAM 11-20 (docs/benchmarks.md). The score is the model's
probability that the candidate answers the query (0..1).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np

from recall.search.base import Candidate, Ranked, similarity
from recall.search.when import Period, days_apart

#: Candidates each method contributes to a hybrid search for `k` hits: four times `k` (the
#: best few need the deep pool), at most `k` + HYBRID_MAX_EXTRA (a long list, such as the
#: recalled past's, gains little from a deeper one and costs in proportion), at least MIN.
HYBRID_MIN_DEPTH = 50
HYBRID_MAX_EXTRA = 200
#: The constant of the rank features (as in reciprocal rank fusion).
RANK_K = 10
#: Characters past which a message's length says no more (`length`).
LENGTH_CAP_CHARS = 400
#: A candidate longer than this (about 200 tokens: a model's reply, not a chat line) counts
#: towards `long_share`.
LONG_CHARS = 800
#: Days over which `time_near` falls by a factor of e: a message from three days outside the
#: period a question names may still tell of it ("last Friday ...").
TIME_SCALE_DAYS = 3.0

#: The logistic model's weights per feature, and its intercept (bench/locomo_fit.py).
BASE_FEATURES = (
    "keyword",
    "similarity",
    "keyword_rr",
    "vector_rr",
    "speaker",
    "length",
    "neighbour_keyword",
    "neighbour_similarity",
    "time_inside",
    "time_near",
    "over_length",
    "similarity_gap",
)
FEATURES = (*BASE_FEATURES, "long_share", *(f"{name}*long_share" for name in BASE_FEATURES))
# fmt: off
WEIGHTS = (
    2.828, 1.139, 1.977, 2.44, 0.88, 0.791, 2.551, 0.628, 0.826, 0.34, -0.311, 5.688,  # as they are
    1.017,  # long_share
    -3.319, 0.573, 0.313, 0.785, 0.0, 0.757, -2.529, 0.436, -0.157, -0.358, 0.105, -1.06,  # × long_share
)
# fmt: on
INTERCEPT = -11.19
#: ln(candidates that were not evidence / those that were) in that fit, each data set weighing
#: the same (bench/locomo_fit.py: 1,848 evidence turns among 328,230 candidates).
PRIOR_LOG_ODDS = 4.672
PRIOR_ODDS = math.exp(PRIOR_LOG_ODDS)


def relevance(probability: float) -> float:
    """A hybrid hit's relevance, 0..1: the model's probability as if answers were as common
    among the candidates as the rest. The model learnt from searches where under 1 % of the
    candidates answer, so its probabilities are small (a clear answer 0.05, most hits 0.001);
    adding back those odds (`PRIOR_LOG_ODDS`) spreads them over 0..1 and keeps their order."""
    if probability <= 0.0 or probability >= 1.0:
        return min(max(probability, 0.0), 1.0)
    odds = probability / (1.0 - probability) * PRIOR_ODDS
    return odds / (1.0 + odds)


def hybrid_depth(k: int) -> int:
    """How many candidates each method contributes to a hybrid search for `k` hits."""
    return max(min(k * 4, k + HYBRID_MAX_EXTRA), HYBRID_MIN_DEPTH)


def _base_features(
    query: str,
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    neighbours: Mapping[int, tuple[int | None, int | None]],
    unembedded: Mapping[int, float] | None = None,
    periods: Sequence[Period] = (),
) -> tuple[dict[int, list[float]], float]:
    """Each candidate's BASE_FEATURES, by item id, and the pool's `long_share` (`features` says
    what the arguments are)."""
    strength = {c.id: max(0.0, -float(c.score)) for c in keyword}
    best = max(strength.values(), default=0.0)
    keyword_score = {i: (s / best if best > 0 else 0.0) for i, s in strength.items()}
    keyword_rank, vector_rank = _places(keyword), _places(vector)
    embedded = {c.id: similarity(c.score) for c in vector}
    floor = min(embedded.values(), default=0.0)
    similarities = {**(unembedded or {}), **embedded}
    found = {c.id: c for c in (*keyword, *vector)}
    named = {m.group(0).lower() for m in _WORD.finditer(query)}
    # No item id is None: a missing neighbour (None) takes the default of a `get`.
    keyword_of = cast("dict[int | None, float]", keyword_score).get
    similarity_of = cast("dict[int | None, float]", similarities).get
    distances = days_apart([float(c.created_at) for c in found.values()], periods) if periods else None
    best_similarity = max(similarities.values(), default=0.0)
    long_share = sum(1 for c in found.values() if c.chars > LONG_CHARS) / len(found) if found else 0.0
    out: dict[int, list[float]] = {}
    for n, (item, c) in enumerate(found.items()):
        before, after = neighbours.get(item, (None, None))
        sender = (c.sender or "").lower()
        apart = None if distances is None else float(distances[n])
        similar = similarity_of(item, floor)
        row = [
            keyword_score.get(item, 0.0),
            similar,
            1.0 / (RANK_K + keyword_rank[item]) if item in keyword_rank else 0.0,
            1.0 / (RANK_K + vector_rank[item]) if item in vector_rank else 0.0,
            1.0 if sender and sender in named else 0.0,
            math.log1p(min(c.chars, LENGTH_CAP_CHARS)),
            max(keyword_of(before, 0.0), keyword_of(after, 0.0)),
            max(similarity_of(before, floor), similarity_of(after, floor)),
            1.0 if apart == 0.0 else 0.0,
            0.0 if apart is None else math.exp(-apart / TIME_SCALE_DAYS),
            math.log1p(max(0, c.chars - LENGTH_CAP_CHARS)),
            similar - best_similarity,
        ]
        out[item] = row
    return out, long_share


def features(
    query: str,
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    neighbours: Mapping[int, tuple[int | None, int | None]],
    unembedded: Mapping[int, float] | None = None,
    periods: Sequence[Period] = (),
) -> dict[int, list[float]]:
    """Each candidate's features (in `FEATURES` order), by item id. `keyword` and `vector` are
    each method's candidates, best first (score: lower is better); `neighbours` gives a
    message's item the ids of the items of the messages before and after it
    in its chat (None when they are not candidates); `unembedded` the similarity of keyword
    candidates not embedded yet, computed for this query (a recent post is not pushed down for
    lack of a stored vector); `periods` the times the query names (`when.named_periods`)."""
    rows, long_share = _base_features(query, keyword, vector, neighbours, unembedded, periods)
    return {item: [*row, long_share, *(value * long_share for value in row)] for item, row in rows.items()}


def rank(
    query: str,
    keyword: Sequence[Candidate],
    vector: Sequence[Candidate],
    neighbours: Mapping[int, tuple[int | None, int | None]],
    k: int,
    unembedded: Mapping[int, float] | None = None,
    periods: Sequence[Period] = (),
) -> list[Ranked]:
    """The `k` best of a hybrid search, best first (ties keep keyword, then vector order)."""
    found = {c.id: c for c in (*keyword, *vector)}
    keyword_rank, vector_rank = _places(keyword), _places(vector)
    distances = {c.id: c.score for c in vector}
    valued, long_share = _base_features(query, keyword, vector, neighbours, unembedded, periods)
    scored = list(zip(valued, _probabilities(list(valued.values()), long_share), strict=True))
    scored.sort(key=lambda pair: -pair[1])  # stable: equal scores stay in first-seen order
    return [
        Ranked(
            item,
            found[item].kind,
            found[item].source_id,
            score,
            "hybrid",
            bm25_rank=keyword_rank.get(item),
            vector_rank=vector_rank.get(item),
            similarity=similarity(distances[item]) if item in distances else None,
            keyword_score=valued[item][0] if item in keyword_rank else None,
            time_score=valued[item][FEATURES.index("time_near")] if periods else None,
            sender=found[item].sender,
            chat_id=found[item].chat_id,
            part=found[item].part,
        )
        for item, score in scored[:k]
    ]


def _probabilities(values: Sequence[Sequence[float]], long_share: float) -> list[float]:
    """The logistic model's probability for each candidate's BASE_FEATURES. `long_share` is one
    number per search, so the model's features times it fold into the weights: each feature
    weighs its own weight plus `long_share` times its interaction's (the `FEATURES` rows of
    `features` are never built on this path)."""
    if not values:
        return []
    base = len(BASE_FEATURES)
    weights = np.asarray(WEIGHTS[:base], dtype=np.float64) + long_share * np.asarray(WEIGHTS[base + 1 :])
    intercept = INTERCEPT + long_share * WEIGHTS[base]
    # Each row summed on its own (not a matrix product, whose kernel and order of summation
    # vary with the number of rows): a candidate scores the same in any search that finds it.
    logits = intercept + (np.asarray(values, dtype=np.float64) * weights).sum(axis=1)
    return [float(p) for p in 1.0 / (1.0 + np.exp(-logits))]


def _places(candidates: Sequence[Candidate]) -> dict[int, int]:
    """Each candidate's 1-based place in its method's list, by item id."""
    return {c.id: place for place, c in enumerate(candidates, 1)}


#: A query's words as sender ids are spelt ("agent-b" is one), matched against each hit's sender.
_WORD = re.compile(r"[\w-]+", re.UNICODE)

"""Reciprocal rank fusion: the pure ranking arithmetic behind hybrid search."""

from __future__ import annotations

import pytest

from recall.errors import InvalidInputError
from recall.search.fusion import reciprocal_rank_fusion


def test_scores_are_sums_of_reciprocal_ranks() -> None:
    fused = dict(reciprocal_rank_fusion([[1, 2, 3], [3, 1]], k=60))
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)


def test_items_found_by_both_rankings_rise() -> None:
    # 7 is second in both lists; each list's winner appears in one list only.
    fused = [item for item, _ in reciprocal_rank_fusion([[1, 7, 2], [3, 7, 4]])]
    assert fused[0] == 7
    assert set(fused) == {1, 2, 3, 4, 7}


def test_order_is_by_score_then_first_seen() -> None:
    assert reciprocal_rank_fusion([[5, 6], [6, 5]]) == [
        (5, pytest.approx(1 / 61 + 1 / 62)),
        (6, pytest.approx(1 / 61 + 1 / 62)),
    ]
    assert [i for i, _ in reciprocal_rank_fusion([[9], [8]])] == [9, 8]


def test_weights_scale_each_ranking() -> None:
    fused = reciprocal_rank_fusion([[1], [2]], weights=[1.0, 3.0])
    assert [i for i, _ in fused] == [2, 1]
    assert fused[0][1] == pytest.approx(3 / 61)
    assert reciprocal_rank_fusion([[1], [2]], weights=[0.0, 1.0])[-1] == (1, 0.0)


def test_a_duplicate_within_one_ranking_counts_once_at_its_best_place() -> None:
    assert reciprocal_rank_fusion([[4, 4, 5]], k=0) == [(4, 1.0), (5, pytest.approx(1 / 3))]


def test_empty_input() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []


@pytest.mark.parametrize(
    ("rankings", "kwargs", "field"),
    [
        ([[1]], {"k": -1}, "k"),
        ([[1]], {"k": 1.5}, "k"),
        ([[1]], {"k": True}, "k"),
        ([[1], [2]], {"weights": [1.0]}, "weights"),
        ([[1]], {"weights": [-1.0]}, "weights"),
        ([[1]], {"weights": [float("nan")]}, "weights"),
    ],
)
def test_invalid_arguments_are_refused(rankings: list[list[int]], kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        reciprocal_rank_fusion(rankings, **kwargs)  # type: ignore[arg-type]
    assert caught.value.field == field

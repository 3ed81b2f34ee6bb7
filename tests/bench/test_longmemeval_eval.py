"""bench/longmemeval_eval.py on a tiny LongMemEval-format file: metrics, dates, skipping, the report."""

from __future__ import annotations

import json
import lzma
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from recall import Settings
from tests.bench.scripts import load_bench_script

#: Four questions, each with its own haystack of three or four two-turn sessions (the pasta
#: session is in two haystacks, as sessions of the real files are). Hand-checked for BM25,
#: whose query is an OR of the question's words (no stemming):
#: - q1_puppy (single-session-user): only the answer turn has "puppy" and "adopted" → rank 1.
#: - q2_trips (multi-session, two answer sessions): only the answer turns have "japan" and
#:   "italy", and no other turn has any word of the question → the ranking is those two sessions.
#: - q3_abs: an abstention question, skipped (its type occurs nowhere else).
#: - q4_move (knowledge-update): the answer ("Relocated to Denver…") shares no word with
#:   "Where do I live now?", only the stale Boston session does → the answer is never ranked.
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "longmemeval_tiny.json"
ALL_KEYS = [f"{name}@{k}" for name in ("recall_any", "recall_all", "ndcg_any") for k in (1, 3, 5, 10)]


lme = load_bench_script("longmemeval_eval")


def _metrics(recall_any: float, recall_all: Sequence[float], ndcg: float) -> dict[str, float]:
    """A per-type or overall row: recall_any and ndcg the same at every k, recall_all per k."""
    row = {f"recall_any@{k}": recall_any for k in (1, 3, 5, 10)}
    row |= {f"recall_all@{k}": value for k, value in zip((1, 3, 5, 10), recall_all, strict=True)}
    row |= {f"ndcg_any@{k}": ndcg for k in (1, 3, 5, 10)}
    return row


def test_metrics_on_a_given_ranking() -> None:
    ranking = ["s3", "s1", "s7", "s2", "s5"]
    answers = ["s1", "s2"]
    assert [lme.recall_any(ranking, answers, k) for k in (1, 2, 3, 5)] == [0.0, 1.0, 1.0, 1.0]
    assert [lme.recall_all(ranking, answers, k) for k in (1, 3, 4, 10)] == [0.0, 0.0, 1.0, 1.0]
    inv = [1 / math.log2(r + 1) for r in range(1, 6)]  # the discount of ranks 1..5
    assert lme.ndcg_any(ranking, answers, 1) == 0.0
    # s1 at rank 2 of 3; a perfect top 3 holds both answers at ranks 1 and 2.
    assert lme.ndcg_any(ranking, answers, 3) == pytest.approx(inv[1] / (inv[0] + inv[1]))
    assert lme.ndcg_any(ranking, answers, 5) == pytest.approx((inv[1] + inv[3]) / (inv[0] + inv[1]))
    assert lme.ndcg_any(["s1", "s2", "s9"], answers, 10) == pytest.approx(1.0)
    # The ideal of one answer at k=1 is one relevant session at rank 1.
    assert lme.ndcg_any(["s2", "s1"], answers, 1) == 1.0
    # Nothing found, nothing ranked, nothing to find.
    assert lme.score(["s9"], answers) == dict.fromkeys(ALL_KEYS, 0.0)
    assert lme.score([], answers) == dict.fromkeys(ALL_KEYS, 0.0)
    assert lme.score(ranking, []) == dict.fromkeys(ALL_KEYS, 0.0)


def test_sessions_are_ranked_by_their_best_turn() -> None:
    assert lme.rank_sessions(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert lme.rank_sessions([]) == []


def test_dates_are_parsed_and_unreadable_ones_fall_back_in_order() -> None:
    assert lme.parse_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    assert lme.parse_date(" 2023/5/2 ") == datetime(2023, 5, 2, tzinfo=UTC)
    assert lme.parse_date("2023-05-20T02:21:00Z") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    assert lme.parse_date("2023/02/30 (Thu) 10:00") is None  # no such day
    assert lme.parse_date("yesterday") is None
    assert lme.parse_date(None) is None

    may = datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    times, unreadable = lme.session_times(["??", "2023/05/20 (Sat) 02:21", "", None], 5)
    gap = lme.FALLBACK_GAP
    # The first falls back to the earliest readable date; later ones follow their predecessor;
    # the fifth session has no date at all.
    assert times == [may, may, may + gap, may + 2 * gap, may + 3 * gap]
    assert unreadable == 4
    assert lme.session_times([], 2) == ([lme.FALLBACK_START, lme.FALLBACK_START + gap], 2)


def test_haystack_turns_keep_their_session_and_time() -> None:
    item = json.loads(FIXTURE.read_text(encoding="utf-8"))[0]
    requests, sessions, unreadable = lme.haystack_requests(item, "all", 100_000)
    assert unreadable == 0
    assert sessions == ["noise_pasta"] * 2 + ["answer_puppy"] * 2 + ["noise_bike"] * 2
    assert [r.sender for r in requests] == ["user", "assistant"] * 3
    puppy = requests[2]
    assert puppy.metadata == {"session_id": "answer_puppy", "turn": 0, "has_answer": True}
    assert puppy.created_at == datetime(2023, 5, 22, 14, 5, tzinfo=UTC)
    assert requests[3].created_at == datetime(2023, 5, 22, 14, 5, 1, tzinfo=UTC)

    user_only, user_sessions, _ = lme.haystack_requests(item, "user", 100_000)
    assert [r.sender for r in user_only] == ["user"] * 3
    assert user_sessions == ["noise_pasta", "answer_puppy", "noise_bike"]


class _CountingEmbedder:
    name = "fake"
    dim = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_the_embedding_cache_embeds_each_text_once() -> None:
    inner = _CountingEmbedder()
    cache = lme.CachingEmbedder(inner)
    assert (cache.name, cache.dim) == ("fake", 2)
    first = cache.embed(["aa", "b", "aa"])
    second = cache.embed(["b", "cccc"])
    assert inner.calls == [["aa", "b"], ["cccc"]]
    np.testing.assert_array_equal(first, [[2, 1], [1, 1], [2, 1]])
    np.testing.assert_array_equal(second, [[1, 1], [4, 1]])
    assert (cache.hits, cache.misses) == (2, 3)
    assert cache.embed([]).shape == (0, 2)


def test_bm25_report_on_the_tiny_file() -> None:
    report = lme.evaluate(FIXTURE, method="bm25", settings=Settings(index_interval=0, embeddings="none"))
    assert report["method"] == "bm25"
    assert report["questions"] == 3
    assert report["skipped"] == {"abstention": 1, "no_answer_session": 0}
    assert report["per_type"] == {
        "knowledge-update": {"questions": 1, **_metrics(0.0, [0.0] * 4, 0.0)},
        # Both answer sessions are the top two: all of them in the top 3, not in the top 1.
        "multi-session": {"questions": 1, **_metrics(1.0, [0.0, 1.0, 1.0, 1.0], 1.0)},
        "single-session-user": {"questions": 1, **_metrics(1.0, [1.0] * 4, 1.0)},
    }
    assert report["overall"] == _metrics(0.6667, [0.3333, 0.6667, 0.6667, 0.6667], 0.6667)


def test_limit_counts_answerable_questions() -> None:
    report = lme.evaluate(FIXTURE, limit=2, method="bm25", settings=Settings(index_interval=0, embeddings="none"))
    assert report["questions"] == 2
    assert set(report["per_type"]) == {"single-session-user", "multi-session"}


def test_vector_search_ranks_the_obvious_answers_first() -> None:
    # The bundled MiniLM model: a puppy adoption and trips to Japan and Italy are the closest
    # sessions to questions about them. The search returns every turn of these small
    # haystacks, so every session is ranked and each answer is within the top 10.
    report = lme.evaluate(FIXTURE, method="vector")
    assert report["per_type"]["single-session-user"]["recall_any@1"] == 1.0
    assert report["per_type"]["multi-session"]["recall_any@1"] == 1.0
    assert report["per_type"]["multi-session"]["recall_all@3"] == 1.0
    assert report["overall"]["recall_any@10"] == 1.0
    assert report["overall"]["recall_all@10"] == 1.0


def test_main_reads_xz_and_writes_the_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packed = tmp_path / "longmemeval_tiny.json.xz"
    packed.write_bytes(lzma.compress(FIXTURE.read_bytes()))
    out = tmp_path / "report" / "lme.json"
    assert lme.main([str(packed), "--method", "bm25", "--json", str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    assert set(written) == {
        "method",
        "turns",
        "questions",
        "overall",
        "per_type",
        "skipped",
        "unreadable_dates",
        "seconds",
    }
    assert (written["method"], written["turns"], written["questions"]) == ("bm25", "all", 3)
    assert list(written["overall"]) == ALL_KEYS
    assert written["overall"]["recall_any@1"] == 0.6667
    assert all(set(row) == {"questions", *ALL_KEYS} for row in written["per_type"].values())
    assert isinstance(written["seconds"], float)
    assert "recall_any@k" in capsys.readouterr().out


def test_bad_files_are_reported(tmp_path: Path) -> None:
    not_a_list = tmp_path / "object.json"
    not_a_list.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="JSON list"):
        lme.load_items(not_a_list)
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps([{"question_id": "x"}]), encoding="utf-8")
    with pytest.raises(ValueError, match="question 0 has no question_type"):
        lme.load_items(missing)
    with pytest.raises(ValueError, match="cannot read"):
        lme.load_items(tmp_path / "nowhere.json.xz")


def test_an_answer_session_outside_the_haystack_is_not_counted(tmp_path: Path) -> None:
    items = json.loads(FIXTURE.read_text(encoding="utf-8"))[:1]
    items[0]["answer_session_ids"] = ["answer_puppy", "answer_elsewhere"]
    second = dict(items[0], question_id="q_none", answer_session_ids=["answer_elsewhere"])
    path = tmp_path / "data.json"
    path.write_text(json.dumps([*items, second]), encoding="utf-8")
    report = lme.evaluate(path, method="bm25", settings=Settings(index_interval=0, embeddings="none"))
    assert report["questions"] == 1
    assert report["skipped"] == {"abstention": 0, "no_answer_session": 1}
    assert report["overall"]["recall_all@1"] == 1.0

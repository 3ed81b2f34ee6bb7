"""bench/locomo_eval.py on a tiny LoCoMo-format file: evidence parsing, the recall metric, the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recall import Settings
from tests.bench.scripts import alice_and_bob, load_bench_script

locomo_eval = load_bench_script("locomo_eval")


#: Two speakers, two sessions of four turns. The texts are chosen so that a keyword (BM25)
#: search for each question matches at most four turns (named in its comment): fewer than the
#: smallest cutoff, so the recall does not depend on how BM25 orders them.
TINY_SAMPLE: dict[str, Any] = {
    "sample_id": "conv-tiny",
    "conversation": alice_and_bob(),
    "qa": [
        # Matches only D1:1 ("bought"): its one evidence turn is found → 1.0 at every k.
        {"question": "Which instrument was bought?", "answer": "saxophone", "evidence": ["D1:1"], "category": 4},
        # Matches only D1:3 (sister, visiting, from, Lisbon). Evidence in LoCoMo's messy shape:
        # two ids in one string, plus an id naming no turn (dropped) → {D1:3, D2:1}, half found → 0.5.
        {
            "question": "Which sister is visiting from Lisbon?",
            "answer": "Clara",
            "evidence": ["D1:3; D2:1", "D9:9"],
            "category": 1,
        },
        # No evidence: counts as fully recalled → 1.0 (matches D1:3 "is", D1:2, D2:1, D2:4 "the").
        {"question": "What colour is the car?", "adversarial_answer": "red", "evidence": [], "category": 5},
        # Matches D1:2 and D2:2 ("painting"), D1:1 and D1:4 ("a"); the evidence D2:2 is among them → 1.0.
        {"question": "When was a painting sold?", "answer": "27 June 2023", "evidence": ["D2:2"], "category": 2},
    ],
}


@pytest.fixture
def tiny_locomo(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps([TINY_SAMPLE]), encoding="utf-8")
    return path


def test_evidence_is_split_normalised_and_checked_against_thelocomo_turns() -> None:
    known = {"D1:1", "D1:2", "D8:6", "D9:17", "D11:26", "D30:5"}
    assert locomo_eval.normalise_evidence(["D8:6; D9:17"], known) == ["D8:6", "D9:17"]
    assert locomo_eval.normalise_evidence(["D1:1 D1:2", "D1:1"], known) == ["D1:1", "D1:2"]
    assert locomo_eval.normalise_evidence(["D:11:26", "D30:05", "D", "D10:19"], known) == ["D11:26", "D30:5"]
    assert locomo_eval.normalise_evidence([], known) == []


def test_recall_at_k_gives_partial_credit_within_the_cutoff() -> None:
    retrieved = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D2:1", "D2:2"]
    assert locomo_eval.recall_at(retrieved, ["D1:2"], 5) == 1.0
    assert locomo_eval.recall_at(retrieved, ["D1:2", "D2:1"], 5) == 0.5  # D2:1 is sixth
    assert locomo_eval.recall_at(retrieved, ["D1:2", "D2:1"], 10) == 1.0
    assert locomo_eval.recall_at(retrieved, ["D1:2", "D2:1", "D9:9", "D9:8"], 10) == 0.5
    assert locomo_eval.recall_at(retrieved, ["D9:9"], 50) == 0.0
    assert locomo_eval.recall_at(retrieved, [], 5) == 1.0
    assert locomo_eval.recall_at([], [], 5) == 1.0


def test_bm25_report_on_a_tiny_conversation(tiny_locomo: Path, tmp_path: Path) -> None:
    # Keyword-only settings: no embedding model to load, and a ranking checkable by hand.
    settings = Settings(index_interval=0, embeddings="none")
    report = locomo_eval.evaluate(tiny_locomo, method="bm25", settings=settings)

    every_k = ("5", "10", "25", "50")
    assert report["method"] == "bm25"
    assert report["questions"] == 4
    assert report["conversations"] == 1
    # (1.0 + 0.5 + 1.0 + 1.0) / 4 at every cutoff.
    assert report["overall"] == dict.fromkeys(every_k, 0.875)
    assert report["per_category"] == {
        "1": {"name": "multi-hop", "questions": 1, **dict.fromkeys(every_k, 0.5)},
        "2": {"name": "temporal", "questions": 1, **dict.fromkeys(every_k, 1.0)},
        "4": {"name": "single-hop", "questions": 1, **dict.fromkeys(every_k, 1.0)},
        "5": {"name": "adversarial", "questions": 1, **dict.fromkeys(every_k, 1.0)},
    }
    assert set(report["context_tokens"]) == set(every_k)
    # At most four turns match any question, so every cutoff gives the same context, and it is
    # a part of the conversation.
    assert len(set(report["context_tokens"].values())) == 1
    assert 0 < report["context_tokens"]["5"] < report["conversation_tokens"]
    assert isinstance(report["seconds"], float)

    out = tmp_path / "report.json"
    assert locomo_eval.main([str(tiny_locomo), "--method", "bm25", "--conversations", "1", "--json", str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    assert set(written) == {
        "method",
        "overall",
        "per_category",
        "questions",
        "conversations",
        "context_tokens",
        "conversation_tokens",
        "seconds",
        "index_seconds",
        "search_seconds",
    }
    assert written["overall"] == report["overall"]

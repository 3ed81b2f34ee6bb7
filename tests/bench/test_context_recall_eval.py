"""bench/context_recall_eval.py on a tiny LoCoMo-format file: the peers' packing scored by hand,
questions deleted after their contexts, agent settings applied, the JSON report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recall import Recall, Settings
from recall.core.tokens import TokenCounter
from recall.importers import read_locomo
from tests.bench.scripts import alice_and_bob, load_bench_script

context_recall_eval = load_bench_script("context_recall_eval")
locomo_eval = load_bench_script("locomo_eval")

RECALL = "recall"
NEWEST = "newest turns that fit"
COSINE = "MiniLM int8 cosine"
BM25 = "bm25s"
RRF = "MiniLM + stemmed bm25s, RRF"


#: Two speakers, two sessions of four turns; Alice (speaker_a) is the agent asked.
TINY_SAMPLE: dict[str, Any] = {
    "sample_id": "conv-tiny",
    "conversation": alice_and_bob("Good to hear.  My dog Rex\nlearned a new trick."),  # whitespace collapsed
    # Each question shares its rare words with its evidence turns only (Lisbon, visiting; trick,
    # hiking; evening), so BM25 and the embedding model rank the evidence first.
    "qa": [
        # Evidence in session 1: older than the newest turns that fit.
        {"question": "Who is visiting Alice from Lisbon?", "answer": "Clara", "evidence": ["D1:3"], "category": 4},
        # One turn in each session: the newest turns hold only D2:4.
        {
            "question": "What trick did Rex learn, and where did he go hiking?",
            "answer": "a new trick; by the lake",
            "evidence": ["D1:4; D2:4"],
            "category": 1,
        },
        # Among the newest turns.
        {
            "question": "When did Alice practice saxophone every evening?",
            "answer": "the week of 27 June 2023",
            "evidence": ["D2:3"],
            "category": 2,
        },
        # No evidence: left out.
        {"question": "What colour is the car?", "adversarial_answer": "red", "evidence": [], "category": 5},
    ],
}

#: The turns as the peers render them, oldest first.
LINES = [
    "[2023-05-08] Alice: Hi Bob, I finally bought a saxophone last weekend.",
    "[2023-05-08] Bob: Nice! I have been painting landscapes in the mountains.",
    "[2023-05-08] Alice: My sister Clara is visiting from Lisbon next month.",
    "[2023-05-08] Bob: Good to hear. My dog Rex learned a new trick.",
    "[2023-06-27] Alice: Clara arrived and we toured the old harbour together.",
    "[2023-06-27] Bob: I sold my first painting at a gallery downtown.",
    "[2023-06-27] Alice: I practiced saxophone every evening this week.",
    "[2023-06-27] Bob: Rex and I went hiking by the lake.",
]


def _cost(line: str) -> int:
    return TokenCounter("o200k_base").count(line) + 1


#: Exactly the three newest turns (D2:2, D2:3, D2:4).
BUDGET = sum(_cost(line) for line in LINES[-3:])


@pytest.fixture
def tiny_locomo(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps([TINY_SAMPLE]), encoding="utf-8")
    return path


def test_settings_and_budgets_are_parsed() -> None:
    assert context_recall_eval.parse_setting("recalled_max_tokens=0") == ("recalled_max_tokens", 0)
    assert context_recall_eval.parse_setting("recalled_cutoff=0.01") == ("recalled_cutoff", 0.01)
    assert context_recall_eval.parse_setting("recalled_scope=chat") == ("recalled_scope", "chat")
    with pytest.raises(ValueError):
        context_recall_eval.parse_setting("recalled_scope")
    assert context_recall_eval.parse_budgets("2000,4000") == (2000, 4000)
    with pytest.raises(ValueError):
        context_recall_eval.parse_budgets("0")


def test_packing_skips_a_turn_that_does_not_fit_and_goes_on() -> None:
    turns = [context_recall_eval.Turn(i, f"D1:{i}", "", "", tokens) for i, tokens in enumerate([5, 10, 3], 1)]
    assert context_recall_eval.pack([1, 0, 2], turns, 9) == ({"D1:1", "D1:3"}, 8)
    assert context_recall_eval.pack([1, 0, 2], turns, 18) == ({"D1:1", "D1:2", "D1:3"}, 18)
    assert context_recall_eval.ranked([0.5, 0.0, 0.5, 0.9, 0.0]) == [3, 2, 0, 4, 1]  # ties newest first


def test_scores_on_a_tiny_conversation(tiny_locomo: Path) -> None:
    report = context_recall_eval.evaluate(tiny_locomo, budgets=(BUDGET,), peers=True, per_question=True)

    assert report["questions"] == 3
    assert report["skipped_without_evidence"] == 1
    assert report["methods"] == [RECALL, NEWEST, COSINE, BM25, RRF]
    results = report["results"][str(BUDGET)]

    # The newest turns fill the budget exactly: D2:2-D2:4. Lisbon (D1:3) is not among them, half
    # of the multi-hop evidence is (D2:4), the saxophone practice (D2:3) is.
    newest = results[NEWEST]
    assert newest["tokens"] == BUDGET
    assert {c: row["score"] for c, row in newest["per_category"].items()} == {"4": 0.0, "1": 0.5, "2": 1.0}
    assert newest["overall"] == 0.5
    # The ranked peers put the evidence first; each evidence set fits (the two multi-hop turns too).
    assert _cost(LINES[3]) + _cost(LINES[7]) <= BUDGET
    for peer in (BM25, COSINE):
        assert results[peer]["overall"] == 1.0, peer
        assert 0 < results[peer]["tokens"] <= BUDGET
    for question in report["per_question"]:
        for method in (NEWEST, COSINE, BM25):
            assert question["tokens"][method][str(BUDGET)] <= BUDGET

    # recall: a share, and a context within the budget (how much it finds is not asserted here).
    assert 0.0 <= results[RECALL]["overall"] <= 1.0
    assert 0 < results[RECALL]["tokens"] <= BUDGET
    assert set(results[RECALL]["per_category"]) == {"4", "1", "2"}
    sections = report["recall_sections"][str(BUDGET)]
    assert sections["incoming"] > 0  # the question itself
    assert sum(sections.values()) <= BUDGET


def test_questions_are_deleted_after_their_contexts(tiny_locomo: Path, tmp_path: Path) -> None:
    conversation = read_locomo(tiny_locomo)[0]
    store = tmp_path / "store"
    store.mkdir()
    result = context_recall_eval.evaluate_conversation(0, TINY_SAMPLE, conversation, store, budgets=(BUDGET,))
    assert result.agent == "Alice"
    assert [q.evidence for q in result.questions] == [["D1:3"], ["D1:4", "D2:4"], ["D2:3"]]

    with Recall(store / "x.db", Settings(index_interval=0)) as mem:
        messages = locomo_eval._all_messages(mem.world(conversation.world_id))
    assert [(m.sender, m.content) for m in messages] == [(p.sender, p.content) for p in conversation.messages]


def test_agent_settings_apply_and_the_json_is_written(tiny_locomo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "report.json"
    argv = [str(tiny_locomo), "--conversations", "1", "--budgets", "400", "--no-peers"]
    argv += ["--agent-setting", "recalled_max_tokens=0", "--json", str(out), "--json-questions"]
    assert context_recall_eval.main(argv) == 0

    written = json.loads(out.read_text(encoding="utf-8"))
    assert set(written) == {
        "budgets",
        "methods",
        "agent_settings",
        "conversations",
        "sample_ids",
        "questions",
        "skipped_without_evidence",
        "results",
        "recall_sections",
        "seconds",
        "index_seconds",
        "question_seconds",
        "git_revision",
        "per_question",
        "dataset",
        "recall_whole_messages_only",
        "recall_build_ms",
    }
    assert written["budgets"] == [400]
    assert written["methods"] == [RECALL]
    assert written["agent_settings"] == {"recalled_max_tokens": 0}
    assert written["conversations"] == [0]
    assert written["sample_ids"] == ["conv-tiny"]
    assert written["questions"] == 3
    assert set(written["results"]["400"]) == {RECALL}
    assert set(written["results"]["400"][RECALL]) == {"overall", "per_category", "tokens"}
    # No recalled past: what the agent is given is the conversation's recent history.
    assert written["recall_sections"]["400"].get("recalled", 0) == 0
    assert written["recall_sections"]["400"]["history"] > 0
    assert [q["evidence"] for q in written["per_question"]] == [["D1:3"], ["D1:4", "D2:4"], ["D2:3"]]
    assert set(written["per_question"][0]["scores"]) == {RECALL}
    assert isinstance(written["seconds"], float)


def test_a_run_over_both_halves_summarises_each(tmp_path: Path) -> None:
    samples = [{**TINY_SAMPLE, "sample_id": f"conv-{i}"} for i in range(6)]
    path = tmp_path / "six.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    report = context_recall_eval.evaluate(path, range(4, 6), budgets=(BUDGET,), peers=False)

    assert report["conversations"] == [4, 5]
    assert report["sample_ids"] == ["conv-4", "conv-5"]
    assert report["questions"] == 6
    assert set(report["halves"]) == {"0-4", "5-9"}
    # The same conversation twice: each half scores as the whole run does.
    whole = report["results"][str(BUDGET)][RECALL]["overall"]
    assert [half[str(BUDGET)][RECALL]["overall"] for half in report["halves"].values()] == [whole, whole]


#: A tiny BEAM-format conversation: a user and an assistant whose replies are long, the answer
#: to the first question in an early user turn, to the second deep inside a long reply.
FILLER = "We walked through the options one by one and weighed each of them carefully. "
TINY_BEAM: dict[str, Any] = {
    "scale": "100K",
    "conversation": "1",
    "turns": [
        {"id": 0, "role": "user", "at": "2024-03-15T09:00:00Z", "content": "My project database is called heron."},
        {"id": 1, "role": "assistant", "at": "2024-03-15T09:01:00Z", "content": FILLER * 30},
        {"id": 2, "role": "user", "at": "2024-03-15T09:02:00Z", "content": "How should I deploy it?"},
        {
            "id": 3,
            "role": "assistant",
            "at": "2024-03-15T09:03:00Z",
            "content": FILLER * 20 + "Use blue-green deployments behind the load balancer. " + FILLER * 20,
        },
        {"id": 4, "role": "user", "at": "2024-03-15T09:04:00Z", "content": "Thanks, next the frontend."},
        {"id": 5, "role": "assistant", "at": "2024-03-15T09:05:00Z", "content": FILLER * 30},
    ],
    "questions": [
        {"ability": "information_extraction", "n": 0, "question": "What is my database called?", "evidence": [0]},
        {"ability": "knowledge_update", "n": 1, "question": "Which deployments did you suggest?", "evidence": [3]},
        {"ability": "abstention", "n": 2, "question": "What colour is the car?", "evidence": []},
    ],
}


def test_beam_runs_with_its_peers_and_scores_excerpts_by_their_key_sentence(tmp_path: Path) -> None:
    path = tmp_path / "tiny_beam.json"
    path.write_text(json.dumps([TINY_BEAM]), encoding="utf-8")
    report = context_recall_eval.evaluate(path, budgets=(300, 2000), peers=True, per_question=True)
    assert report["dataset"] == "beam"
    assert report["questions"] == 2 and report["skipped_without_evidence"] == 1
    assert report["methods"] == [RECALL, NEWEST, COSINE, BM25, RRF]
    by_question = {q["question"]: q for q in report["per_question"]}
    # At 300 tokens the long reply can only be there as an excerpt: it counts, since the excerpt
    # holds the sentence the question rests on; counting whole messages only, it does not.
    deploy = by_question["Which deployments did you suggest?"]
    assert deploy["scores"][RECALL]["300"] == 1.0
    assert deploy["recall_whole_messages_only"]["300"] == 0.0
    assert by_question["What is my database called?"]["scores"][RECALL]["300"] == 1.0
    assert set(report["recall_build_ms"]) == {"300", "2000"}


def test_the_long_context_bench_times_every_build_and_leaves_its_store(tmp_path: Path) -> None:
    long_bench = load_bench_script("long_context_bench")
    path = tmp_path / "tiny_beam.json"
    path.write_text(json.dumps([TINY_BEAM, TINY_BEAM]), encoding="utf-8")
    turns, questions = long_bench.turns_and_questions([TINY_BEAM, TINY_BEAM], len(TINY_BEAM["turns"]) + 1)
    assert len(turns) == len(TINY_BEAM["turns"]) + 1 and len(questions) == 4  # both touched
    out, store = tmp_path / "long.json", tmp_path / "kept.db"
    args = [str(path), "--messages", "3", "--budgets", "300,2000", "--reuse", str(store), "--json", str(out)]
    assert long_bench.main(args) == 0
    report = json.loads(out.read_text())
    assert report["messages"] == 3 and report["questions"] == 2 and report["build_ms"]["n"] == 4
    assert set(report["by_budget"]) == {"300", "2000"} and report["build_ms"]["p95"] > 0
    # Reused: the world is kept, and no question (nor the warm-up) is left in it.
    with Recall(store, Settings(index_interval=0)) as mem:
        assert len(mem.world("long").messages(limit=100)) == 3
    assert long_bench.main(args) == 0 and json.loads(out.read_text())["built_s"] == 0.0

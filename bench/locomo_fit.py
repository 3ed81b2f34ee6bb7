"""Fit the hybrid ranking's weights (recall.search.ranking) across both shapes of
conversation: LoCoMo conversations 0-4 (short chat lines) and BEAM conversations 1-10 (a user
and an assistant whose replies are model output).

Usage:
    .venv/bin/python bench/locomo_fit.py LOCOMO_JSON [--conversations 0-4]
        [--beam BEAM_JSON [--beam-conversations 0-9]] [--json OUT]

For each question of the chosen conversations, the search index's own hybrid candidates
(`SearchIndex.candidates`, as a search for 50 hits gathers them) are turned into features by
`ranking.features`, labelled 1 for the question's evidence turns and 0 for the rest, and a
logistic regression is fitted on them all, each data set weighing as much as the other
(whatever its number of candidates). It prints the weights and intercept in the form
`ranking.py` holds them. The other halves are held out: `bench/context_recall_eval.py --range
5-9` (LoCoMo) and `--range 10-19` (BEAM) report them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_report import write_json
from context_datasets import BEAM, LOCOMO, Dataset
from locomo_eval import _all_messages, asked_at
from sklearn.linear_model import LogisticRegression

from recall import Recall
from recall.importers import store_conversation
from recall.search.ranking import FEATURES, features
from recall.search.when import named_periods

#: Hits the eval asks for (its deepest cutoff): the fit sees the candidates that search ranks.
SEARCH_DEPTH = 50


def conversation_range(text: str) -> range:
    first, _, last = text.partition("-")
    return range(int(first), int(last or first) + 1)


def gather(dataset: Dataset, path: Path, chosen: range) -> tuple[list[list[float]], list[int]]:
    """Features and labels of every candidate of every question of the chosen conversations."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    parsed = dataset.read(path, samples)
    rows: list[list[float]] = []
    labels: list[int] = []
    for number in chosen:
        sample, conversation = samples[number], parsed[number]
        with (
            tempfile.TemporaryDirectory(prefix="ranking-fit-") as workdir,
            Recall(Path(workdir) / "x.db", dataset.settings(samples)) as mem,
        ):
            store_conversation(mem, conversation)
            mem.refresh_index()
            world = mem.world(conversation.world_id)
            messages = _all_messages(world)
            turn_ids = {m.id: str(m.metadata.get(dataset.turn_key)) for m in messages}
            asked = asked_at(messages)
            index = mem.service.index
            assert index is not None
            for question, _, found in dataset.questions(sample, set(turn_ids.values())):
                evidence = set(found)
                if not evidence:
                    continue
                keyword, vector, neighbours = index.candidates(
                    question, tenant=world.tenant, space=world.id, kinds=("message",), k=SEARCH_DEPTH
                )
                message_of = {c.id: c.source_id for c in (*keyword, *vector)}
                periods = named_periods(question, asked)
                for item, values in features(question, keyword, vector, neighbours, None, periods).items():
                    rows.append(values)
                    labels.append(1 if turn_ids.get(message_of[item]) in evidence else 0)
        print(f"{dataset.title} conversation {number}: {len(rows)} candidates so far", file=sys.stderr)
    return rows, labels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo_json", type=Path)
    parser.add_argument("--conversations", type=conversation_range, default=range(0, 5), help="e.g. 0-4 (default)")
    parser.add_argument("--beam", type=Path, default=None, help="BEAM's beam_128k.json, fitted beside LoCoMo")
    parser.add_argument(
        "--beam-conversations", type=conversation_range, default=range(0, 10), help="0-based, e.g. 0-9 (default)"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    parts = [gather(LOCOMO, args.locomo_json, args.conversations)]
    if args.beam is not None:
        parts.append(gather(BEAM, args.beam, args.beam_conversations))
    rows = [row for part, _ in parts for row in part]
    labels = [label for _, part in parts for label in part]
    # Each data set weighs the same in the fit, whatever its number of candidates.
    weights_of = [len(rows) / (len(parts) * len(part)) for part, _ in parts for _ in part]
    model = LogisticRegression(C=1.0, max_iter=5000).fit(
        np.asarray(rows), np.asarray(labels), sample_weight=np.asarray(weights_of)
    )
    weights = [round(float(w), 3) for w in model.coef_[0]]
    intercept = round(float(model.intercept_[0]), 3)
    for name, weight in zip(FEATURES, weights, strict=True):
        print(f"{name:24} {weight:8.3f}")
    print(f"{'intercept':24} {intercept:8.3f}")
    # The model's probabilities carry the share of evidence among the candidates (well under 1 %):
    # a search hit's relevance adds these log odds back, as if answers were as common as not.
    positives = sum(w for w, label in zip(weights_of, labels, strict=True) if label)
    prior_log_odds = round(math.log((sum(weights_of) - positives) / positives), 3)
    print(f"WEIGHTS = {tuple(weights)}\nINTERCEPT = {intercept}")
    print(f"evidence: {sum(labels)} of {len(labels)} candidates\nPRIOR_LOG_ODDS = {prior_log_odds}")
    if args.json is not None:
        write_json(
            args.json,
            {"features": list(FEATURES), "weights": weights, "intercept": intercept, "prior_log_odds": prior_log_odds},
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

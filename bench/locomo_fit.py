"""Fit the hybrid ranking's weights (recall.search.ranking) on LoCoMo conversations 0-4.

Usage:
    .venv/bin/python bench/locomo_fit.py LOCOMO_JSON [--conversations 0-4] [--json OUT]

For each question of the chosen conversations, the search index's own hybrid candidates
(`SearchIndex.candidates`, as a search for 50 hits gathers them) are turned into features by
`ranking.features`, labelled 1 for the question's evidence turns and 0 for the rest, and a
logistic regression is fitted on them all. It prints the weights and intercept in the form
`ranking.py` holds them. Conversations 5-9 are left out: `bench/locomo_eval.py
--conversations-from 5` reports them as the held-out half.
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
from locomo_eval import _all_messages, asked_at, normalise_evidence
from sklearn.linear_model import LogisticRegression

from recall import Recall, Settings
from recall.importers import read_locomo, store_conversation
from recall.search.ranking import FEATURES, features
from recall.search.when import named_periods

#: Hits the eval asks for (its deepest cutoff): the fit sees the candidates that search ranks.
SEARCH_DEPTH = 50


def conversation_range(text: str) -> range:
    first, _, last = text.partition("-")
    return range(int(first), int(last or first) + 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo_json", type=Path)
    parser.add_argument("--conversations", type=conversation_range, default=range(0, 5), help="e.g. 0-4 (default)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    samples = json.loads(args.locomo_json.read_text(encoding="utf-8"))
    parsed = read_locomo(args.locomo_json)
    rows: list[list[float]] = []
    labels: list[int] = []
    for number in args.conversations:
        sample, conversation = samples[number], parsed[number]
        with (
            tempfile.TemporaryDirectory(prefix="locomo-fit-") as workdir,
            Recall(Path(workdir) / "x.db", Settings(index_interval=0)) as mem,
        ):
            store_conversation(mem, conversation)
            mem.refresh_index()
            world = mem.world(conversation.world_id)
            messages = _all_messages(world)
            dia_ids = {m.id: str(m.metadata.get("dia_id")) for m in messages}
            asked = asked_at(messages)
            index = mem.service.index
            assert index is not None
            for qa in sample.get("qa", []):
                evidence = set(normalise_evidence(qa.get("evidence") or [], set(dia_ids.values())))
                keyword, vector, neighbours = index.candidates(
                    str(qa["question"]), tenant=world.tenant, space=world.id, kinds=("message",), k=SEARCH_DEPTH
                )
                message_of = {c.id: c.source_id for c in (*keyword, *vector)}
                periods = named_periods(str(qa["question"]), asked)
                for item, values in features(str(qa["question"]), keyword, vector, neighbours, None, periods).items():
                    rows.append(values)
                    labels.append(1 if dia_ids.get(message_of[item]) in evidence else 0)
        print(f"conversation {number}: {len(rows)} candidates so far", file=sys.stderr)
    model = LogisticRegression(C=1.0, max_iter=5000).fit(np.asarray(rows), np.asarray(labels))
    weights = [round(float(w), 3) for w in model.coef_[0]]
    intercept = round(float(model.intercept_[0]), 3)
    for name, weight in zip(FEATURES, weights, strict=True):
        print(f"{name:24} {weight:8.3f}")
    print(f"{'intercept':24} {intercept:8.3f}")
    # The model's probabilities carry the share of evidence among the candidates (well under 1 %):
    # a search hit's relevance adds these log odds back, as if answers were as common as not.
    positives = int(sum(labels))
    prior_log_odds = round(math.log((len(labels) - positives) / positives), 3)
    print(f"WEIGHTS = {tuple(weights)}\nINTERCEPT = {intercept}")
    print(f"evidence: {positives} of {len(labels)} candidates\nPRIOR_LOG_ODDS = {prior_log_odds}")
    if args.json is not None:
        write_json(
            args.json,
            {"features": list(FEATURES), "weights": weights, "intercept": intercept, "prior_log_odds": prior_log_odds},
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Embedding throughput: texts/s of recall's default embedder on real chat turns.

Usage:
    .venv/bin/python bench/embed_bench.py [--locomo PATH] [--texts 1000] [--batch 64] [--rounds 3] [--json OUT]

The texts are the first `--texts` turns of LoCoMo (`speaker: words`, as the search index
embeds a message), read where the data lies (default ../shared/datasets/locomo/locomo10.json
from the project root). They are embedded in calls of `--batch` texts, as the background
indexer does, after one warm-up call; the best of `--rounds` passes is reported, and the
time of single short queries (p50/p95 ms over 200 distinct questions).

To compare two trees side by side (old, new, old, new, …):

    .venv/bin/python bench/compare.py /tmp/old . --bench embed --rounds 3 --same-script
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench_report import git_revision, percentiles, write_json

from recall.search.embeddings import default_embedder

DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo10.json"
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "embed_bench.json"


def locomo_turns(path: Path, limit: int) -> tuple[list[str], list[str]]:
    """The first `limit` turns as `speaker: text`, and the questions."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for sample in samples:
        conversation = sample["conversation"]
        number = 1
        while f"session_{number}" in conversation:
            turns += [f"{t['speaker']}: {t['text']}" for t in conversation[f"session_{number}"]]
            number += 1
        questions += [str(qa["question"]) for qa in sample.get("qa", [])]
    return turns[:limit], questions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="path of locomo10.json")
    parser.add_argument("--texts", type=int, default=1000, help="turns embedded per pass")
    parser.add_argument("--batch", type=int, default=64, help="texts per embed call (the indexer's batch)")
    parser.add_argument("--rounds", type=int, default=3, help="passes; the best is reported")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args()
    texts, questions = locomo_turns(args.locomo, args.texts)
    model = default_embedder()
    model.embed(texts[: args.batch])  # loads the model, warms the runtime
    passes = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        for start in range(0, len(texts), args.batch):
            model.embed(texts[start : start + args.batch])
        passes.append(time.perf_counter() - started)
    single = []
    for question in questions[:200]:
        started = time.perf_counter()
        model.embed([question])
        single.append(1000 * (time.perf_counter() - started))
    best = min(passes)
    results = {
        "model": getattr(model, "name", "?"),
        "texts": len(texts),
        "batch": args.batch,
        "texts_per_s": len(texts) / best,
        "passes_s": passes,
        "query_ms": percentiles(single),
        "commit": git_revision(),
    }
    print(
        f"{results['model']}: {len(texts)} LoCoMo turns in batches of {args.batch}: {results['texts_per_s']:.0f} texts/s"
    )
    print(f"single queries: p50 {results['query_ms']['p50']:.2f} ms, p95 {results['query_ms']['p95']:.2f} ms")
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: bulk building (issue 27, point 6): `recall import` of many messages, then the
indexer bringing their vectors up to date, against the embedding model alone on the same texts
in the same run.

1. A JSONL file of `--messages` OpenAI-style lines (LoCoMo's turns, cycled with a serial number,
   two speakers) is imported with the real command, `recall --db FILE import jsonl`, in a
   subprocess: the wall time to stored.
2. Right after, with nothing embedded yet, a keyword search finds the last imported message by
   its words (the index copies new messages as a search needs them).
3. The indexer embeds every message (`SearchIndex.embed_pending`, the server's background
   indexer's step, 64 at a time), and after each step the model alone (recall's int8 MiniLM)
   embeds as many of the same indexed texts, in turn, so both see the same machine: texts/s of
   each, and the wall time to fully indexed (the import, the steps and the vectors' graph).

Prints the times and the ratio of the indexer's texts/s to the model's (the target: within 10 %)
and writes JSON.

Run
---
    .venv/bin/python bench/bulk_bench.py                       # 20,000 messages (~6 min)
    .venv/bin/python bench/bulk_bench.py --messages 100000     # ~30 min here
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_report import git_revision, write_json

from recall import Recall, Settings
from recall.search.embeddings import default_embedder

DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo10.json"
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bulk_bench.json"
WORLD = "bulk"
#: Texts the indexer embeds per step (its own batch: `SearchIndex.embed_pending`).
EMBED_BATCH = 64


def turns(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    return [
        turn["text"]
        for conversation in data
        for name, session in conversation["conversation"].items()
        if name.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def write_jsonl(path: Path, texts: list[str], n: int) -> str:
    """N chat lines, one a minute; the last line's marker word."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    marker = f"zebrafinch{n}"
    with path.open("w") as out:
        for i in range(n):
            line = {
                "role": "user" if i % 2 == 0 else "assistant",
                "name": "maria" if i % 2 == 0 else "helper",
                "content": f"{texts[i % len(texts)]} (#{i})" + (f" {marker}" if i == n - 1 else ""),
                "created_at": (start + timedelta(minutes=i)).isoformat(),
            }
            out.write(json.dumps(line) + "\n")
    return marker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args(argv)
    if args.messages < 2:
        parser.error("--messages must be at least 2")
    if not args.locomo.exists():
        parser.error(f"{args.locomo} not found: give LoCoMo's locomo10.json with --locomo")

    results: dict[str, Any] = {"revision": git_revision(), "messages": args.messages}
    with tempfile.TemporaryDirectory(prefix="recall-bulk-") as tmp:
        db, lines = Path(tmp) / "bulk.db", Path(tmp) / f"{WORLD}.jsonl"
        marker = write_jsonl(lines, turns(args.locomo), args.messages)
        recall_command = Path(sys.executable).with_name("recall")
        start = time.perf_counter()
        subprocess.run([str(recall_command), "--db", str(db), "import", "jsonl", str(lines)], check=True)
        results["import_s"] = time.perf_counter() - start

        with Recall(db, Settings(embeddings="minilm", index_interval=0)) as mem:
            world = mem.world(WORLD)
            start = time.perf_counter()
            found = world.search(marker, k=1, method="bm25")
            results["first_keyword_search_s"] = time.perf_counter() - start
            results["found_by_words_at_once"] = bool(found) and marker in found[0].text
            default_embedder().embed(["warm-up"])  # the model loaded before it is timed, for both
            index = mem.service.index
            assert index is not None
            texts = [str(r[0]) for r in mem.service.store._read("SELECT text FROM search_items WHERE kind = 'message'")]
            model = default_embedder()
            # The indexer's steps and the model alone on as many of the same texts, in turn, so
            # a machine that slows down slows both alike.
            results["index_s"] = results["model_s"] = 0.0
            done = 0
            while True:
                start = time.perf_counter()
                embedded = index.embed_pending(EMBED_BATCH)
                results["index_s"] += time.perf_counter() - start
                if not embedded:
                    break
                start = time.perf_counter()
                model.embed(texts[done : done + embedded])
                results["model_s"] += time.perf_counter() - start
                done += embedded
            start = time.perf_counter()
            mem.refresh_index()  # what is left: the graph of the vectors
            results["index_s"] += time.perf_counter() - start
        results["indexed_texts"] = done

    indexer_rate = results["indexed_texts"] / results["index_s"]
    model_rate = results["indexed_texts"] / results["model_s"]
    results.update(indexer_texts_per_s=indexer_rate, model_texts_per_s=model_rate, ratio=indexer_rate / model_rate)
    results["wall_to_fully_indexed_s"] = results["import_s"] + results["index_s"]
    print(f"recall bulk bench: {args.messages:,} messages (recall {results['revision']})")
    print(f"  `recall import jsonl`            {results['import_s']:8.1f} s")
    print(
        f"  found by its words at once       {'yes' if results['found_by_words_at_once'] else 'NO'}"
        f" (the first search {results['first_keyword_search_s'] * 1000:.0f} ms: it loads the index's copy in memory)"
    )
    print(f"  embedded by the indexer          {results['index_s']:8.1f} s  {indexer_rate:7.1f} texts/s")
    print(f"  the model alone, same texts      {results['model_s']:8.1f} s  {model_rate:7.1f} texts/s")
    print(f"  indexer ÷ model                  {results['ratio']:8.2f}   (target ≥ 0.90)")
    print(f"  wall time to fully indexed       {results['wall_to_fully_indexed_s']:8.1f} s")
    write_json(args.json, results)
    print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

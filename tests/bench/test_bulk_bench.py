"""bench/bulk_bench.py on a tiny LoCoMo-format file: the real `recall import jsonl`, the last
message found by its words before anything is embedded, then the indexer against the model."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.scripts import alice_and_bob, load_bench_script

bulk_bench = load_bench_script("bulk_bench")


def test_import_then_index_against_the_model(tmp_path: Path) -> None:
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([{"sample_id": "tiny", "conversation": alice_and_bob(), "qa": []}]))
    out = tmp_path / "bulk.json"
    assert bulk_bench.main(["--messages", "40", "--locomo", str(locomo), "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["found_by_words_at_once"] is True
    assert results["indexed_texts"] == 40
    assert results["index_s"] > 0 and results["model_s"] > 0 and results["ratio"] > 0
    assert results["wall_to_fully_indexed_s"] >= results["import_s"]

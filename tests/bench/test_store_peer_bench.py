"""bench/store_peer_bench.py on a tiny LoCoMo-format file: every store is built, read, searched
and written, and the report holds what the issue asks (build, get/put p95, search p50/p95)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.scripts import alice_and_bob, load_bench_script

peer_bench = load_bench_script("store_peer_bench")


def test_the_stores_side_by_side(tmp_path: Path, capsys: object) -> None:
    sample = {
        "sample_id": "conv-tiny",
        "conversation": alice_and_bob(),
        "qa": [
            {"question": "Which instrument was bought?", "answer": "saxophone", "evidence": ["D1:1"]},
            {"question": "Which trick did the dog learn?", "answer": "roll", "evidence": ["D1:4"]},
        ],
    }
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([sample]))
    out = tmp_path / "peers.json"
    code = peer_bench.main(
        [
            "--sizes",
            "30",
            "--stores",
            "memory,sqlite,recall-sqlite",
            "--ops",
            "5",
            "--queries",
            "2",
            "--locomo",
            str(locomo),
            "--json",
            str(out),
        ]
    )
    assert code == 0
    results = json.loads(out.read_text())
    measured = dict(results["sizes"]["30"])
    embedding = measured.pop("query_embedding_ms")  # the model alone on the same queries
    assert embedding["p95"] >= embedding["p50"] > 0
    assert set(measured) == {"memory", "sqlite", "recall-sqlite"}
    for store in measured.values():
        assert store["build_s"] > 0
        for metric in ("get_ms", "put_ms", "search_ms"):
            assert store[metric]["p95"] >= store[metric]["p50"] > 0
        assert store["hits_per_search"] == 10  # 30 items under the prefix: each search fills its page
    assert measured["recall-sqlite"]["index_s"] > 0
    printed = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "recall-sqlite" in printed and "the model alone on the same queries" in printed

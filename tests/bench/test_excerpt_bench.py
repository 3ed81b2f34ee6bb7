"""bench/excerpt_bench.py in a smoke run: every case is timed, and each long text's excerpt
really is the part the query asks about (the bench times the work that finds it)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from recall.core.excerpts import excerpt
from recall.core.tokens import TokenCounter
from recall.search.local_words import words
from tests.bench.scripts import load_bench_script

excerpt_bench = load_bench_script("excerpt_bench")


def test_every_case_is_timed(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "excerpt.json"
    assert excerpt_bench.main(["--runs", "2", "--json", str(out)]) == 0
    timings = json.loads(out.read_text())["excerpt_ms"]
    assert set(timings) == set(excerpt_bench.CASES)
    assert all(t["p50"] > 0 for t in timings.values())
    assert "A cold excerpt" in capsys.readouterr().out  # type: ignore[attr-defined]


def test_the_excerpt_of_each_long_prose_case_holds_the_needle() -> None:
    counter, rng = TokenCounter("o200k_base"), random.Random(1)
    terms = frozenset(words(excerpt_bench.QUERY))
    for name, make in excerpt_bench.CASES.items():
        if name.startswith("prose"):
            found = excerpt(make(rng), terms, words, counter, excerpt_bench.EXCERPT_TOKENS)
            assert excerpt_bench.NEEDLE in found.text, name

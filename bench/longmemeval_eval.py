"""Retrieval evaluation on LongMemEval: does recall's search find the sessions that answer a question?

Usage:
    .venv/bin/python bench/longmemeval_eval.py DATA_JSON [--limit N] [--method bm25|vector|hybrid]
        [--turns all|user] [--json OUT]

LongMemEval (Wu et al., ICLR 2025, arXiv:2410.10813) gives each question its own "haystack":
chat sessions between a user and an assistant, a few of which (`answer_session_ids`) hold the
answer. DATA_JSON is one of the published files (`longmemeval_s.json`, `longmemeval_m.json`,
`longmemeval_oracle.json`), plain or `.json.xz`. For each question this script

1. skips abstention questions (`question_id` ending in `_abs`: their answer is not in the
   haystack, so there is nothing to retrieve);
2. opens a fresh temporary store and imports the haystack, one message per turn, user turns
   from `user` and assistant turns from an agent `assistant`, each session at its
   `haystack_dates` time, the session id in the message metadata; then embeds every turn;
3. searches the turns with the question and ranks the sessions by their best-ranked turn;
4. scores the session ranking at k = 1, 3, 5, 10: `recall_any@k` (an answer session is in the
   top k), `recall_all@k` (every answer session is) and `ndcg_any@k` (binary relevance);
   averaged over all questions and per `question_type`.

`--turns user` indexes only the user turns, as the paper's retrieval experiments do (their
turn-level keys are user turns); the default indexes both sides, as recall stores a chat.
Ranking sessions by their best turn and cutting at k sessions gives the same recall as the
paper's turn-to-session evaluation (which widens the turn cutoff until k distinct sessions are
in it). Its NDCG differs: the paper's scores turns and discounts rank 2 like rank 1.

The data is read where it lies (MIT licence); nothing of it is copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from bench_report import write_json
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table

from recall import PostRequest, Recall, Settings
from recall.app.validation import parse_timestamp
from recall.errors import InvalidInputError
from recall.search.embeddings import Embedder

METHODS = ("bm25", "vector", "hybrid")
TURN_CHOICES = ("all", "user")
CUTOFFS = (1, 3, 5, 10)
METRICS = ("recall_any", "recall_all", "ndcg_any")
#: Turns asked of the search at first, and the most it may ask: sessions are ranked by their
#: turns, so when the first turns come from fewer than max(CUTOFFS) sessions the search is
#: repeated deeper (turns of one long session can fill a shallow list).
FIRST_DEPTH = 50
MAX_DEPTH = 1000
#: The world each question's haystack goes to, and the agent that speaks the assistant turns.
WORLD_ID = "longmemeval"
ASSISTANT = "assistant"
#: Sessions whose date cannot be read are placed after the previous session by this much
#: (or at FALLBACK_START when no session before them has a date), so their order survives.
FALLBACK_GAP = timedelta(minutes=1)
FALLBACK_START = datetime(2023, 1, 1, tzinfo=UTC)
#: Texts embedded per index round: more texts per call let the embedder group texts of similar
#: length, so less of its work goes into padding.
EMBED_BATCH = 256
#: LongMemEval's dates look like "2023/05/20 (Sat) 02:21"; the weekday and time may be missing.
_LME_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?")
#: Item fields this script reads.
_REQUIRED = ("question_id", "question_type", "question", "haystack_session_ids", "haystack_sessions")


# -- metrics ---------------------------------------------------------------------------------


def recall_any(ranking: Sequence[str], answers: Sequence[str], k: int) -> float:
    """1.0 if any answer session is among the first `k` ranked sessions."""
    top = set(ranking[:k])
    return float(any(a in top for a in answers))


def recall_all(ranking: Sequence[str], answers: Sequence[str], k: int) -> float:
    """1.0 if every answer session is among the first `k` ranked sessions (and there is one)."""
    top = set(ranking[:k])
    return float(bool(answers) and all(a in top for a in answers))


def ndcg_any(ranking: Sequence[str], answers: Sequence[str], k: int) -> float:
    """NDCG@k with binary relevance (answer sessions are relevant): DCG = sum of 1/log2(rank+1)
    over the relevant sessions in the top k, divided by the DCG of a perfect ranking."""
    relevant = set(answers)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, s in enumerate(ranking[:k], start=1) if s in relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
    return dcg / ideal if ideal else 0.0


def score(ranking: Sequence[str], answers: Sequence[str]) -> dict[str, float]:
    """Every metric at every cutoff, keyed like `recall_any@5`."""
    functions = {"recall_any": recall_any, "recall_all": recall_all, "ndcg_any": ndcg_any}
    return {f"{name}@{k}": functions[name](ranking, answers, k) for name in METRICS for k in CUTOFFS}


def rank_sessions(turn_sessions: Sequence[str]) -> list[str]:
    """Sessions in the order of their best-ranked turn: the search ranks turns, and a session
    is as relevant as its best turn (one turn holding the answer makes the session an answer)."""
    return list(dict.fromkeys(turn_sessions))


# -- reading the data ------------------------------------------------------------------------


def load_items(path: str | Path) -> list[dict[str, Any]]:
    """The questions of a LongMemEval file (`.json` or `.json.xz`), checked for the fields used."""
    file = Path(path)
    try:
        if file.suffix == ".xz":
            with lzma.open(file, "rt", encoding="utf-8") as handle:
                items = json.load(handle)
        else:
            items = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, lzma.LZMAError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read LongMemEval JSON from {path}: {exc}") from None
    if not isinstance(items, list):
        raise ValueError("a LongMemEval file is a JSON list of questions")
    for index, item in enumerate(items):
        missing = [name for name in _REQUIRED if not isinstance(item, dict) or name not in item]
        if missing:
            raise ValueError(f"question {index} has no {', '.join(missing)}")
        if len(item["haystack_session_ids"]) != len(item["haystack_sessions"]):
            raise ValueError(
                f"question {item['question_id']}: haystack_session_ids and haystack_sessions differ in length"
            )
    return items


def parse_date(raw: object) -> datetime | None:
    """A LongMemEval date ("2023/05/20 (Sat) 02:21") or an ISO 8601 time, in UTC; None if neither."""
    if not isinstance(raw, str):
        return None
    match = _LME_DATE.fullmatch(raw.strip())
    if match is not None:
        year, month, day, hour, minute = (int(g) if g else 0 for g in match.groups())
        try:
            return datetime(year, month, day, hour, minute, tzinfo=UTC)
        except ValueError:
            return None
    try:
        return parse_timestamp(raw.strip())
    except InvalidInputError:
        return None


def session_times(dates: Sequence[object], sessions: int) -> tuple[list[datetime], int]:
    """One time per session from `haystack_dates`, and how many could not be read. A missing or
    unreadable date becomes the previous session's time plus FALLBACK_GAP, keeping the sessions
    in order; for the first session, the earliest readable date (else FALLBACK_START)."""
    parsed = [parse_date(dates[i]) if i < len(dates) else None for i in range(sessions)]
    readable = [t for t in parsed if t is not None]
    times: list[datetime] = []
    for when in parsed:
        if when is None:
            when = times[-1] + FALLBACK_GAP if times else min(readable, default=FALLBACK_START)
        times.append(when)
    return times, sum(1 for t in parsed if t is None)


def haystack_requests(item: Mapping[str, Any], turns: str, max_chars: int) -> tuple[list[PostRequest], list[str], int]:
    """The messages of a question's haystack, the session id of each, and the unreadable dates."""
    ids = [str(s) for s in item["haystack_session_ids"]]
    times, unreadable = session_times(item.get("haystack_dates") or [], len(ids))
    requests: list[PostRequest] = []
    sessions: list[str] = []
    for session_id, session, start in zip(ids, item["haystack_sessions"], times, strict=True):
        for number, turn in enumerate(session):
            role = turn.get("role")
            if role not in ("user", "assistant") or (turns == "user" and role != "user"):
                continue
            # A long turn is cut to what a message may hold; an empty one still marks its place.
            content = str(turn.get("content") or "").strip()[:max_chars] or "…"
            metadata = {"session_id": session_id, "turn": number, "has_answer": bool(turn.get("has_answer"))}
            requests.append(
                PostRequest(
                    sender="user" if role == "user" else ASSISTANT,
                    content=content,
                    # A second per turn keeps the turns of a session in order in time, too.
                    created_at=start + timedelta(seconds=number),
                    metadata=metadata,
                )
            )
            sessions.append(session_id)
    return requests, sessions, unreadable


# -- embedding once per text -----------------------------------------------------------------


class CachingEmbedder:
    """An embedder that remembers each text's vector for the whole run. The haystacks of a
    LongMemEval file are drawn from one pool of sessions, so the same turn comes up in many
    questions; each question has its own store, and without this every store would embed it again."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.vectors: dict[str, NDArray[np.float32]] = {}
        self.hits = 0
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            for text, vector in zip(missing, np.asarray(self.inner.embed(missing), dtype=np.float32), strict=True):
                self.vectors[text] = vector
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self.vectors[text]
        return out


def _share_cache(mem: Recall, cache: CachingEmbedder | None) -> CachingEmbedder | None:
    """Put the run's cache in front of this store's embedder (the same model: same name and
    dimension, so the index's model check holds). Returns the cache, creating it on first use."""
    index = mem.service.index
    if index is None or index.embedder is None:
        return cache
    if cache is None:
        cache = CachingEmbedder(index.embedder)
    index.embedder = cache
    return cache


# -- the evaluation --------------------------------------------------------------------------


@dataclass
class QuestionResult:
    question_id: str
    question_type: str
    answers: list[str]
    ranking: list[str]
    scores: dict[str, float]
    turns: int


def session_ranking(
    mem: Recall, question: str, method: str, turn_session: Mapping[int, str], asked: datetime | None = None
) -> list[str]:
    """The sessions ranked for `question` (asked at `asked`: relative times in it count back
    from then), at least max(CUTOFFS) of them when the search finds that many."""
    world = mem.world(WORLD_ID)
    depth = FIRST_DEPTH
    while True:
        hits = world.search(question, k=depth, kinds=("message",), method=method, now=asked)
        ranking = rank_sessions([turn_session[hit.source_id] for hit in hits])
        if len(ranking) >= max(CUTOFFS) or len(hits) < depth or depth >= MAX_DEPTH:
            return ranking
        depth = min(depth * 4, MAX_DEPTH)


def evaluate_question(
    item: Mapping[str, Any],
    method: str,
    settings: Settings,
    workdir: Path,
    turns: str = "all",
    cache: CachingEmbedder | None = None,
) -> tuple[QuestionResult, CachingEmbedder | None, int]:
    """Import one question's haystack into a fresh store, search it, score the session ranking.
    Returns the result, the embedding cache (created on first use) and the unreadable dates."""
    requests, sessions, unreadable = haystack_requests(item, turns, settings.max_message_chars)
    haystack = set(sessions)
    # An answer session that is not in the haystack (or has no indexed turn) cannot be found by
    # any retriever; it is left out, as the paper's evaluation only knows sessions it indexed.
    answers = [str(a) for a in dict.fromkeys(item.get("answer_session_ids") or []) if str(a) in haystack]
    with Recall(workdir / "haystack.db", settings) as mem:
        cache = _share_cache(mem, cache)
        world = mem.world(WORLD_ID, create=True, name="LongMemEval haystack")
        world.add_agent(ASSISTANT)
        stored = world.import_messages(requests)
        turn_session = {message.id: session for message, session in zip(stored, sessions, strict=True)}
        mem.refresh_index()
        # The question's own date: "last Saturday" in it means the Saturday before then.
        asked = parse_date(item.get("question_date"))
        ranking = session_ranking(mem, str(item["question"]), method, turn_session, asked)
    result = QuestionResult(
        question_id=str(item["question_id"]),
        question_type=str(item["question_type"]),
        answers=answers,
        ranking=ranking,
        scores=score(ranking, answers),
        turns=len(requests),
    )
    return result, cache, unreadable


def summary(results: Sequence[QuestionResult]) -> dict[str, float]:
    """The mean of every metric over `results`, to four places."""
    keys = [f"{name}@{k}" for name in METRICS for k in CUTOFFS]
    return {key: round(sum(r.scores[key] for r in results) / len(results), 4) if results else 0.0 for key in keys}


def evaluate(
    path: str | Path,
    limit: int | None = None,
    method: str = "hybrid",
    settings: Settings | None = None,
    turns: str = "all",
    progress: Console | None = None,
) -> dict[str, Any]:
    """Run the evaluation on the first `limit` answerable questions; the report (fractions 0..1)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if turns not in TURN_CHOICES:
        raise ValueError(f"turns must be one of {', '.join(TURN_CHOICES)}, got {turns!r}")
    started = time.perf_counter()
    items = load_items(path)
    abstention = [i for i in items if str(i["question_id"]).endswith("_abs")]
    answerable = [i for i in items if not str(i["question_id"]).endswith("_abs")]
    if limit is not None:
        answerable = answerable[:limit]
    # index_interval=0: no background indexer; refresh_index() embeds everything before searching.
    # A keyword search uses no vectors, so for bm25 nothing is embedded.
    settings = settings or Settings(
        index_interval=0, embed_batch=EMBED_BATCH, embeddings="none" if method == "bm25" else "minilm"
    )
    results: list[QuestionResult] = []
    no_answer = unreadable_dates = 0
    cache: CachingEmbedder | None = None
    for item in answerable:
        with tempfile.TemporaryDirectory(prefix="longmemeval-eval-") as workdir:
            result, cache, unreadable = evaluate_question(item, method, settings, Path(workdir), turns, cache)
        unreadable_dates += unreadable
        if not result.answers:
            no_answer += 1  # nothing to find: scoring it would only say so
            continue
        results.append(result)
        if progress is not None:
            found = next((rank for rank, s in enumerate(result.ranking, 1) if s in result.answers), None)
            cached = f", {cache.hits} cached / {cache.misses} embedded texts" if cache is not None else ""
            progress.print(
                f"{len(results)}/{len(answerable)} {result.question_id} ({result.question_type}):"
                f" {result.turns} turns, first answer session at rank {found or '-'}"
                f"{cached}, {time.perf_counter() - started:.0f} s"
            )
    per_type = {
        qtype: {"questions": len(members), **summary(members)}
        for qtype in sorted({r.question_type for r in results})
        for members in [[r for r in results if r.question_type == qtype]]
    }
    return {
        "method": method,
        "turns": turns,
        "questions": len(results),
        "overall": summary(results),
        "per_type": per_type,
        "skipped": {"abstention": len(abstention), "no_answer_session": no_answer},
        "unreadable_dates": unreadable_dates,
        "seconds": round(time.perf_counter() - started, 1),
    }


# -- the report ------------------------------------------------------------------------------


def print_report(report: Mapping[str, Any], console: Console) -> None:
    titles = {"recall_any": "recall_any@k", "recall_all": "recall_all@k", "ndcg_any": "ndcg_any@k"}
    for metric in METRICS:
        table = Table(title=f"LongMemEval session {titles[metric]}, method {report['method']} (%)")
        table.add_column("question type")
        table.add_column("questions", justify="right")
        for k in CUTOFFS:
            table.add_column(f"@{k}", justify="right")
        for qtype, row in report["per_type"].items():
            table.add_row(qtype, str(row["questions"]), *(f"{100 * row[f'{metric}@{k}']:.1f}" for k in CUTOFFS))
        table.add_section()
        overall = report["overall"]
        table.add_row("overall", str(report["questions"]), *(f"{100 * overall[f'{metric}@{k}']:.1f}" for k in CUTOFFS))
        console.print(table)
    skipped = report["skipped"]
    console.print(
        f"{report['questions']} questions ({report['turns']} turns indexed); skipped {skipped['abstention']}"
        f" abstention and {skipped['no_answer_session']} without an answer session in the haystack;"
        f" {report['unreadable_dates']} unreadable session dates; {report['seconds']:.1f} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_json", type=Path, help="a LongMemEval file (.json or .json.xz)")
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N answerable questions")
    parser.add_argument("--method", choices=METHODS, default="hybrid", help="search method (default hybrid)")
    parser.add_argument(
        "--turns", choices=TURN_CHOICES, default="all", help="index all turns (default) or only the user's"
    )
    parser.add_argument("--json", type=Path, default=None, dest="json_out", help="also write the report here")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    report = evaluate(args.data_json, args.limit, args.method, turns=args.turns, progress=Console(stderr=True))
    print_report(report, Console())
    if args.json_out is not None:
        write_json(args.json_out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

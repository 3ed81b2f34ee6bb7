"""Retrieval evaluation on LoCoMo: does recall's search find the turns that answer a question?

Usage:
    .venv/bin/python bench/locomo_eval.py LOCOMO_JSON [--conversations N | --range A-B] [--method bm25|vector|hybrid]
        [--json OUT]

`--range 0-4` is the half the hybrid ranking's weights were fitted on (bench/locomo_fit.py),
`--range 5-9` the held-out half.

LoCoMo (Maharana et al., ACL 2024, arXiv:2402.17753) is ten long two-person conversations
(19-32 sessions each, ~6k turns in all) with 1,986 questions whose `evidence` names the turns
(dia_ids like `D3:7`) that hold the answer. For each conversation this script

1. opens a fresh temporary store, imports the conversation with its real session timestamps
   (`recall.importers`) and embeds every turn (`refresh_index`);
2. searches the conversation's messages with each question (`World.search`, top 50);
3. scores recall@k for k = 5, 10, 25, 50 as the paper does: the fraction of the question's
   evidence turns among the top k (partial credit), 1 for a question without evidence;
   averaged over all questions (adversarial category 5 included) and per category;
4. counts the cl100k tokens of the top-k turns' text (what a model would be given), against
   the tokens of the whole conversation.

The paper's reference (Table 3, DRAGON retriever over dialog turns, all 1,986 questions) is
R@5 56.7, R@10 66.2, R@25 76.7, R@50 82.7.

The data is read where it lies (CC BY-NC 4.0); nothing of it is copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_report import write_json
from rich.console import Console
from rich.table import Table

from recall import Message, Recall, Settings, World
from recall.core.tokens import TokenCounter
from recall.importers import Conversation, read_locomo, store_conversation
from recall.search.base import message_text

METHODS = ("bm25", "vector", "hybrid")
CUTOFFS = (5, 10, 25, 50)
#: Hits asked of the search per question: the largest cutoff.
SEARCH_DEPTH = max(CUTOFFS)
#: The encoding the paper-era models (GPT-3.5/4) use; token counts are for comparison only.
TOKEN_ENCODING = "cl100k_base"
#: Category numbers as the dataset README (and the LoCoMo repo's evaluation code) names them.
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
#: The paper's tables order the categories single-hop, multi-hop, temporal, open-domain, adversarial.
CATEGORY_ORDER = (4, 1, 2, 3, 5)
#: LoCoMo paper, Table 3: DRAGON over the dialog database, all questions, partial credit.
PAPER_DRAGON_RECALL = {5: 0.567, 10: 0.662, 25: 0.767, 50: 0.827}

#: Evidence lists sometimes pack several ids into one string ("D8:6; D9:17", "D9:1 D4:4 D4:6").
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")
#: A dia_id, tolerating the stray colon of "D:11:26"; the numbers are re-printed without
#: leading zeros so "D30:05" becomes "D30:5".
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


def normalise_evidence(raw: Sequence[object], known_ids: set[str]) -> list[str]:
    """The distinct dia_ids a question's evidence names, in order.

    Each string is split on `;`, `,` and whitespace; each piece is read as `D<session>:<turn>`
    (a stray colon after the `D` and leading zeros are forgiven). Pieces that are no dia_id
    (`"D"`) or name no turn of the conversation (`D10:19` where session 10 has 16 turns) are
    dropped: no retriever could return them, and counting them would only lower every
    method's score alike. In LoCoMo this never empties a question's evidence. Repeats count once.
    """
    found: list[str] = []
    for item in raw:
        for piece in _EVIDENCE_SEPARATORS.split(str(item).strip()):
            match = _DIA_ID.fullmatch(piece)
            if match is None:
                continue
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia_id in known_ids and dia_id not in found:
                found.append(dia_id)
    return found


def recall_at(retrieved: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """The LoCoMo paper's recall@k: the share of the evidence among the first `k` retrieved
    ids (partial credit); 1.0 when there is no evidence to find."""
    if not evidence:
        return 1.0
    top = set(retrieved[:k])
    return sum(1 for dia_id in evidence if dia_id in top) / len(evidence)


@dataclass
class QuestionResult:
    sample_id: str
    category: int
    evidence: list[str]
    retrieved: list[str]
    recall: dict[int, float]
    context_tokens: dict[int, int]


@dataclass
class ConversationResult:
    sample_id: str
    turns: int
    tokens: int
    #: Import and embedding, then the searches (with their scoring), in seconds.
    index_seconds: float
    search_seconds: float = 0.0
    questions: list[QuestionResult] = field(default_factory=list)


def _all_messages(world: World) -> list[Message]:
    """Every message of the world, oldest first, read page by page."""
    messages: list[Message] = []
    while page := world.messages(after=messages[-1].id if messages else 0, limit=1000, all_chats=True):
        messages.extend(page)
    return messages


def asked_at(messages: Sequence[Message]) -> datetime | None:
    """When a conversation's questions are asked: just after its last message."""
    return max((m.created_at for m in messages), default=None)


def evaluate_conversation(
    sample: Mapping[str, Any],
    conversation: Conversation,
    method: str,
    settings: Settings,
    counter: TokenCounter,
    workdir: Path,
) -> ConversationResult:
    """Import one conversation into a fresh store, then search it with each of its questions."""
    sample_id = str(sample.get("sample_id"))
    started = time.perf_counter()
    with Recall(workdir / "x.db", settings) as mem:
        store_conversation(mem, conversation)
        mem.refresh_index()
        world = mem.world(conversation.world_id)
        messages = _all_messages(world)
        # Hits carry message ids; one map read up front instead of a message lookup per hit.
        dia_ids = {m.id: str(m.metadata.get("dia_id")) for m in messages}
        known_ids = set(dia_ids.values())
        # The questions are asked after the talk: relative times in them count back from its end.
        asked = asked_at(messages)
        # The conversation's size in the same text the search returns (speaker, words, caption).
        whole_conversation = sum(counter.count(message_text(m)) for m in messages)
        result = ConversationResult(sample_id, len(messages), whole_conversation, time.perf_counter() - started)
        started = time.perf_counter()
        tokens_by_message: dict[int, int] = {}
        for qa in sample.get("qa", []):
            evidence = normalise_evidence(qa.get("evidence") or [], known_ids)
            # One search of depth 50 per question; R@k looks at its first k hits, as the paper
            # does. (A hybrid search asked for fewer hits fuses shallower candidate lists, so
            # its top 5 can differ slightly from the first 5 of these 50.)
            hits = world.search(str(qa["question"]), k=SEARCH_DEPTH, kinds=("message",), method=method, now=asked)
            retrieved = [dia_ids[hit.source_id] for hit in hits]
            for hit in hits:
                if hit.source_id not in tokens_by_message:
                    tokens_by_message[hit.source_id] = counter.count(hit.text)
            sizes = [tokens_by_message[hit.source_id] for hit in hits]
            result.questions.append(
                QuestionResult(
                    sample_id=sample_id,
                    category=int(qa["category"]),
                    evidence=evidence,
                    retrieved=retrieved,
                    recall={k: recall_at(retrieved, evidence, k) for k in CUTOFFS},
                    context_tokens={k: sum(sizes[:k]) for k in CUTOFFS},
                )
            )
        result.search_seconds = time.perf_counter() - started
    return result


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _recall_summary(questions: Sequence[QuestionResult]) -> dict[str, float]:
    return {str(k): round(_mean([q.recall[k] for q in questions]), 4) for k in CUTOFFS}


def evaluate(
    path: str | Path,
    conversations: int | range | None = None,
    method: str = "hybrid",
    settings: Settings | None = None,
    progress: Console | None = None,
) -> dict[str, Any]:
    """Run the evaluation and return the report (recall values are fractions 0..1)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    started = time.perf_counter()
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    parsed = read_locomo(path)  # same order as the samples
    if isinstance(conversations, range):
        samples, parsed = [samples[i] for i in conversations], [parsed[i] for i in conversations]
    elif conversations is not None:
        samples, parsed = samples[:conversations], parsed[:conversations]
    # index_interval=0: no background indexer; refresh_index() embeds everything before searching.
    settings = settings or Settings(index_interval=0)
    counter = TokenCounter(TOKEN_ENCODING)
    results: list[ConversationResult] = []
    for sample, conversation in zip(samples, parsed, strict=True):
        with tempfile.TemporaryDirectory(prefix="locomo-eval-") as workdir:
            results.append(evaluate_conversation(sample, conversation, method, settings, counter, Path(workdir)))
        if progress is not None:
            done = results[-1]
            progress.print(
                f"{done.sample_id}: {done.turns} turns, {len(done.questions)} questions,"
                f" {time.perf_counter() - started:.0f} s"
            )
    questions = [q for r in results for q in r.questions]
    per_category: dict[str, dict[str, Any]] = {}
    for category in sorted({q.category for q in questions}):
        members = [q for q in questions if q.category == category]
        per_category[str(category)] = {
            "name": CATEGORY_NAMES.get(category, f"category {category}"),
            "questions": len(members),
            **_recall_summary(members),
        }
    return {
        "method": method,
        "overall": _recall_summary(questions),
        "per_category": per_category,
        "questions": len(questions),
        "conversations": len(results),
        "context_tokens": {str(k): round(_mean([q.context_tokens[k] for q in questions]), 1) for k in CUTOFFS},
        "conversation_tokens": round(_mean([r.tokens for r in results]), 1),
        "seconds": round(time.perf_counter() - started, 1),
        "index_seconds": round(sum(r.index_seconds for r in results), 1),
        "search_seconds": round(sum(r.search_seconds for r in results), 1),
    }


def parse_range(text: str) -> range:
    """Conversations `A-B` (0-based, inclusive), or one conversation `A`."""
    first, _, last = text.partition("-")
    return range(int(first), int(last or first) + 1)


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


def print_report(report: Mapping[str, Any], console: Console) -> None:
    table = Table(title=f"LoCoMo retrieval recall@k, method {report['method']} (%, partial credit)")
    table.add_column("category")
    table.add_column("questions", justify="right")
    for k in CUTOFFS:
        table.add_column(f"R@{k}", justify="right")
    per_category = report["per_category"]
    ordered = [str(c) for c in CATEGORY_ORDER if str(c) in per_category]
    ordered += [c for c in per_category if c not in ordered]
    for category in ordered:
        row = per_category[category]
        table.add_row(f"{category} {row['name']}", str(row["questions"]), *(_percent(row[str(k)]) for k in CUTOFFS))
    table.add_section()
    overall = report["overall"]
    table.add_row("overall", str(report["questions"]), *(_percent(overall[str(k)]) for k in CUTOFFS))
    table.add_row("paper (DRAGON)", "1986", *(_percent(PAPER_DRAGON_RECALL[k]) for k in CUTOFFS))
    table.add_section()
    conversation_tokens = report["conversation_tokens"]
    tokens = report["context_tokens"]
    table.add_row(
        "context tokens / question", "", *(f"{tokens[str(k)]:.0f}" for k in CUTOFFS), style="dim"
    )  # mean cl100k tokens of the top-k turns
    table.add_row(
        "share of conversation",
        "",
        *(f"{100 * tokens[str(k)] / conversation_tokens:.1f}%" if conversation_tokens else "-" for k in CUTOFFS),
        style="dim",
    )
    console.print(table)
    console.print(
        f"{report['conversations']} conversations, mean {conversation_tokens:.0f} tokens each ({TOKEN_ENCODING});"
        f" {report['seconds']:.1f} s ({report['index_seconds']:.1f} s importing and embedding,"
        f" {report['search_seconds']:.1f} s searching)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo_json", type=Path, help="path of locomo10.json")
    parser.add_argument("--conversations", type=int, default=None, help="evaluate only the first N conversations")
    parser.add_argument("--range", default=None, help="evaluate conversations A to B (0-based, inclusive), e.g. 5-9")
    parser.add_argument("--method", choices=METHODS, default="hybrid", help="search method (default hybrid)")
    parser.add_argument("--json", type=Path, default=None, dest="json_out", help="also write the report here")
    args = parser.parse_args(argv)
    if args.conversations is not None and args.conversations < 1:
        parser.error("--conversations must be at least 1")
    console = Console(stderr=True)
    chosen: int | range | None = args.conversations
    if args.range is not None:
        chosen = parse_range(args.range)
    report = evaluate(args.locomo_json, chosen, args.method, progress=console)
    print_report(report, Console())
    if args.json_out is not None:
        write_json(args.json_out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

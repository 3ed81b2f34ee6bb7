"""Context recall on LoCoMo: does the evidence a question needs land in the agent's context?

Usage:
    .venv/bin/python bench/context_recall_eval.py ../shared/datasets/locomo/locomo10.json [--range 5-9]
        [--conversations N] [--budgets 2000,4000,8000] [--no-peers] [--agent-setting KEY=VALUE ...]
        [--json OUT [--json-questions]]

Settings are tuned on conversations 0-4 (`--range 0-4`); conversations 5-9 (`--range 5-9`) are held
out, to check that what was tuned carries over. Compare agent settings with `--agent-setting`, e.g.
`--agent-setting recalled_max_tokens=0` (no recalled past) against the defaults.

bench/locomo_eval.py asks whether recall's *search* ranks a question's evidence turns high; this
script asks what an agent is finally *given*: the context recall builds for its next model call
within a token budget. LoCoMo (Maharana et al., ACL 2024, arXiv:2402.17753) is ten long
two-person conversations whose questions name the turns (dia_ids like `D3:7`) holding the answer.

For each conversation, in a fresh temporary store:

1. the conversation is imported with its real session timestamps (`recall.importers.read_locomo`:
   both speakers become agents that hear everything) and every turn is embedded
   (`refresh_index`); the agent is the conversation's first speaker (`speaker_a`);
2. for each question with evidence (1,982 of LoCoMo's 1,986), a person (`user`) posts
   `@<agent> <question>` one minute after the last turn; for each budget B the agent's context is
   built for that message (`Agent.context(max_tokens=B, message=...)`), and its score is the share of
   the question's evidence turns among the messages the report lists as included (any section:
   history, incoming, the recalled past). The context's tokens (`report.total_tokens`, everything
   a model would be sent) and its tokens per section are recorded. The question is then deleted,
   so no question sees another;
3. plain peers get the same question and budget, each packing whole turns, one line each
   (`[YYYY-MM-DD] speaker: text`, with ` [shares an image: caption]` for a shared image), best
   first into B o200k tokens (a line costs its tokens plus one for the newline), skipping a turn
   that does not fit and going on with the next:
   - "newest turns that fit": newest first (what a plain chat history keeps);
   - "MiniLM int8 cosine": by cosine between the question and the turn, with recall's own
     embedding model (all-MiniLM-L6-v2 int8);
   - "bm25s": by the `bm25s` package's BM25 over the turns (English stop words removed);
   turns that tie (BM25's zero scores, for one) go newest first.

Scores are fractions (partial credit), averaged over all questions and per category, for each
budget; tokens are means per question. When the run spans both halves (0-4 and 5-9), each half is
summarised too.

The data is read where it lies (CC BY-NC 4.0); nothing of it is copied into the repository, and
nothing is written at run time except the `--json` report.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from bench_report import git_revision, write_json
from locomo_eval import (
    CATEGORY_NAMES,
    CATEGORY_ORDER,
    _all_messages,
    _percent,
    asked_at,
    normalise_evidence,
    parse_range,
)
from numpy.typing import NDArray
from rich.console import Console
from rich.table import Table

from recall import Message, Recall, Settings
from recall.core.context_records import ContextReport
from recall.core.tokens import TokenCounter
from recall.importers import Conversation, read_locomo, slug, store_conversation
from recall.search.base import message_text
from recall.search.embeddings import Embedder, default_embedder

BUDGETS = (2000, 4000, 8000)
#: The method rows: recall's context, then the plain peers.
RECALL = "recall"
NEWEST = "newest turns that fit"
COSINE = "MiniLM int8 cosine"
BM25 = "bm25s"
PEERS = (NEWEST, COSINE, BM25)
#: The peers count their lines in the encoding of recall's default model (gpt-4o).
PEER_ENCODING = "o200k_base"
#: Who asks the questions: a reserved human sender name.
ASKER = "user"
#: The questions are asked this long after the conversation's last turn.
ASKED_AFTER = timedelta(minutes=1)
#: Conversations 0-4 tune, 5-9 are held out.
HALVES = {"0-4": range(0, 5), "5-9": range(5, 10)}


@dataclass(frozen=True)
class Turn:
    """One turn of the conversation as the peers see it."""

    message_id: int
    dia_id: str
    #: `speaker: text [shares an image: caption]`, what the ranking peers score.
    text: str
    #: `[YYYY-MM-DD] ` + text, what the peers put in the context.
    line: str
    #: The line's tokens plus one for its newline.
    tokens: int


@dataclass
class QuestionResult:
    conversation: int
    sample_id: str
    question: str
    category: int
    evidence: list[str]
    #: method -> budget -> share of the evidence in the context.
    scores: dict[str, dict[int, float]] = field(default_factory=dict)
    #: method -> budget -> tokens of the context.
    tokens: dict[str, dict[int, int]] = field(default_factory=dict)
    #: budget -> recall's tokens per section.
    sections: dict[int, dict[str, int]] = field(default_factory=dict)


@dataclass
class ConversationResult:
    conversation: int
    sample_id: str
    agent: str
    turns: int
    #: Import and embedding, then the questions (contexts and peers), in seconds.
    index_seconds: float
    question_seconds: float = 0.0
    #: Questions left out because their evidence names no turn.
    skipped: int = 0
    questions: list[QuestionResult] = field(default_factory=list)


def parse_setting(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` as a key and a value read as an int, else a float, else kept as text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"an agent setting is KEY=VALUE, got {text!r}")
    value: Any = raw
    for kind in (int, float):
        try:
            value = kind(raw)
        except ValueError:
            continue
        break
    return key.strip(), value


def parse_budgets(text: str) -> tuple[int, ...]:
    """`2000,4000,8000` as positive ints."""
    budgets = tuple(int(part) for part in text.split(",") if part.strip())
    if not budgets or min(budgets) < 1:
        raise ValueError(f"budgets are positive token counts, got {text!r}")
    return budgets


def turn_text(message: Message) -> str:
    """`speaker: text`, whitespace collapsed, with a shared image's caption (as recall indexes it)."""
    return " ".join(message_text(message).split())


def make_turns(messages: Sequence[Message], counter: TokenCounter) -> list[Turn]:
    """The conversation's turns, oldest first, each as one line with its cost."""
    turns = []
    for m in messages:
        text = turn_text(m)
        line = f"[{m.created_at.astimezone(UTC):%Y-%m-%d}] {text}"
        turns.append(Turn(m.id, str(m.metadata.get("dia_id")), text, line, counter.count(line) + 1))
    return turns


def pack(order: Iterable[int], turns: Sequence[Turn], budget: int) -> tuple[set[str], int]:
    """The dia_ids of the turns (by index, best first) that fit in `budget` tokens, a turn that
    does not fit skipped, and the tokens they take."""
    packed: set[str] = set()
    used = 0
    for index in order:
        turn = turns[index]
        if used + turn.tokens <= budget:
            packed.add(turn.dia_id)
            used += turn.tokens
    return packed, used


def ranked(scores: NDArray[np.floating[Any]] | Sequence[float]) -> list[int]:
    """Indexes by score, best first; ties newest (highest index) first."""
    values = np.asarray(scores, dtype=np.float64)
    return sorted(range(len(values)), key=lambda i: (-values[i], -i))


def evidence_share(found: set[str], evidence: Sequence[str]) -> float:
    """The share of the evidence turns that were found (partial credit)."""
    return sum(1 for dia_id in evidence if dia_id in found) / len(evidence) if evidence else 1.0


def included_message_ids(report: ContextReport) -> set[int]:
    """The ids of every message the report lists as included, in any section. An item whose
    scores name more messages (a passage of several turns, under a key ending in `ids`) brings
    those too."""
    ids: set[int] = set()
    for item in report.items:
        if not item.included or item.kind != "message":
            continue
        if isinstance(item.id, int):
            ids.add(item.id)
        for key, value in (item.score or {}).items():
            if key.endswith("ids") and isinstance(value, list | tuple):
                ids.update(v for v in value if isinstance(v, int))
    return ids


class Bm25Peer:
    """bm25s over the turns' text; every turn scored for a question."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s  # a dev dependency, needed only with the peers

        self._bm25s = bm25s
        self._retriever = bm25s.BM25()
        self._retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)
        self._size = len(texts)

    def scores(self, question: str) -> NDArray[np.float64]:
        terms = self._bm25s.tokenize([question], stopwords="en", return_ids=False, show_progress=False)[0]
        if not terms:
            return np.zeros(self._size)
        return np.asarray(self._retriever.get_scores(terms), dtype=np.float64)


def evaluate_conversation(
    index: int,
    sample: Mapping[str, Any],
    conversation: Conversation,
    workdir: Path,
    budgets: Sequence[int] = BUDGETS,
    settings: Settings | None = None,
    peers: bool = True,
    agent_settings: Mapping[str, Any] | None = None,
    embedder: Embedder | None = None,
) -> ConversationResult:
    """Import one conversation into a store at `workdir/x.db`, then build the agent's context for
    each of its questions at each budget, and the peers' contexts beside it."""
    sample_id = str(sample.get("sample_id"))
    agent_id = slug(str(sample["conversation"]["speaker_a"]))
    counter = TokenCounter(PEER_ENCODING)
    started = time.perf_counter()
    with Recall(workdir / "x.db", settings or Settings(index_interval=0)) as mem:
        store_conversation(mem, conversation)
        mem.refresh_index()
        world = mem.world(conversation.world_id)
        agent = world.agent(agent_id)
        if agent_settings:
            agent.update(**agent_settings)
        messages = _all_messages(world)
        dia_ids = {m.id: str(m.metadata.get("dia_id")) for m in messages}
        known_ids = set(dia_ids.values())
        last = asked_at(messages)
        if last is None:
            raise ValueError(f"{sample_id} has no turns")
        asked = last + ASKED_AFTER
        turns = make_turns(messages, counter)
        newest = list(reversed(range(len(turns))))
        vectors: NDArray[np.float32] | None = None
        bm25: Bm25Peer | None = None
        if peers:
            embedder = embedder or default_embedder()
            vectors = embedder.embed([t.text for t in turns])
            bm25 = Bm25Peer([t.text for t in turns])
        result = ConversationResult(index, sample_id, agent_id, len(messages), time.perf_counter() - started)

        started = time.perf_counter()
        for qa in sample.get("qa", []):
            evidence = normalise_evidence(qa.get("evidence") or [], known_ids)
            if not evidence:
                result.skipped += 1
                continue
            question = str(qa["question"])
            q = QuestionResult(index, sample_id, question, int(qa["category"]), evidence)
            posted = world.post(ASKER, f"@{agent_id} {question}", at=asked)
            try:
                for budget in budgets:
                    report = agent.context(max_tokens=budget, message=posted.id).report
                    found = {dia_ids[i] for i in included_message_ids(report) if i in dia_ids}
                    q.scores.setdefault(RECALL, {})[budget] = evidence_share(found, evidence)
                    q.tokens.setdefault(RECALL, {})[budget] = report.total_tokens
                    q.sections[budget] = dict(report.sections)
            finally:
                world.delete_message(posted.id)
            if peers:
                assert embedder is not None and vectors is not None and bm25 is not None
                orders = {
                    NEWEST: newest,
                    COSINE: ranked(vectors @ embedder.embed([question])[0]),
                    BM25: ranked(bm25.scores(question)),
                }
                for method, order in orders.items():
                    for budget in budgets:
                        found, used = pack(order, turns, budget)
                        q.scores.setdefault(method, {})[budget] = evidence_share(found, evidence)
                        q.tokens.setdefault(method, {})[budget] = used
            result.questions.append(q)
        result.question_seconds = time.perf_counter() - started
    return result


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def summarise(questions: Sequence[QuestionResult], budgets: Sequence[int], methods: Sequence[str]) -> dict[str, Any]:
    """Per budget and method: the mean score overall and per category, and the mean tokens."""
    categories = [c for c in CATEGORY_ORDER if any(q.category == c for q in questions)]
    categories += sorted({q.category for q in questions} - set(categories))
    out: dict[str, Any] = {}
    for budget in budgets:
        per_method: dict[str, Any] = {}
        for method in methods:
            per_category = {}
            for category in categories:
                members = [q.scores[method][budget] for q in questions if q.category == category]
                per_category[str(category)] = {
                    "name": CATEGORY_NAMES.get(category, f"category {category}"),
                    "questions": len(members),
                    "score": round(_mean(members), 4),
                }
            per_method[method] = {
                "overall": round(_mean([q.scores[method][budget] for q in questions]), 4),
                "per_category": per_category,
                "tokens": round(_mean([q.tokens[method][budget] for q in questions]), 1),
            }
        out[str(budget)] = per_method
    return out


def section_tokens(questions: Sequence[QuestionResult], budgets: Sequence[int]) -> dict[str, dict[str, float]]:
    """Per budget, recall's mean tokens per section (a section a context lacks counts 0)."""
    out: dict[str, dict[str, float]] = {}
    for budget in budgets:
        names = list(dict.fromkeys(name for q in questions for name in q.sections[budget]))
        out[str(budget)] = {
            name: round(_mean([q.sections[budget].get(name, 0) for q in questions]), 1) for name in names
        }
    return out


def _question_record(q: QuestionResult) -> dict[str, Any]:
    return {
        "conversation": q.conversation,
        "sample_id": q.sample_id,
        "question": q.question,
        "category": q.category,
        "evidence": q.evidence,
        "scores": {method: {str(b): s for b, s in by_budget.items()} for method, by_budget in q.scores.items()},
        "tokens": {method: {str(b): t for b, t in by_budget.items()} for method, by_budget in q.tokens.items()},
    }


def evaluate(
    path: str | Path,
    conversations: int | range | None = None,
    budgets: Sequence[int] = BUDGETS,
    settings: Settings | None = None,
    peers: bool = True,
    agent_settings: Mapping[str, Any] | None = None,
    per_question: bool = False,
    progress: Console | None = None,
) -> dict[str, Any]:
    """Run the evaluation and return the report (scores are fractions 0..1)."""
    started = time.perf_counter()
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    parsed = read_locomo(path)  # same order as the samples
    indexes = list(range(len(samples)))
    if isinstance(conversations, range):
        indexes = [i for i in conversations if i < len(samples)]
    elif conversations is not None:
        indexes = indexes[:conversations]
    methods = (RECALL, *PEERS) if peers else (RECALL,)
    embedder = default_embedder() if peers else None
    results: list[ConversationResult] = []
    for i in indexes:
        # index_interval=0: no background indexer; refresh_index() embeds everything up front.
        with tempfile.TemporaryDirectory(prefix="context-recall-eval-") as workdir:
            results.append(
                evaluate_conversation(
                    i, samples[i], parsed[i], Path(workdir), budgets, settings, peers, agent_settings, embedder
                )
            )
        if progress is not None:
            done = results[-1]
            progress.print(
                f"{done.sample_id} (agent {done.agent}): {done.turns} turns, {len(done.questions)} questions,"
                f" {time.perf_counter() - started:.0f} s"
            )
    questions = [q for r in results for q in r.questions]
    report: dict[str, Any] = {
        "budgets": list(budgets),
        "methods": list(methods),
        "agent_settings": dict(agent_settings or {}),
        "conversations": [r.conversation for r in results],
        "sample_ids": [r.sample_id for r in results],
        "questions": len(questions),
        "skipped_without_evidence": sum(r.skipped for r in results),
        "results": summarise(questions, budgets, methods),
        "recall_sections": section_tokens(questions, budgets),
    }
    chosen = {r.conversation for r in results}
    if all(chosen & set(half) for half in HALVES.values()):
        report["halves"] = {
            name: summarise([q for q in questions if q.conversation in half], budgets, methods)
            for name, half in HALVES.items()
        }
    report.update(
        seconds=round(time.perf_counter() - started, 1),
        index_seconds=round(sum(r.index_seconds for r in results), 1),
        question_seconds=round(sum(r.question_seconds for r in results), 1),
        git_revision=git_revision(),
    )
    if per_question:
        report["per_question"] = [_question_record(q) for q in questions]
    return report


def _category_columns(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(category number, header) for every category in CATEGORY_ORDER, with its question count."""
    first = next(iter(report["results"].values()))
    counts = next(iter(first.values()))["per_category"]
    return [
        (str(c), f"{CATEGORY_NAMES[c]} ({counts[str(c)]['questions'] if str(c) in counts else 0})")
        for c in CATEGORY_ORDER
    ]


def _score_table(title: str, by_method: Mapping[str, Any], columns: Sequence[tuple[str, str]], total: int) -> Table:
    table = Table(title=title)
    table.add_column("method", no_wrap=True)
    table.add_column(f"all ({total})", justify="right")
    for _, header in columns:
        table.add_column(header, justify="right")
    table.add_column("tokens", justify="right")
    for method, row in by_method.items():
        per_category = row["per_category"]
        cells = [_percent(per_category[c]["score"]) if c in per_category else "-" for c, _ in columns]
        table.add_row(method, _percent(row["overall"]), *cells, f"{row['tokens']:.0f}")
    return table


def print_report(report: Mapping[str, Any], console: Console) -> None:
    settings = report["agent_settings"]
    tuned = f", agent settings {', '.join(f'{k}={v}' for k, v in settings.items())}" if settings else ""
    columns = _category_columns(report)
    for budget, by_method in report["results"].items():
        title = f"LoCoMo evidence in context, budget {budget} tokens (%, partial credit){tuned}"
        console.print(_score_table(title, by_method, columns, report["questions"]))
    for half, results in report.get("halves", {}).items():
        table = Table(title=f"Conversations {half}: evidence in context, all categories (%)")
        table.add_column("method")
        for budget in results:
            table.add_column(f"B={budget}", justify="right")
        for method in report["methods"]:
            table.add_row(method, *(_percent(results[b][method]["overall"]) for b in results))
        console.print(table)
    sections = report["recall_sections"]
    names = list(dict.fromkeys(name for by_name in sections.values() for name in by_name))
    table = Table(title="recall's context: mean tokens per section")
    table.add_column("section")
    for budget in sections:
        table.add_column(f"B={budget}", justify="right")
    for name in names:
        table.add_row(name, *(f"{sections[b].get(name, 0.0):.0f}" for b in sections))
    console.print(table)
    console.print(
        f"{len(report['conversations'])} conversations ({', '.join(report['sample_ids'])}),"
        f" {report['questions']} questions ({report['skipped_without_evidence']} without evidence left out);"
        f" {report['seconds']:.1f} s ({report['index_seconds']:.1f} s importing and embedding,"
        f" {report['question_seconds']:.1f} s on the questions); revision {report['git_revision']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("locomo_json", type=Path, help="path of locomo10.json")
    parser.add_argument("--conversations", type=int, default=None, help="evaluate only the first N conversations")
    parser.add_argument("--range", default=None, help="evaluate conversations A to B (0-based, inclusive), e.g. 5-9")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="token budgets, e.g. 2000,4000,8000")
    parser.add_argument(
        "--peers", action=argparse.BooleanOptionalAction, default=True, help="also run the plain peers (default on)"
    )
    parser.add_argument(
        "--agent-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an agent setting (Agent.update) applied before the questions; repeatable",
    )
    parser.add_argument("--json", type=Path, default=None, dest="json_out", help="also write the report here")
    parser.add_argument("--json-questions", action="store_true", help="put each question's scores in the JSON")
    args = parser.parse_args(argv)
    if args.conversations is not None and args.conversations < 1:
        parser.error("--conversations must be at least 1")
    try:
        budgets = parse_budgets(args.budgets)
        agent_settings = dict(parse_setting(text) for text in args.agent_setting)
    except ValueError as exc:
        parser.error(str(exc))
    chosen: int | range | None = args.conversations
    if args.range is not None:
        chosen = parse_range(args.range)
    report = evaluate(
        args.locomo_json,
        chosen,
        budgets,
        peers=args.peers,
        agent_settings=agent_settings,
        per_question=args.json_questions,
        progress=Console(stderr=True),
    )
    console = Console()
    if not console.is_terminal:  # a file or a pipe: wide enough for the tables' seven columns
        console = Console(width=140)
    print_report(report, console)
    if args.json_out is not None:
        write_json(args.json_out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Context recall on LoCoMo and BEAM: does the evidence a question needs land in the agent's context?

Usage:
    .venv/bin/python bench/context_recall_eval.py DATASET_JSON [--dataset locomo|beam] [--range 5-9]
        [--conversations N] [--budgets 2000,4000,8000] [--no-peers] [--agent-setting KEY=VALUE ...]
        [--json OUT [--json-questions]]

DATASET_JSON is LoCoMo's `locomo10.json` (samples with `conversation` and `qa`) or BEAM's
`beam_128k.json` (conversations with `turns` and `questions`, see bench/beam_data.py); which one
is read from the file unless `--dataset` says. `--range A-B` picks conversations by their 0-based
place in the file: for BEAM, index 0 is conversation "1".

Settings are tuned on one half and checked on the other, to see that what was tuned carries over:
LoCoMo tunes on conversations 0-4 (`--range 0-4`) and holds out 5-9; BEAM tunes on conversations
"1"-"10" (`--range 0-9`) and holds out "11"-"20" (`--range 10-19`). Compare agent settings with
`--agent-setting`, e.g. `--agent-setting recalled_max_tokens=0` (no recalled past) against the
defaults. Budgets default to 2000,4000,8000 for LoCoMo and 2000,4000,8000,16000 for BEAM (its
summarization questions cite up to 70 messages).

bench/locomo_eval.py asks whether recall's *search* ranks a question's evidence turns high; this
script asks what an agent is finally *given*: the context recall builds for its next model call
within a token budget. LoCoMo (Maharana et al., ACL 2024, arXiv:2402.17753) is ten long
two-person conversations whose questions name the turns (dia_ids like `D3:7`) holding the answer;
BEAM (Tavakoli et al., arXiv 2510.27246) is twenty user-assistant conversations of ~128K tokens
whose assistant turns are long model output, with questions for nine memory abilities naming
their evidence messages.

For each conversation, in a fresh temporary store:

1. the conversation is imported with its real timestamps and every turn is embedded
   (`refresh_index`). LoCoMo: `recall.importers.read_locomo`, both speakers agents that hear
   everything; the agent is the first speaker (`speaker_a`), the asker a person (`user`). BEAM:
   the user is a human `maria`, the assistant an agent `assistant` that hears everything (see
   bench/beam_data.py), who is the agent; `maria` asks;
2. for each question with evidence (1,982 of LoCoMo's 1,986; BEAM's 355), the asker posts
   `@<agent> <question>` one minute after the last turn; for each budget B the agent's context is
   built for that message (`Agent.context(max_tokens=B, message=...)`, timed: the build time),
   and its score is the share of the question's evidence turns among the messages the report
   lists as included (any section: history, incoming, the recalled past), an excerpt counted as
   below. The context's tokens (`report.total_tokens`, everything a model would be sent) and its
   tokens per section are recorded. The question is then deleted, so no question sees another;
3. plain peers get the same question and budget, each packing whole turns, one line each
   (`[YYYY-MM-DD] speaker: text`, with ` [shares an image: caption]` for a shared image), best
   first into B o200k tokens (a line costs its tokens plus one for the newline), skipping a turn
   that does not fit and going on with the next (bench/context_peers.py):
   - "newest turns that fit": newest first (what a plain chat history keeps);
   - "MiniLM int8 cosine": by cosine between the question and the turn, with recall's own
     embedding model (all-MiniLM-L6-v2 int8, which reads a text's first 256 word pieces);
   - "bm25s": by the `bm25s` package's BM25 over the turns (English stop words removed);
   - "MiniLM + stemmed bm25s, RRF": reciprocal-rank fusion (k=60) of the cosine ranking and a
     bm25s ranking whose words are stemmed (English Snowball, PyStemmer) and which holds only
     the turns sharing a word with the question;
   turns that tie (BM25's zero scores, for one) go newest first.

Excerpts. recall may show a long message as an excerpt (its report item has
`score["excerpt"]`): the sentences around its match, joined by single spaces, stored text
escaped. An excerpted evidence message counts only if the excerpt holds the part the question
rests on, decided so: the message is split into sentences (`recall.core.excerpts.sentences`);
its key sentence is the one whose MiniLM vector is nearest (cosine) the question's; the message
counts if that sentence, escaped as recall escapes stored text (`html.escape(quote=False)`) and
whitespace collapsed, is found in the context's text (all its messages' contents). A message
shown whole counts. The peers show whole turns only, so the rule never takes from them. Beside
each recall score the table prints "recall (whole messages only)": the score with excerpts
counting nothing.

Scores are fractions (partial credit), averaged over all questions and per category (LoCoMo's
categories, BEAM's abilities), for each budget; tokens are means per question; the build times
are recall's p50 and p95 per budget (the budgets are built in order for each question, and the
first build also embeds the question, whose vector recall keeps for the next ones: on LoCoMo that
adds ~35 ms to the first budget's times). When the run spans both halves, each half is
summarised too.

The data is read where it lies (LoCoMo CC BY-NC 4.0; BEAM for evaluation only); nothing of it
is copied into the repository, and nothing is written at run time except the `--json` report.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench_report import git_revision, percentiles, write_json
from context_datasets import (  # noqa: F401 - ASKER and HALVES kept readable here
    ASKER,
    BEAM_BUDGETS,
    BUDGETS,
    DATASETS,
    HALVES,
    LOCOMO,
    Dataset,
    detect_dataset,
)
from context_peers import (  # noqa: F401 - the tests read Turn, ranked and the peers' names from here
    BM25,
    COSINE,
    NEWEST,
    PEER_ENCODING,
    PEERS,
    RRF,
    Peers,
    Turn,
    make_turns,
    pack,
    ranked,
)
from context_scoring import KeySentences, evidence_share, recall_found
from locomo_eval import _all_messages, _percent, asked_at, parse_range
from rich.console import Console
from rich.table import Table

from recall import Recall, Settings
from recall.core.tokens import TokenCounter
from recall.importers import Conversation, store_conversation
from recall.search.embeddings import Embedder, default_embedder

#: The method rows: recall's context, then the plain peers.
RECALL = "recall"
#: recall's score with excerpted evidence counting nothing (a row of the tables, not a method).
RECALL_WHOLE = "recall (whole messages only)"
#: The questions are asked this long after the conversation's last turn.
ASKED_AFTER = timedelta(minutes=1)


@dataclass
class QuestionResult:
    conversation: int
    sample_id: str
    question: str
    category: int | str
    evidence: list[str]
    #: method -> budget -> share of the evidence in the context.
    scores: dict[str, dict[int, float]] = field(default_factory=dict)
    #: method -> budget -> tokens of the context.
    tokens: dict[str, dict[int, int]] = field(default_factory=dict)
    #: budget -> recall's tokens per section.
    sections: dict[int, dict[str, int]] = field(default_factory=dict)
    #: budget -> recall's share counting evidence shown whole only (excerpts count 0).
    whole: dict[int, float] = field(default_factory=dict)
    #: budget -> milliseconds recall took to build the context.
    build_ms: dict[int, float] = field(default_factory=dict)


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


def evaluate_conversation(
    index: int,
    sample: Mapping[str, Any],
    conversation: Conversation,
    workdir: Path,
    budgets: Sequence[int] | None = None,
    settings: Settings | None = None,
    peers: bool = True,
    agent_settings: Mapping[str, Any] | None = None,
    embedder: Embedder | None = None,
    dataset: Dataset | None = None,
) -> ConversationResult:
    """Import one conversation into a store at `workdir/x.db`, then build the agent's context for
    each of its questions at each budget, and the peers' contexts beside it."""
    dataset = dataset or detect_dataset([sample])
    budgets = budgets or dataset.budgets
    sample_id = dataset.sample_id(sample)
    agent_id = dataset.agent(sample)
    counter = TokenCounter(PEER_ENCODING)
    started = time.perf_counter()
    with Recall(workdir / "x.db", settings or dataset.settings([sample])) as mem:
        store_conversation(mem, conversation)
        mem.refresh_index()
        world = mem.world(conversation.world_id)
        agent = world.agent(agent_id)
        if agent_settings:
            agent.update(**agent_settings)
        messages = _all_messages(world)
        turn_ids = {m.id: str(m.metadata.get(dataset.turn_key)) for m in messages}
        known_ids = set(turn_ids.values())
        last = asked_at(messages)
        if last is None:
            raise ValueError(f"{sample_id} has no turns")
        asked = last + ASKED_AFTER
        turns = make_turns(messages, counter, dataset.turn_key)
        if peers:
            embedder = embedder or default_embedder()
        keys = KeySentences({m.id: m for m in messages}, embedder)
        ranking = Peers(turns, keys.embedder) if peers else None
        result = ConversationResult(index, sample_id, agent_id, len(messages), time.perf_counter() - started)

        started = time.perf_counter()
        for question, category, evidence in dataset.questions(sample, known_ids):
            if not evidence:
                result.skipped += 1
                continue
            q = QuestionResult(index, sample_id, question, category, evidence)
            posted = world.post(dataset.asker, f"@{agent_id} {question}", at=asked)
            try:
                for budget in budgets:
                    began = time.perf_counter()
                    ctx = agent.context(max_tokens=budget, message=posted.id)
                    q.build_ms[budget] = (time.perf_counter() - began) * 1000
                    found, whole = recall_found(ctx, turn_ids, evidence, keys, question)
                    q.scores.setdefault(RECALL, {})[budget] = evidence_share(found, evidence)
                    q.whole[budget] = evidence_share(whole, evidence)
                    q.tokens.setdefault(RECALL, {})[budget] = ctx.report.total_tokens
                    q.sections[budget] = dict(ctx.report.sections)
            finally:
                world.delete_message(posted.id)
            if ranking is not None:
                for method, order in ranking.orders(question, keys.vector(question)).items():
                    for budget in budgets:
                        packed, used = pack(order, turns, budget)
                        q.scores.setdefault(method, {})[budget] = evidence_share(packed, evidence)
                        q.tokens.setdefault(method, {})[budget] = used
            result.questions.append(q)
        result.question_seconds = time.perf_counter() - started
    return result


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _score(q: QuestionResult, method: str, budget: int) -> float:
    return q.whole[budget] if method == RECALL_WHOLE else q.scores[method][budget]


def summarise(
    questions: Sequence[QuestionResult], budgets: Sequence[int], methods: Sequence[str], dataset: Dataset = LOCOMO
) -> dict[str, Any]:
    """Per budget and method: the mean score overall and per category, and the mean tokens
    (`RECALL_WHOLE` as a method: recall's whole-messages-only score, without tokens)."""
    present = {q.category for q in questions}
    categories = [c for c in dataset.categories if c in present]
    categories += sorted(present - set(categories), key=str)
    out: dict[str, Any] = {}
    for budget in budgets:
        per_method: dict[str, Any] = {}
        for method in methods:
            per_category = {}
            for category in categories:
                members = [_score(q, method, budget) for q in questions if q.category == category]
                per_category[str(category)] = {
                    "name": dataset.categories.get(category, f"category {category}"),
                    "questions": len(members),
                    "score": round(_mean(members), 4),
                }
            row: dict[str, Any] = {
                "overall": round(_mean([_score(q, method, budget) for q in questions]), 4),
                "per_category": per_category,
            }
            if method != RECALL_WHOLE:
                row["tokens"] = round(_mean([q.tokens[method][budget] for q in questions]), 1)
            per_method[method] = row
        out[str(budget)] = per_method
    return out


def _whole_only(
    questions: Sequence[QuestionResult], budgets: Sequence[int], dataset: Dataset
) -> dict[str, dict[str, Any]]:
    """recall's whole-messages-only rows, per budget."""
    summary = summarise(questions, budgets, (RECALL_WHOLE,), dataset)
    return {budget: rows[RECALL_WHOLE] for budget, rows in summary.items()}


def section_tokens(questions: Sequence[QuestionResult], budgets: Sequence[int]) -> dict[str, dict[str, float]]:
    """Per budget, recall's mean tokens per section (a section a context lacks counts 0)."""
    out: dict[str, dict[str, float]] = {}
    for budget in budgets:
        names = list(dict.fromkeys(name for q in questions for name in q.sections[budget]))
        out[str(budget)] = {
            name: round(_mean([q.sections[budget].get(name, 0) for q in questions]), 1) for name in names
        }
    return out


def build_times(questions: Sequence[QuestionResult], budgets: Sequence[int]) -> dict[str, dict[str, float]]:
    """Per budget, the percentiles of recall's context build in ms (p50, p95, p99, mean, max, n)."""
    return {
        str(b): {k: round(v, 2) for k, v in percentiles([q.build_ms[b] for q in questions]).items()} for b in budgets
    }


def _question_record(q: QuestionResult) -> dict[str, Any]:
    return {
        "conversation": q.conversation,
        "sample_id": q.sample_id,
        "question": q.question,
        "category": q.category,
        "evidence": q.evidence,
        "scores": {method: {str(b): s for b, s in by_budget.items()} for method, by_budget in q.scores.items()},
        "tokens": {method: {str(b): t for b, t in by_budget.items()} for method, by_budget in q.tokens.items()},
        "recall_whole_messages_only": {str(b): s for b, s in q.whole.items()},
        "build_ms": {str(b): round(ms, 2) for b, ms in q.build_ms.items()},
    }


def evaluate(
    path: str | Path,
    conversations: int | range | None = None,
    budgets: Sequence[int] | None = None,
    settings: Settings | None = None,
    peers: bool = True,
    agent_settings: Mapping[str, Any] | None = None,
    per_question: bool = False,
    progress: Console | None = None,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Run the evaluation and return the report (scores are fractions 0..1). `dataset` is
    `locomo` or `beam`; by default the file says which."""
    started = time.perf_counter()
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    kind = DATASETS[dataset] if dataset is not None else detect_dataset(samples)
    budgets = budgets or kind.budgets
    parsed = kind.read(Path(path), samples)  # same order as the samples
    indexes = list(range(len(samples)))
    if isinstance(conversations, range):
        indexes = [i for i in conversations if i < len(samples)]
    elif conversations is not None:
        indexes = indexes[:conversations]
    settings = settings or kind.settings(samples)
    methods = (RECALL, *PEERS) if peers else (RECALL,)
    embedder = default_embedder() if peers else None
    results: list[ConversationResult] = []
    for i in indexes:
        # index_interval=0: no background indexer; refresh_index() embeds everything up front.
        with tempfile.TemporaryDirectory(prefix="context-recall-eval-") as workdir:
            results.append(
                evaluate_conversation(
                    i, samples[i], parsed[i], Path(workdir), budgets, settings, peers, agent_settings, embedder, kind
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
        "dataset": kind.name,
        "budgets": list(budgets),
        "methods": list(methods),
        "agent_settings": dict(agent_settings or {}),
        "conversations": [r.conversation for r in results],
        "sample_ids": [r.sample_id for r in results],
        "questions": len(questions),
        "skipped_without_evidence": sum(r.skipped for r in results),
        "results": summarise(questions, budgets, methods, kind),
        "recall_whole_messages_only": {"results": _whole_only(questions, budgets, kind)},
        "recall_sections": section_tokens(questions, budgets),
        "recall_build_ms": build_times(questions, budgets),
    }
    halves = {name: [q for q in questions if kind.half(q.conversation, q.sample_id) == name] for name in kind.halves}
    if all(halves.values()):
        report["halves"] = {name: summarise(members, budgets, methods, kind) for name, members in halves.items()}
        report["recall_whole_messages_only"]["halves"] = {
            name: _whole_only(members, budgets, kind) for name, members in halves.items()
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


def _category_columns(report: Mapping[str, Any], dataset: Dataset) -> list[tuple[str, str]]:
    """(category key, header) for every category of the dataset, with its question count."""
    first = next(iter(report["results"].values()))
    counts = next(iter(first.values()))["per_category"]
    return [
        (str(c), f"{header} ({counts[str(c)]['questions'] if str(c) in counts else 0})")
        for c, header in dataset.headers.items()
    ]


def _rows(by_method: Mapping[str, Any], whole: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The table's rows: recall, its whole-messages-only figure, then the peers."""
    rows = list(by_method.items())
    return [*rows[:1], (RECALL_WHOLE, whole), *rows[1:]]


def _score_table(
    title: str, rows: Sequence[tuple[str, Mapping[str, Any]]], columns: Sequence[tuple[str, str]], total: int
) -> Table:
    table = Table(title=title)
    table.add_column("method", no_wrap=True)
    table.add_column(f"all ({total})", justify="right")
    for _, header in columns:
        table.add_column(header, justify="right")
    table.add_column("tokens", justify="right")
    for method, row in rows:
        per_category = row["per_category"]
        cells = [_percent(per_category[c]["score"]) if c in per_category else "-" for c, _ in columns]
        tokens = f"{row['tokens']:.0f}" if "tokens" in row else ""
        table.add_row(method, _percent(row["overall"]), *cells, tokens, style="dim" if method == RECALL_WHOLE else None)
    return table


def _budget_table(title: str, budgets: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]], first: str) -> Table:
    table = Table(title=title)
    table.add_column(first)
    for budget in budgets:
        table.add_column(f"B={budget}", justify="right")
    for name, cells in rows:
        table.add_row(name, *cells)
    return table


def print_report(report: Mapping[str, Any], console: Console) -> None:
    dataset = DATASETS[report.get("dataset", LOCOMO.name)]
    settings = report["agent_settings"]
    tuned = f", agent settings {', '.join(f'{k}={v}' for k, v in settings.items())}" if settings else ""
    columns = _category_columns(report, dataset)
    whole = report["recall_whole_messages_only"]
    for budget, by_method in report["results"].items():
        title = f"{dataset.title} evidence in context, budget {budget} tokens (%, partial credit){tuned}"
        rows = _rows(by_method, whole["results"][budget])
        console.print(_score_table(title, rows, columns, report["questions"]))
    if dataset.headers != dataset.categories:
        console.print("columns: " + ", ".join(f"{h} {c}" for c, h in dataset.headers.items()))
    for half, results in report.get("halves", {}).items():
        overall = {m: [_percent(results[b][m]["overall"]) for b in results] for m in report["methods"]}
        overall[RECALL_WHOLE] = [_percent(row["overall"]) for row in whole["halves"][half].values()]
        order = [RECALL, RECALL_WHOLE, *(m for m in report["methods"] if m != RECALL)]
        title = f"Conversations {half}: evidence in context, all categories (%)"
        console.print(_budget_table(title, results, [(m, overall[m]) for m in order], "method"))
    sections = report["recall_sections"]
    names = list(dict.fromkeys(name for by_name in sections.values() for name in by_name))
    per_section = [(name, [f"{sections[b].get(name, 0.0):.0f}" for b in sections]) for name in names]
    console.print(_budget_table("recall's context: mean tokens per section", sections, per_section, "section"))
    build = report["recall_build_ms"]
    per_percentile = [(p, [f"{build[b][p]:.1f}" if build[b] else "-" for b in build]) for p in ("p50", "p95")]
    console.print(_budget_table("recall's context build time (ms)", build, per_percentile, "percentile"))
    console.print(
        f"{len(report['conversations'])} conversations ({', '.join(report['sample_ids'])}),"
        f" {report['questions']} questions ({report['skipped_without_evidence']} without evidence left out);"
        f" {report['seconds']:.1f} s ({report['index_seconds']:.1f} s importing and embedding,"
        f" {report['question_seconds']:.1f} s on the questions); revision {report['git_revision']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("dataset_json", type=Path, help="path of locomo10.json or beam_128k.json")
    parser.add_argument(
        "--dataset", choices=tuple(DATASETS), default=None, help="the file's dataset (default: read from the file)"
    )
    parser.add_argument("--conversations", type=int, default=None, help="evaluate only the first N conversations")
    parser.add_argument(
        "--range",
        default=None,
        help="evaluate conversations A to B (0-based place in the file, inclusive; BEAM's 0 is conversation 1)",
    )
    parser.add_argument(
        "--budgets",
        default=None,
        help=f"token budgets (default {','.join(map(str, BUDGETS))}; BEAM {','.join(map(str, BEAM_BUDGETS))})",
    )
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
        budgets = parse_budgets(args.budgets) if args.budgets is not None else None
        agent_settings = dict(parse_setting(text) for text in args.agent_setting)
    except ValueError as exc:
        parser.error(str(exc))
    chosen: int | range | None = args.conversations
    if args.range is not None:
        chosen = parse_range(args.range)
    report = evaluate(
        args.dataset_json,
        chosen,
        budgets,
        peers=args.peers,
        agent_settings=agent_settings,
        per_question=args.json_questions,
        progress=Console(stderr=True),
        dataset=args.dataset,
    )
    console = Console()
    if not console.is_terminal:  # a file or a pipe: wide enough for the tables' columns
        console = Console(width=160)
    print_report(report, console)
    if args.json_out is not None:
        write_json(args.json_out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

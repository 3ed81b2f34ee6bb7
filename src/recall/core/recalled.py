"""The recalled past (spec §3): passages of an agent's own memory that a search ranked as
relevant to what it is answering, packed into the budget by value together with the older
history of the chat (the pool: everything but the recent window).

Pure: the app layer searches (only among messages the agent heard) and hands over the ranked
candidates with their stored messages, and the context builder the history beyond its recent
window, each message scored by the same search and by how recent it is; this module takes the
pool best first within a number of tokens, says why the rest stay out, and renders the
recalled passages as one system message:

- candidates are taken best first, history and recalled passages alike; a history message is
  shown in the history (chat order), whole or, when long, as an excerpt grown back to whole
  where room is left; a passage the history or the incoming part already shows is left out
  (`in-history`), one scoring below `cutoff` × the best score is left out
  (`below-cutoff`, the score-adaptive stop: a clear answer costs few tokens, a vague question
  goes broad), one that no longer fits is left out (`outranked` when better-ranked ones took
  the room, `over-budget` when it never fitted), and past `limit` passages
  the rest are `over-depth`;
- a long message becomes an excerpt (the sentences around its match, marked `(excerpt)`), so
  one long reply does not crowd out three short answers;
- a short passage brings the turn it answers (its parent, else the turn before it in its chat)
  so it can be understood;
- what goes in is rendered oldest first, under one `[date]` line per day and chat, each turn as
  `speaker: text`, stored text escaped.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from recall.core.context_parts import ContextMessage, ReportItem
from recall.core.excerpts import Analysis
from recall.core.models import Message
from recall.core.recalled_lines import HEADER, Lines, Turn, render
from recall.core.tokens import TokenCounter

SECTION = "recalled"
#: The fewest tokens a rendered turn takes (`speaker: x` and its line break).
MIN_LINE_TOKENS = 4
#: Packing reads the passages of about one candidate per this many tokens of room left (a
#: passage with its neighbour and date line takes ~30-45 on LoCoMo and the context bench), or
#: per the tokens the lines packed so far took on average when they took more (an excerpt of a
#: long reply ~180: reading 400 candidates for a 16,000-token room would read five times what
#: fits), READ_AHEAD_MIN to READ_AHEAD_MAX at a time.
READ_AHEAD_TOKENS = 40
READ_AHEAD_MIN = 16
READ_AHEAD_MAX = 128
#: After this many candidates in a row found no room, the budget counts as full: the rest are
#: `over-budget` unread, not each read and measured against the last few tokens.
FULL_AFTER_MISSES = 4
#: A candidate at least this fraction as similar (cosine) as the most similar one is kept
#: whatever its score (the cutoff must not drop a match by meaning alone).
MEANING_KEPT = 0.9
#: ... and at least this similar (MiniLM: a paraphrase ~0.45-0.8, unrelated chat ~0.1-0.3).
MEANING_FLOOR = 0.4


@dataclass(frozen=True)
class RecallSettings:
    """How much recalled past a context may hold (per agent; `Settings` has the defaults)."""

    #: Most tokens of recalled past (0: none); the budget left may be smaller.
    max_tokens: int
    #: Candidates scoring below this fraction of the best candidate's score are left out.
    cutoff: float
    #: Most passages (0: no limit besides tokens).
    limit: int = 0
    #: Least cosine similarity to the query a passage needs (0: any; seed 001 used 0.8).
    min_similarity: float = 0.0
    #: A message longer than this many tokens is recalled as an excerpt of about this size.
    excerpt_tokens: int = 80
    #: A passage shorter than this many tokens brings the turn it answers.
    neighbour_tokens: int = 12


class RecallCandidate(NamedTuple):
    """A message of the agent's memory as the search ranked it, before it is read. `rank` is
    its 1-based place; the scores are the search's: `score` the fused one (0..1), `keyword` the
    normalised BM25 score, `similarity` the cosine to the query, `time` how near it lies to a
    time the query names (each None where that signal had nothing to say)."""

    id: int
    sender: str
    chat_id: str | None
    rank: int
    score: float
    keyword: float | None = None
    similarity: float | None = None
    time: float | None = None
    #: What of it the search matched by meaning: 0 the message as a whole, n its n-th passage
    #: (`passages.passage_span`), where its excerpt is then taken.
    part: int = 0

    def scores(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rank": self.rank, "score": round(self.score, 6)}
        if self.keyword is not None:
            out["keyword"] = round(self.keyword, 4)
        if self.similarity is not None:
            out["similarity"] = round(self.similarity, 4)
        if self.time is not None:
            out["time"] = round(self.time, 4)
        if self.part:
            out["part"] = self.part
        return out


class Passage(NamedTuple):
    """What a candidate shows: its stored message, and the turn it answers (its parent, else
    the one before it in its chat) where the agent heard it."""

    message: Message
    before: Message | None = None


def _no_passages(candidates: Sequence[RecallCandidate]) -> Mapping[int, Passage]:
    return {}


@dataclass(frozen=True)
class RecallRequest:
    candidates: Sequence[RecallCandidate]
    settings: RecallSettings
    #: Reads the passages of some candidates, by id. Packing asks for them as it reaches them,
    #: a budget's worth at a time: what is below the cutoff or past a full budget is never read.
    passages: Callable[[Sequence[RecallCandidate]], Mapping[int, Passage]] = _no_passages
    #: The query's words as `words` normalises them, to find a long message's matching part.
    terms: Collection[str] = frozenset()
    words: Callable[[str], list[str]] = field(default=lambda text: text.lower().split())
    #: Notes from gathering the candidates (e.g. the search found nothing to match against).
    notes: tuple[str, ...] = ()


class HistoryCandidate(NamedTuple):
    """A message of the chat's history beyond the recent window, competing for the budget with
    the recalled past: `whole` as the history shows it; `cut` makes its excerpt (None: short
    enough, or not to be cut, such as a tool call); its score in the pool (`relevance`, the
    search's, where the search ranked it, plus `recency`)."""

    whole: ContextMessage
    sender: str
    chat_id: str | None
    score: float
    relevance: float | None
    recency: float
    cut: Callable[[], ContextMessage] | None = None

    def scores(self, rank: int) -> dict[str, Any]:
        out: dict[str, Any] = {"rank": rank, "score": round(self.score, 6), "recency": round(self.recency, 4)}
        if self.relevance is not None:
            out["relevance"] = round(self.relevance, 6)
        return out


@dataclass
class Recalled:
    """The packed block (None: nothing went in), the history messages the pool chose (whole or
    excerpted, in pick order), and a report item per candidate."""

    message: ContextMessage | None
    items: list[ReportItem]
    notes: list[str]
    history: list[ContextMessage] = field(default_factory=list)


class _Passages:
    """The candidates' passages, read as packing reaches them: each read takes the next
    candidates packing may still take, about one per READ_AHEAD_TOKENS of room left."""

    def __init__(self, req: RecallRequest, takeable: Callable[[RecallCandidate], bool]) -> None:
        self._candidates = req.candidates
        self._read = req.passages
        self._takeable = takeable
        self._found: dict[int, Passage | None] = {}  # None: deleted since it was ranked

    def at(self, at: int, room_left: int, per_line: int = READ_AHEAD_TOKENS) -> Passage | None:
        """The passage of the candidate at `at` (None: it is gone); `per_line`: the tokens a
        packed line has taken on average so far."""
        wanted = self._candidates[at].id
        if wanted not in self._found:
            ahead = (c for c in self._candidates[at:] if c.id not in self._found and self._takeable(c))
            many = room_left // max(READ_AHEAD_TOKENS, per_line)
            batch = list(itertools.islice(ahead, min(READ_AHEAD_MAX, max(READ_AHEAD_MIN, many))))
            found = self._read(batch)
            self._found.update((c.id, found.get(c.id)) for c in batch)
        return self._found[wanted]


def _pool_order(req: RecallRequest, history: Sequence[HistoryCandidate]) -> list[tuple[bool, int]]:
    """The pool best first: (is a history message, its index), by score; ties keep the
    search's order, history first and its newest first (when the search ranked none of them,
    spare room goes to the newest history)."""
    entries = [(-c.score, 1, at) for at, c in enumerate(req.candidates)]
    entries += [(-h.score, 0, -at) for at, h in enumerate(history)]
    entries.sort()
    return [(kind == 0, abs(at)) for _, kind, at in entries]


def pack_recalled(
    req: RecallRequest,
    room: int,
    shown: Collection[int],
    counter: TokenCounter,
    chat_id: str | None,
    hidden: Mapping[int, str] | None = None,
    newest: int | None = None,
    history: Sequence[HistoryCandidate] = (),
    analysis: Analysis | None = None,
) -> Recalled:
    """Pack the pool into at most `room` tokens (the recalled block's whole system message
    counted; the recalled past itself at most `max_tokens`): the candidates and the `history`
    beyond the recent window, best first. A candidate is left out when `shown` (the ids the
    recent window, the incoming part and `history` show) holds it, when the context filter left
    it out of the recent conversation (`hidden`: id → its reason, e.g. `not-addressed`: the
    recalled past reaches beyond the recent conversation, it does not undo the filter inside
    it), and, when the context answers a given message, when it is newer (`after-trigger`)."""
    hidden = hidden or {}
    s = req.settings
    items: list[ReportItem] = []
    history_items: list[ReportItem] = []
    notes = list(req.notes)
    cap = min(room, s.max_tokens)
    # The best of what could be recalled: not the incoming message, which matches its own words
    # best of all and would set the bar for everything else, nor what the context shows anyway.
    best = max((c.score for c in req.candidates if c.id not in shown), default=0.0)
    floor = s.cutoff * best
    # A passage that matches by meaning alone (no word in common) scores low in a ranking that
    # weighs words: one nearly as similar as the most similar candidate is never cut by score.
    near = max(MEANING_FLOOR, MEANING_KEPT * max((c.similarity or 0.0 for c in req.candidates), default=0.0))
    # The block's own overhead and header (paid with its first passage), then a [date] line per
    # new group; each line with its line break.
    overhead = counter.message("system", "") + counter.count(f"{HEADER}\n")
    used = recalled_used = 0
    groups: set[str] = set()
    turns: list[Turn] = []
    taken: set[int] = set()
    picked: list[tuple[RecallCandidate, list[Turn]]] = []
    chosen: list[tuple[HistoryCandidate, ContextMessage, dict[str, Any]]] = []
    render_lines = Lines(counter, chat_id, req.terms, req.words, s.excerpt_tokens, analysis)
    in_pool = {h.whole.source_id for h in history}
    parts = {c.id: c.part for c in req.candidates if c.part}

    def out(c: RecallCandidate, reason: str) -> None:
        items.append(ReportItem("message", c.id, False, SECTION, reason, 0, c.sender, c.chat_id, c.scores()))

    def left_out(c: RecallCandidate) -> str | None:
        """Why a candidate is out before its passage is read, if it is."""
        if c.id in shown or c.id in in_pool:
            return "in-history"
        if c.id in hidden or (newest is not None and c.id > newest):
            return hidden.get(c.id, "after-trigger")
        if s.min_similarity > 0 and (c.similarity or 0.0) < s.min_similarity:
            return "below-cutoff"
        if c.score < floor and (c.similarity or 0.0) < near:
            return "below-cutoff"
        return None

    def no_room() -> str:
        return "outranked" if chosen or picked else "over-budget"

    passages = _Passages(req, lambda n: n.id not in taken and left_out(n) is None)
    misses, full_note = 0, ""
    for place, (is_history, at) in enumerate(_pool_order(req, history), 1):
        if is_history:
            h = history[at]
            rank_scores = h.scores(place)
            message = h.whole
            if h.cut is not None:
                message = h.cut()
                if message is not h.whole:
                    rank_scores["excerpt"] = True
            if misses < FULL_AFTER_MISSES and used + message.tokens <= room:
                used += message.tokens
                misses = 0
                chosen.append((h, message, rank_scores))
            else:
                misses += 1
                rank_scores.pop("excerpt", None)
                source = h.whole.source_id
                section = h.whole.section
                history_items.append(
                    ReportItem("message", source, False, section, no_room(), 0, h.sender, h.chat_id, rank_scores)
                )
            continue
        c = req.candidates[at]
        if c.id in taken:  # already in, as the turn another passage needed
            continue
        reason = left_out(c)
        if reason is not None:
            out(c, reason)
            continue
        if s.limit and len(picked) >= s.limit:
            out(c, "over-depth")
            continue
        left = min(room - used, cap - recalled_used)
        # Out of room: the context's (better-ranked ones took it), or the recalled past's cap.
        why = no_room() if room - used <= cap - recalled_used else "over-budget"
        if left < MIN_LINE_TOKENS or misses >= FULL_AFTER_MISSES:  # full: the rest stay unread
            if misses >= FULL_AFTER_MISSES and not full_note:
                full_note = f"context full: {misses} candidates in a row did not fit, the rest were not read"
            out(c, why)
            continue
        read = passages.at(at, left, recalled_used // len(turns) if turns else READ_AHEAD_TOKENS)
        if read is None:  # deleted since it was ranked
            continue
        lines = [render_lines.turn(read.message, part=c.part)]
        before = read.before
        if (
            before is not None
            and render_lines.shorter_than(lines[0], s.neighbour_tokens)
            and before.id not in shown
            and before.id not in in_pool
            and before.id not in taken
            and before.id not in hidden
        ):
            # Excerpted around its own passage when the search matched one (it may rank lower).
            lines.insert(0, render_lines.turn(before, neighbour_of=c.id, part=parts.get(before.id, 0)))
        cost = 0 if turns else overhead
        new_groups: list[str] = []
        for line in lines:
            cost += line.tokens
            if line.label not in groups and line.label not in new_groups:
                new_groups.append(line.label)
                cost += counter.count(f"{line.label}\n")
        if cost > left:
            out(c, no_room() if cost > room - used else "over-budget")
            misses += 1
            continue
        misses = 0
        used += cost
        recalled_used += cost
        groups.update(new_groups)
        turns.extend(lines)
        for line in lines:
            taken.add(line.message.id)
        picked.append((c, lines))

    history_used = used - recalled_used
    block, included = _block(turns, picked, items, counter, min(cap, room - history_used), chat_id)
    # Room left over shows the chosen history's excerpts whole again, best first.
    left = room - history_used - (block.tokens if block is not None else 0)
    for h, message, scores in chosen:
        grown = h.whole.tokens - message.tokens
        if message is not h.whole and grown <= left:
            left -= grown
            scores.pop("excerpt")
    kept: list[ContextMessage] = []
    for h, message, scores in chosen:
        shown_as = message if scores.get("excerpt") else h.whole
        kept.append(shown_as)
        source, section = h.whole.source_id, h.whole.section
        history_items.append(
            ReportItem("message", source, True, section, None, shown_as.tokens, h.sender, h.chat_id, scores)
        )
    if full_note:
        notes.append(full_note)
    if any(not i.included and i.reason == "below-cutoff" for i in items):
        notes.append(f"recalled past stops below {s.cutoff:g} × the best score ({best:.4f})")
    return Recalled(block, [*included, *items, *history_items], notes, kept)


def _block(
    turns: list[Turn],
    picked: list[tuple[RecallCandidate, list[Turn]]],
    items: list[ReportItem],
    counter: TokenCounter,
    room: int,
    chat_id: str | None,
) -> tuple[ContextMessage | None, list[ReportItem]]:
    """The recalled passages as one system message, and an item for each of their turns. The
    block's count is its lines' (its last without a line break), so it fits; should a line
    begin where that does not hold, it is counted whole, and the weakest passages go (into
    `items`, `over-budget`) while it does not fit."""
    if not turns:
        return None, []
    overhead = counter.message("system", "")
    while True:
        rendered = render(turns)
        content = "\n".join(rendered)
        tokens = overhead + counter.count_lines(rendered)
        if tokens <= room or not picked:
            break
        c, dropped = picked.pop()
        turns = [t for t in turns if t not in dropped]
        items.append(ReportItem("message", c.id, False, SECTION, "over-budget", 0, c.sender, c.chat_id, c.scores()))
        if not turns:
            return None, []
    included: list[ReportItem] = []
    for rank_order, (c, lines) in enumerate(picked, 1):
        for line in lines:
            score: dict[str, Any] = c.scores() if line.neighbour_of is None else {"neighbour_of": line.neighbour_of}
            if line.neighbour_of is not None and line.part:
                score["part"] = line.part  # a neighbour excerpted around the passage that matched
            score["passage"] = rank_order
            if line.excerpt:
                score["excerpt"] = True
            m = line.message
            included.append(ReportItem("message", m.id, True, SECTION, None, line.tokens, m.sender, m.chat_id, score))
    return ContextMessage("system", content, SECTION, tokens), included

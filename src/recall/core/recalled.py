"""The recalled past (spec §3): passages of an agent's own memory that a search ranked as
relevant to what it is answering, packed into what the budget leaves.

Pure: the app layer searches (only among messages the agent heard) and hands over the ranked
candidates with their stored messages; this module decides, within a number of tokens, which go
in and why the others do not, and renders them as one system message:

- candidates are taken best first; one the history or the incoming part already shows is
  left out (`in-history`), one scoring below `cutoff` × the best score is left out
  (`below-cutoff`, the score-adaptive stop: a clear answer costs few tokens, a vague question
  goes broad), one that no longer fits is left out (`over-budget`), and past `limit` passages
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
from datetime import UTC, date
from functools import lru_cache
from typing import Any, NamedTuple

from recall.core.context_records import ContextMessage, ReportItem
from recall.core.escaping import escape
from recall.core.excerpts import excerpt
from recall.core.models import Message, with_caption
from recall.core.tokens import TokenCounter

SECTION = "recalled"
#: The fewest tokens a rendered turn takes (`speaker: x` and its line break).
MIN_LINE_TOKENS = 4
#: The first line of the block (seed 001's wording).
HEADER = "Similar past interactions that may be relevant:"
#: Packing reads the passages of about one candidate per this many tokens of room left (a
#: passage with its neighbour and date line takes ~30-45 on LoCoMo and the context bench), and
#: at least READ_AHEAD_MIN at a time.
READ_AHEAD_TOKENS = 40
READ_AHEAD_MIN = 16
#: After this many candidates in a row found no room, the budget counts as full: the rest are
#: `over-budget` unread, not each read and measured against the last few tokens.
FULL_AFTER_MISSES = 4


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

    def scores(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rank": self.rank, "score": round(self.score, 6)}
        if self.keyword is not None:
            out["keyword"] = round(self.keyword, 4)
        if self.similarity is not None:
            out["similarity"] = round(self.similarity, 4)
        if self.time is not None:
            out["time"] = round(self.time, 4)
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


class _Turn(NamedTuple):
    """One rendered line: a passage or the turn it needs, under its `[date(, chat)]` label;
    its tokens with the line break after it."""

    message: Message
    text: str
    excerpt: bool
    tokens: int
    label: str
    neighbour_of: int | None = None


@dataclass
class Recalled:
    """The packed block (None: nothing went in) and a report item per candidate."""

    message: ContextMessage | None
    items: list[ReportItem]
    notes: list[str]


def _group(message: Message, chat_id: str | None) -> str:
    """The `[date]` line a turn is rendered under (the chat too, when not the context's)."""
    day = message.created_at.astimezone(UTC).date()
    return _label(day, None if message.chat_id == chat_id else (message.chat_id or "(default)"))


@lru_cache(maxsize=4096)
def _label(day: date, other_chat: str | None) -> str:
    label = f"{day:%Y-%m-%d}, {day:%A}"
    if other_chat is not None:
        label += f", chat {escape(other_chat)}"
    return f"[{label}]"


def _line(turn: _Turn) -> str:
    who = f"{turn.message.sender} (excerpt)" if turn.excerpt else turn.message.sender
    return f"{who}: {turn.text}"


def _render(turns: Sequence[_Turn], chat_id: str | None) -> list[str]:
    """The block's lines: a `[date(, chat)]` line once per group, the groups in the order of
    their oldest turn, each group's turns oldest first (the packing counted each label once)."""
    groups: dict[str, list[_Turn]] = {}
    for turn in sorted(turns, key=lambda t: (t.message.created_at, t.message.id)):
        groups.setdefault(turn.label, []).append(turn)
    lines = [HEADER]
    for label, members in groups.items():
        lines.append(label)
        lines.extend(_line(turn) for turn in members)
    return lines


class _Lines:
    """Renders and counts the turns of one packing, each with the line break after it (as
    `TokenCounter.count_lines` adds the block up; each speaker's `name:` counted once)."""

    def __init__(self, req: RecallRequest, counter: TokenCounter, chat_id: str | None) -> None:
        self.req = req
        self.counter = counter
        self.chat_id = chat_id
        self._speakers: dict[str, int] = {}

    def turn(self, message: Message, neighbour_of: int | None = None) -> _Turn:
        # Captions of shared images are part of what was said (as the search indexes them).
        text = with_caption(message.content, message.metadata)
        # Most messages are short: their whole line is counted once, and only a longer one is cut.
        whole = escape(" ".join(text.split()))
        tokens = self.counter.count(f"{message.sender}: {whole}\n")
        label = _group(message, self.chat_id)
        if tokens - self._speaker(message.sender) - 1 <= self.req.settings.excerpt_tokens:
            return _Turn(message, whole, False, tokens, label, neighbour_of)
        cut = excerpt(text, self.req.terms, self.req.words, self.counter, self.req.settings.excerpt_tokens)
        turn = _Turn(message, escape(cut.text), cut.cut, 0, label, neighbour_of)
        return turn._replace(tokens=self.counter.count(f"{_line(turn)}\n"))

    def shorter_than(self, turn: _Turn, tokens: int) -> bool:
        """Whether the turn's line, without its line break, has fewer than `tokens` tokens (its
        count with the break is one more, or the same where the break joins a final `.`)."""
        if turn.tokens != tokens:
            return turn.tokens < tokens
        return self.counter.count(_line(turn)) < tokens

    def _speaker(self, sender: str) -> int:
        found = self._speakers.get(sender)
        if found is None:
            found = self._speakers[sender] = self.counter.count(f"{sender}:")
        return found


class _Passages:
    """The candidates' passages, read as packing reaches them: each read takes the next
    candidates packing may still take, about one per READ_AHEAD_TOKENS of room left."""

    def __init__(self, req: RecallRequest, takeable: Callable[[RecallCandidate], bool]) -> None:
        self._candidates = req.candidates
        self._read = req.passages
        self._takeable = takeable
        self._found: dict[int, Passage | None] = {}  # None: deleted since it was ranked

    def at(self, at: int, room_left: int) -> Passage | None:
        """The passage of the candidate at `at` (None: it is gone)."""
        wanted = self._candidates[at].id
        if wanted not in self._found:
            ahead = (c for c in self._candidates[at:] if c.id not in self._found and self._takeable(c))
            batch = list(itertools.islice(ahead, max(READ_AHEAD_MIN, room_left // READ_AHEAD_TOKENS)))
            found = self._read(batch)
            self._found.update((c.id, found.get(c.id)) for c in batch)
        return self._found[wanted]


def pack_recalled(
    req: RecallRequest,
    room: int,
    shown: Collection[int],
    counter: TokenCounter,
    chat_id: str | None,
    hidden: Mapping[int, str] | None = None,
    newest: int | None = None,
) -> Recalled:
    """Pack the candidates into at most `room` tokens (the whole system message counted),
    leaving out what `shown` (the history and incoming ids) already holds, what the context
    filter left out of the recent conversation (`hidden`: id → its reason, e.g. `not-addressed`:
    the recalled past reaches beyond the recent window, it does not undo the filter inside it),
    and, when the context answers a given message, anything newer (`after-trigger`)."""
    hidden = hidden or {}
    s = req.settings
    items: list[ReportItem] = []
    notes = list(req.notes)
    room = min(room, s.max_tokens)
    best = max((c.score for c in req.candidates), default=0.0)
    floor = s.cutoff * best
    # The message's own overhead and the header, then a [date] line per new group; each line
    # with its line break.
    overhead = counter.message("system", "")
    used = overhead + counter.count(f"{HEADER}\n")
    groups: set[str] = set()
    turns: list[_Turn] = []
    taken: set[int] = set()
    picked: list[tuple[RecallCandidate, list[_Turn]]] = []
    render = _Lines(req, counter, chat_id)

    def out(c: RecallCandidate, reason: str) -> None:
        items.append(ReportItem("message", c.id, False, SECTION, reason, 0, c.sender, c.chat_id, c.scores()))

    def left_out(c: RecallCandidate) -> str | None:
        """Why a candidate is out before its passage is read, if it is."""
        if c.id in shown:
            return "in-history"
        if c.id in hidden or (newest is not None and c.id > newest):
            return hidden.get(c.id, "after-trigger")
        if c.score < floor or (s.min_similarity > 0 and (c.similarity or 0.0) < s.min_similarity):
            return "below-cutoff"
        return None

    passages = _Passages(req, lambda n: n.id not in taken and left_out(n) is None)
    misses, full_note = 0, ""
    for at, c in enumerate(req.candidates):
        if c.id in taken:  # already in, as the turn another passage needed
            continue
        reason = left_out(c)
        if reason is not None:
            out(c, reason)
            continue
        if s.limit and len(picked) >= s.limit:
            out(c, "over-depth")
            continue
        if room - used < MIN_LINE_TOKENS or misses >= FULL_AFTER_MISSES:  # full: the rest stay unread
            if misses >= FULL_AFTER_MISSES and not full_note:
                full_note = f"recalled past full: {misses} passages in a row did not fit, the rest were not read"
            out(c, "over-budget")
            continue
        read = passages.at(at, room - used)
        if read is None:  # deleted since it was ranked
            continue
        lines = [render.turn(read.message)]
        before = read.before
        if (
            before is not None
            and render.shorter_than(lines[0], s.neighbour_tokens)
            and before.id not in shown
            and before.id not in taken
            and before.id not in hidden
        ):
            lines.insert(0, render.turn(before, neighbour_of=c.id))
        cost = 0
        new_groups: list[str] = []
        for line in lines:
            cost += line.tokens
            if line.label not in groups and line.label not in new_groups:
                new_groups.append(line.label)
                cost += counter.count(f"{line.label}\n")
        if used + cost > room:
            out(c, "over-budget")
            misses += 1
            continue
        misses = 0
        used += cost
        groups.update(new_groups)
        turns.extend(lines)
        for line in lines:
            taken.add(line.message.id)
        picked.append((c, lines))

    if not turns:
        return Recalled(None, items, notes)
    # The block's count is its lines' (its last without a line break), so it fits; should a
    # line begin where that does not hold, it is counted whole, and the weakest passages go
    # while it does not fit.
    while True:
        rendered = _render(turns, chat_id)
        content = "\n".join(rendered)
        tokens = overhead + counter.count_lines(rendered)
        if tokens <= room or not picked:
            break
        c, dropped = picked.pop()
        turns = [t for t in turns if t not in dropped]
        out(c, "over-budget")
        if not turns:
            return Recalled(None, items, notes)
    block = ContextMessage("system", content, SECTION, tokens)
    included: list[ReportItem] = []
    for rank_order, (c, lines) in enumerate(picked, 1):
        for line in lines:
            score: dict[str, Any] = c.scores() if line.neighbour_of is None else {"neighbour_of": line.neighbour_of}
            score["passage"] = rank_order
            if line.excerpt:
                score["excerpt"] = True
            m = line.message
            included.append(ReportItem("message", m.id, True, SECTION, None, line.tokens, m.sender, m.chat_id, score))
    if any(not i.included and i.reason == "below-cutoff" for i in items):
        notes.append(f"recalled past stops below {s.cutoff:g} × the best score ({best:.4f})")
    if full_note:
        notes.append(full_note)
    return Recalled(block, [*included, *items], notes)

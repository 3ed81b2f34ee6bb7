"""How the recalled past is rendered: one line per turn (`speaker: text`, or
`speaker (excerpt): …` for a long message's relevant part) under one `[date, weekday(, chat)]`
line per group, the groups in the order of their oldest turn. `core/recalled.py` decides what
goes in; this module turns it into text and counts it exactly."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import UTC, date
from functools import lru_cache
from typing import NamedTuple

from recall.core.escaping import escape
from recall.core.excerpts import CHARS_PER_TOKEN_BOUND, Analysis, excerpt
from recall.core.models import Message, with_caption
from recall.core.passages import passage_span
from recall.core.tokens import TokenCounter

#: The first line of the block (seed 001's wording).
HEADER = "Similar past interactions that may be relevant:"


class Turn(NamedTuple):
    """One rendered line: a passage or the turn it needs, under its `[date(, chat)]` label;
    its tokens with the line break after it."""

    message: Message
    text: str
    excerpt: bool
    tokens: int
    label: str
    neighbour_of: int | None = None
    #: The passage it was excerpted around (`core.passages`; 0: none).
    part: int = 0


def group_label(message: Message, chat_id: str | None) -> str:
    """The `[date]` line a turn is rendered under (the chat too, when not the context's)."""
    day = message.created_at.astimezone(UTC).date()
    return _label(day, None if message.chat_id == chat_id else (message.chat_id or "(default)"))


@lru_cache(maxsize=4096)
def _label(day: date, other_chat: str | None) -> str:
    label = f"{day:%Y-%m-%d}, {day:%A}"
    if other_chat is not None:
        label += f", chat {escape(other_chat)}"
    return f"[{label}]"


def line(turn: Turn) -> str:
    who = f"{turn.message.sender} (excerpt)" if turn.excerpt else turn.message.sender
    return f"{who}: {turn.text}"


def render(turns: Sequence[Turn]) -> list[str]:
    """The block's lines: a `[date(, chat)]` line once per group, the groups in the order of
    their oldest turn, each group's turns oldest first (the packing counted each label once)."""
    groups: dict[str, list[Turn]] = {}
    for turn in sorted(turns, key=lambda t: (t.message.created_at, t.message.id)):
        groups.setdefault(turn.label, []).append(turn)
    lines = [HEADER]
    for label, members in groups.items():
        lines.append(label)
        lines.extend(line(turn) for turn in members)
    return lines


class Lines:
    """Renders and counts the turns of one packing, each with the line break after it (as
    `TokenCounter.count_lines` adds the block up; each speaker's `name:` counted once).
    A turn longer than `excerpt_tokens` is cut to its part that holds most of `terms`."""

    def __init__(
        self,
        counter: TokenCounter,
        chat_id: str | None,
        terms: Collection[str],
        words: Callable[[str], list[str]],
        excerpt_tokens: int,
        analysis: Analysis | None = None,
    ) -> None:
        self.counter = counter
        self.chat_id = chat_id
        self.terms = terms
        self.words = words
        self.excerpt_tokens = excerpt_tokens
        #: What the context's excerpts may still analyse.
        self.analysis = analysis
        self._speakers: dict[str, int] = {}

    def turn(self, message: Message, neighbour_of: int | None = None, part: int = 0) -> Turn:
        """The message as a line, cut around its sentences that match (and `part`, the passage
        the search matched by meaning) when it is longer than an excerpt."""
        # Captions of shared images are part of what was said (as the search indexes them).
        text = with_caption(message.content, message.metadata)
        label = group_label(message, self.chat_id)
        # Most messages are short: their whole line is counted once, and only a longer one is
        # cut. A message far longer than an excerpt is not counted whole at all (bounded work).
        if len(text) <= self.excerpt_tokens * CHARS_PER_TOKEN_BOUND:
            whole = escape(" ".join(text.split()))
            tokens = self.counter.count(f"{message.sender}: {whole}\n")
            if tokens - self._speaker(message.sender) - 1 <= self.excerpt_tokens:
                return Turn(message, whole, False, tokens, label, neighbour_of)
        focus = passage_span(text, part)
        cut = excerpt(text, self.terms, self.words, self.counter, self.excerpt_tokens, focus, self.analysis)
        turn = Turn(message, escape(cut.text), cut.cut, 0, label, neighbour_of, part if cut.cut else 0)
        return turn._replace(tokens=self.counter.count(f"{line(turn)}\n"))

    def shorter_than(self, turn: Turn, tokens: int) -> bool:
        """Whether the turn's line, without its line break, has fewer than `tokens` tokens (its
        count with the break is one more, or the same where the break joins a final `.`)."""
        if turn.tokens != tokens:
            return turn.tokens < tokens
        return self.counter.count(line(turn)) < tokens

    def _speaker(self, sender: str) -> int:
        found = self._speakers.get(sender)
        if found is None:
            found = self._speakers[sender] = self.counter.count(f"{sender}:")
        return found

"""The budget spent by value (spec §3): the recent window a reply must follow, and the older
history as candidates of the one ranking it shares with the recalled past.

Pure. The recent window is the newest messages of the conversation before the triggering one
(at most `messages` of them, within `room` tokens): kept whole while they fit, and the message
that does not is shown by its relevant part (an excerpt) in what is left, so one long reply
cannot push the conversation's thread out. Older history up to Memory Depth becomes
`HistoryCandidate`s: each scored by the search's relevance (where the search ranked it) plus
a recency signal that halves every `half_life` messages back: relevance × (1 + weight ×
recency), a signal, never a privilege.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from recall.core.context_parts import ContextMessage
from recall.core.excerpts import Analysis, excerpt
from recall.core.models import Message
from recall.core.passages import passage_span
from recall.core.recalled import HistoryCandidate, RecallCandidate
from recall.core.tokens import TokenCounter

#: What an excerpted history message starts with, so a reader knows text was left out.
EXCERPT_MARK = "(excerpt) "
#: The fewest tokens an excerpt in the recent window is given (less: the window ends there).
MIN_WINDOW_EXCERPT = 24


@dataclass(frozen=True)
class WindowSettings:
    """How the recent window and the history's recency are set (`Settings` has the defaults)."""

    #: Most messages of the recent window (besides the triggering one).
    messages: int = 4
    #: Its share of the whole budget.
    share: float = 0.10
    #: The weight of recency in a history message's score, and the messages over which it halves.
    recency_weight: float = 0.5
    half_life: float = 4.0


class Cutter:
    """Makes excerpts of history messages: their part that holds most of the query's `terms`,
    within a number of tokens, marked as an excerpt. Messages with tool calls or tool results
    are never cut (a model needs them whole or not at all)."""

    def __init__(
        self,
        counter: TokenCounter,
        terms: Collection[str],
        words: Callable[[str], list[str]],
        originals: Mapping[int, Message],
        parts: Mapping[int, int] | None = None,
        analysis: Analysis | None = None,
    ) -> None:
        self.counter = counter
        self.terms = terms
        self.words = words
        self.originals = originals
        #: Message id -> the passage the search matched it by (`RecallCandidate.part`).
        self.parts = parts or {}
        #: What the context's excerpts may still analyse.
        self.analysis = analysis

    def can_cut(self, message: ContextMessage) -> bool:
        return message.role in ("user", "assistant") and not message.extra and message.source_id is not None

    def cut(self, message: ContextMessage, max_tokens: int) -> ContextMessage | None:
        """The message as an excerpt of at most `max_tokens` tokens (its whole count), or None
        when it cannot be cut to that."""
        if not self.can_cut(message):
            return None
        overhead = self.counter.message(message.role, EXCERPT_MARK, message.name)
        room = max_tokens - overhead
        assert message.source_id is not None
        text = self.originals[message.source_id].content
        focus = passage_span(text, self.parts.get(message.source_id, 0))
        while room > 0:
            part = excerpt(text, self.terms, self.words, self.counter, room, focus, self.analysis)
            content = f"{EXCERPT_MARK}{part.text}" if part.cut else part.text
            tokens = self.counter.message(message.role, content, message.name)
            if tokens <= max_tokens:
                return ContextMessage(message.role, content, message.section, tokens, message.name, message.source_id)
            room -= tokens - max_tokens  # joined sentences may count a few more than apart
        return None


def recent_window(
    conversation: Sequence[ContextMessage], settings: WindowSettings, room: int, cutter: Cutter
) -> tuple[list[ContextMessage], int]:
    """The recent window (oldest first) and how many of the conversation's messages (oldest
    first) it leaves to the pool: the newest while they fit in `room`, the first that does not
    fit excerpted into what is left."""
    window: list[ContextMessage] = []
    used = 0
    for message in reversed(conversation):
        if len(window) >= settings.messages:
            break
        if used + message.tokens <= room:
            window.append(message)
            used += message.tokens
            continue
        left = room - used
        cut = cutter.cut(message, left) if left >= MIN_WINDOW_EXCERPT else None
        if cut is not None:
            window.append(cut)
        break
    window.reverse()
    return window, len(conversation) - len(window)


def history_candidates(
    older: Sequence[ContextMessage],
    candidates: Sequence[RecallCandidate],
    originals: Mapping[int, Message],
    settings: WindowSettings,
    cutter: Cutter,
    excerpt_tokens: int,
) -> list[HistoryCandidate]:
    """The history beyond the recent window (oldest first) as candidates of the pool."""
    relevance = {c.id: c.score for c in candidates}
    out = []
    for back, message in enumerate(reversed(older)):
        assert message.source_id is not None
        source = originals[message.source_id]
        recency = 0.5 ** (back / settings.half_life) if settings.half_life > 0 else 0.0
        found = relevance.get(source.id)
        # Recency weighs relevance, it does not replace it: a message the search did not rank
        # gains nothing from being recent (the recent window holds what a reply must follow).
        score = (found or 0.0) * (1.0 + settings.recency_weight * recency)
        cut = None
        if message.tokens > excerpt_tokens + 8 and cutter.can_cut(message):
            cut = _cutting(cutter, message, excerpt_tokens)
        out.append(HistoryCandidate(message, source.sender, source.chat_id, score, found, recency, cut))
    out.reverse()
    return out


def _cutting(cutter: Cutter, message: ContextMessage, excerpt_tokens: int) -> Callable[[], ContextMessage]:
    def cut() -> ContextMessage:
        return cutter.cut(message, excerpt_tokens + cutter.counter.message(message.role, EXCERPT_MARK)) or message

    return cut

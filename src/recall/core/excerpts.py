"""The relevant part of a long message: the sentences around the ones that match a query.

One long reply should not take the room of three short answers, so a long message recalled
into a context is cut to an excerpt: the best-matching sentence, then its neighbours while they
fit, in their original order, with `…` where text was left out. Pure: the caller passes the
query's words already normalised, and the function that normalises a sentence's words the same
way (the search index's stemmer), so this module knows nothing of the index.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache

from recall.core.tokens import TokenCounter

#: Where a sentence ends: after . ! ? or a line break (abbreviations split too; harmless here).
SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
ELLIPSIS = "…"
#: The characters a sentence can end after (`SENTENCE_END`): their count bounds the sentences.
_SENTENCE_MARKS = (".", "!", "?", "…", "\n")
#: Characters of a message an excerpt analyses at most (splits into sentences and normalises
#: the words of): the work of a build is bounded whatever a stored message's length. A longer
#: message is analysed around the passage the search matched by meaning, else around where the
#: query's words are densest (found by plain substring counts, which cost little even over
#: 350,000 characters), else from its start.
MAX_SCAN_CHARS = 12_000
#: Characters one context analyses at most, over all its excerpts (`Analysis`): past them, a
#: long message is cut where the query's words are densest, its sentences unread (`_located`).
#: A context of BEAM's conversations at 16,000 tokens analyses up to ~370,000; 300 messages of
#: 100,000 characters at the model's whole window asked for 3,600,000 (seconds of CPU a call).
MAX_CONTEXT_SCAN_CHARS = 500_000
#: Sentences of it analysed at most (a window of one-word sentences holds thousands).
MAX_SENTENCES = 400
#: Query words shorter than this are not counted when looking for that place (a one- or
#: two-letter word occurs inside most words).
LOCATING_MIN_CHARS = 4
#: Fewer characters than this per token are assumed of a text too long to count whole.
CHARS_PER_TOKEN_BOUND = 12


class Analysis:
    """What one context build may still analyse, in characters (`MAX_CONTEXT_SCAN_CHARS`); a
    window analysed once is not counted again. The packing reads messages in one order, so the
    same store gives the same excerpts."""

    def __init__(self, chars: int | None = None) -> None:
        self.left = MAX_CONTEXT_SCAN_CHARS if chars is None else chars
        self._done: set[tuple[str, int, int]] = set()

    def take(self, text: str, offset: int, end: int) -> bool:
        """Whether `text[offset:end]` may be analysed (then it is counted)."""
        key = (text, offset, end)  # the same message's text, excerpted at several sizes
        if key in self._done:
            return True
        if end - offset > self.left:
            return False
        self.left -= end - offset
        self._done.add(key)
        return True


@dataclass(frozen=True)
class Excerpt:
    text: str
    #: Whether text was left out (False: the whole message fitted).
    cut: bool


def sentences(text: str) -> list[tuple[int, str]]:
    """The sentences of a text, each with where it starts, whitespace collapsed, empty ones dropped."""
    found, start = [], 0
    for end in SENTENCE_END.finditer(text):
        found.append((start, text[start : end.start()]))
        start = end.end()
    found.append((start, text[start:]))
    return [(at, " ".join(s.split())) for at, s in found if s.strip()]


@dataclass(frozen=True)
class _Analysed:
    """A text's sentences, where each starts, and which sentences hold each (normalised) word."""

    parts: list[str]
    starts: list[int]
    holding: dict[str, list[int]]


@lru_cache(maxsize=1024)
def _analysed(text: str, words: Callable[[str], list[str]]) -> _Analysed:
    """A text's sentences and their words, remembered: the same long replies are excerpted in
    context after context, and normalising their words (a stemmer) costs more than anything
    else in an excerpt. Words point at their sentences, so a query's few words find theirs
    without a look at every sentence."""
    found = sentences(text)
    holding: dict[str, list[int]] = {}
    for i, (_, sentence) in enumerate(found):
        for word in set(words(sentence)):
            holding.setdefault(word, []).append(i)
    return _Analysed([s for _, s in found], [at for at, _ in found], holding)


def excerpt(
    text: str,
    terms: Collection[str],
    words: Callable[[str], list[str]],
    counter: TokenCounter,
    max_tokens: int,
    focus: tuple[int, int] | None = None,
    analysis: Analysis | None = None,
) -> Excerpt:
    """`text` cut to about `max_tokens` tokens around its sentences that hold most of `terms`
    (each sentence's words normalised by `words`); the whole text when it fits. `focus` is the
    span of the passage the search matched by meaning (`passages.passage_span`): its sentences
    count one matching word more. A message with no matching sentence and no focus keeps its
    opening sentences. `analysis`: what the context may still analyse (past it, `_located`)."""
    if len(text) <= max_tokens * CHARS_PER_TOKEN_BOUND:
        whole = " ".join(text.split())
        if counter.count(whole) <= max_tokens:
            return Excerpt(whole, False)
    offset, end = _window(text, terms if isinstance(terms, frozenset) else frozenset(terms), focus)
    if analysis is not None and not analysis.take(text, offset, end):
        return _located(
            text, offset, end, terms if isinstance(terms, frozenset) else frozenset(terms), counter, max_tokens
        )
    scanned = text[offset:end]
    analysed = _analysed(scanned, words)
    parts, starts = analysed.parts, analysed.starts
    measured: dict[int, int] = {}

    def size(i: int) -> int:
        if i not in measured:
            measured[i] = counter.count(parts[i])
        return measured[i]

    hits = [0] * len(parts)
    for term in set(terms):
        for i in analysed.holding.get(term, ()):
            hits[i] += 1
    if focus is not None:
        for i in range(bisect_left(starts, focus[0] - offset), bisect_left(starts, focus[1] - offset)):
            hits[i] += 1
    best = hits.index(max(hits)) if parts else 0  # the most matching words; the first of equals
    keep = {best}
    used = size(best) if parts else 0
    # Grow around the best sentence: the better-matching side first, the following one on ties.
    low, high = best - 1, best + 1
    while low >= 0 or high < len(parts):
        after = high < len(parts) and (low < 0 or hits[high] >= hits[low])
        pick = high if after else low
        if used + size(pick) > max_tokens:
            break
        keep.add(pick)
        used += size(pick)
        if after:
            high += 1
        else:
            low -= 1
    if not parts or (len(keep) == 1 and size(best) > max_tokens):
        opening = parts[best] if parts else " ".join(scanned.split())
        clipped = _clip(opening, counter, max_tokens)
        return Excerpt(f"{ELLIPSIS} {clipped}" if best > 0 or offset > 0 else clipped, True)
    chosen = sorted(keep)
    out = " ".join(parts[i] for i in chosen)
    if chosen[0] > 0 or offset > 0:
        out = f"{ELLIPSIS} {out}"
    if chosen[-1] < len(parts) - 1 or offset + len(scanned) < len(text):
        out = f"{out} {ELLIPSIS}"
    return Excerpt(out, True)


def _window(text: str, terms: frozenset[str], focus: tuple[int, int] | None) -> tuple[int, int]:
    """Where the characters an excerpt analyses start and end: at most `MAX_SCAN_CHARS` of them
    and `MAX_SENTENCES` sentences (the window ends where the next would start). A text no longer
    than that is read from its start; a longer one around the focus, else in the window (in
    steps of half its length) holding the query's words most often, the first of equals (the
    opening when none is)."""
    if len(text) <= 2 * MAX_SENTENCES:  # too short to hold more sentences (each takes two characters)
        return 0, len(text)
    if len(text) <= MAX_SCAN_CHARS:
        return _long_window.__wrapped__(text, terms, focus)  # read from its start: nothing to remember
    return _long_window(text, terms, focus)


@lru_cache(maxsize=256)
def _long_window(text: str, terms: frozenset[str], focus: tuple[int, int] | None) -> tuple[int, int]:
    """`_window` of a text that may need cutting, remembered for the longest texts (a few
    hundred, each up to `max_message_chars`): a build excerpts one message at several sizes,
    and the builds after it the same messages for the same question."""
    offset = 0
    half = MAX_SCAN_CHARS // 2
    locating = [t for t in terms if len(t) >= LOCATING_MIN_CHARS]
    if len(text) <= MAX_SCAN_CHARS:
        pass
    elif focus is not None:
        offset = 0 if focus[0] < half else min(focus[0] - half, len(text) - MAX_SCAN_CHARS)
    elif locating:
        lowered = text.lower()
        # Each half counted once; a window is two halves in a row.
        halves = [sum(lowered.count(t, at, at + half) for t in locating) for at in range(0, len(text), half)]
        windows = [first + second for first, second in zip(halves, halves[1:], strict=False)]
        offset = windows.index(max(windows)) * half
    end = min(len(text), offset + MAX_SCAN_CHARS)
    if sum(text.count(mark, offset, end) for mark in _SENTENCE_MARKS) < MAX_SENTENCES - 1:
        return offset, end  # fewer places a sentence could end than the most it may hold
    beyond = next(itertools.islice(SENTENCE_END.finditer(text, offset, end), MAX_SENTENCES - 1, None), None)
    return offset, end if beyond is None else beyond.start()


def _located(
    text: str, offset: int, end: int, terms: frozenset[str], counter: TokenCounter, max_tokens: int
) -> Excerpt:
    """Past the context's analysis: the stretch of the window about `max_tokens` tokens long
    (four characters a token) where the query's words are most often, the first of equals,
    clipped at words to `max_tokens` tokens; no sentence split, no word normalised."""
    return _located_in(text[offset:end], offset > 0, terms, counter.name, max_tokens)


@lru_cache(maxsize=1024)
def _located_in(window: str, inside: bool, terms: frozenset[str], encoding: str, max_tokens: int) -> Excerpt:
    """`_located` of a window (`inside`: it starts past the text's start), remembered (as
    analyses are: the builds after one meet the same messages for the same question), by the
    name of the counter's encoding."""
    size = 4 * max_tokens
    lowered = window.lower()
    locating = [t for t in terms if len(t) >= LOCATING_MIN_CHARS]
    starts = range(0, max(1, len(lowered) - size + 1), max(1, size // 2))
    best = max(starts, key=lambda at: sum(lowered.count(t, at, at + size) for t in locating)) if locating else 0
    cut = inside or best > 0
    found = window[best : best + size].split()
    clipped = _clip(" ".join(found[1:] if cut else found), TokenCounter(encoding), max_tokens)  # a cut word out
    return Excerpt(f"{ELLIPSIS} {clipped}" if cut else clipped, True)


def _clip(sentence: str, counter: TokenCounter, max_tokens: int) -> str:
    """One sentence longer than the excerpt itself: its first words that fit in `max_tokens`
    tokens (found by halving, so a sentence of thousands of words costs a few counts)."""
    found = sentence.split()
    low, high = 0, min(len(found), max_tokens)  # a word is at least one token
    while low < high:
        middle = (low + high + 1) // 2
        if counter.count(" ".join(found[:middle])) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return f"{' '.join(found[:low])} {ELLIPSIS}"

"""The relevant part of a long message: the sentences around the ones that match a query.

One long reply should not take the room of three short answers, so a long message recalled
into a context is cut to an excerpt: the best-matching sentence, then its neighbours while they
fit, in their original order, with `…` where text was left out. Pure: the caller passes the
query's words already normalised, and the function that normalises a sentence's words the same
way (the search index's stemmer), so this module knows nothing of the index.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from recall.core.tokens import TokenCounter

#: Where a sentence ends: after . ! ? or a line break (abbreviations split too; harmless here).
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
ELLIPSIS = "…"


@dataclass(frozen=True)
class Excerpt:
    text: str
    #: Whether text was left out (False: the whole message fitted).
    cut: bool


def sentences(text: str) -> list[str]:
    """The sentences of a text, whitespace collapsed, empty ones dropped."""
    return [" ".join(s.split()) for s in _SENTENCE_END.split(text) if s.strip()]


def excerpt(
    text: str,
    terms: Collection[str],
    words: Callable[[str], list[str]],
    counter: TokenCounter,
    max_tokens: int,
) -> Excerpt:
    """`text` cut to about `max_tokens` tokens around its sentences that hold most of `terms`
    (each sentence's words normalised by `words`); the whole text when it fits. A message with
    no matching sentence (a match by meaning, not by word) keeps its opening sentences."""
    whole = " ".join(text.split())
    if counter.count(whole) <= max_tokens:
        return Excerpt(whole, False)
    parts = sentences(text)
    sizes = [counter.count(s) for s in parts]
    hits = [sum(1 for w in set(words(s)) if w in terms) for s in parts]
    best = max(range(len(parts)), key=lambda i: (hits[i], -i)) if parts else 0
    keep = {best}
    used = sizes[best] if parts else 0
    # Grow around the best sentence: the better-matching side first, the following one on ties.
    low, high = best - 1, best + 1
    while low >= 0 or high < len(parts):
        after = high < len(parts) and (low < 0 or hits[high] >= hits[low])
        pick = high if after else low
        if used + sizes[pick] > max_tokens:
            break
        keep.add(pick)
        used += sizes[pick]
        if after:
            high += 1
        else:
            low -= 1
    if not parts or (len(keep) == 1 and sizes[best] > max_tokens):
        return Excerpt(_clip(parts[best] if parts else whole, counter, max_tokens), True)
    chosen = sorted(keep)
    out = " ".join(parts[i] for i in chosen)
    if chosen[0] > 0:
        out = f"{ELLIPSIS} {out}"
    if chosen[-1] < len(parts) - 1:
        out = f"{out} {ELLIPSIS}"
    return Excerpt(out, True)


def _clip(sentence: str, counter: TokenCounter, max_tokens: int) -> str:
    """One sentence longer than the excerpt itself: its first `max_tokens` tokens' words."""
    kept: list[str] = []
    for word in sentence.split():
        if counter.count(" ".join([*kept, word])) > max_tokens:
            break
        kept.append(word)
    return f"{' '.join(kept)} {ELLIPSIS}"

"""A long text's passages: the runs of whole sentences it is indexed by, one vector each.

An embedding model reads a text's first 256 word pieces (about 1,000 characters of English),
so a long reply was findable by meaning only by its opening. The search index embeds each
passage of a long text besides the text itself, and a search that finds a message by one of
its passages says which (`part`, 1-based; 0 is the text as a whole); the excerpt of that
message is then taken around that passage (`excerpts.excerpt`'s `focus`). Both sides call
`passage_spans` on the same text, so a part number means the same span to both.

The work is bounded whatever the length: at most MAX_PASSAGES passages, each read to its first
PASSAGE_CHARS characters by the model; a text longer than MAX_PASSAGES passages is split into
MAX_PASSAGES longer ones, so every stretch of it still has a vector, if a coarser one.
"""

from __future__ import annotations

from recall.core.excerpts import SENTENCE_END

#: Characters of a passage (about 200 word pieces of English, under the model's 256).
PASSAGE_CHARS = 800
#: Passages of one text at most (with the whole text's vector, 41 of 384 floats: within
#: pgvector's 16,000 dimensions of one value).
MAX_PASSAGES = 40


def passage_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each passage of `text`, in order, covering it; [] for a text that is one
    passage (PASSAGE_CHARS or shorter). Passages end at sentence ends where one comes before
    twice the target length, else they are cut at the target."""
    if len(text) <= PASSAGE_CHARS:
        return []
    target = max(PASSAGE_CHARS, -(-len(text) // MAX_PASSAGES))
    spans: list[tuple[int, int]] = []
    start = 0
    ends = [m.end() for m in SENTENCE_END.finditer(text)]  # a passage ends where a sentence does
    at = 0  # the first sentence end not yet passed
    while start < len(text) and len(spans) < MAX_PASSAGES - 1:
        if len(text) - start <= target:
            break
        while at < len(ends) and ends[at] - start < target:
            at += 1
        # The last sentence end before the target, else the first after it (within twice the
        # target), else the target itself.
        before = ends[at - 1] if at > 0 and ends[at - 1] > start else None
        after = ends[at] if at < len(ends) and ends[at] - start <= 2 * target else None
        end = before or after or start + target
        spans.append((start, end))
        start = end
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def passage_span(text: str, part: int) -> tuple[int, int] | None:
    """The span of passage `part` (1-based) of `text`, None when it has no such passage (0: the
    whole text)."""
    if part < 1:
        return None
    spans = passage_spans(text)
    return spans[part - 1] if part <= len(spans) else None

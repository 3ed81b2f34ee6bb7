"""The plain peers of bench/context_recall_eval.py: contexts made of whole turns, best first.

Each peer orders a conversation's turns for a question; `pack` then puts whole turns, one line
each (`[YYYY-MM-DD] speaker: text`), into the budget in that order, skipping a turn that does
not fit and going on with the next. Turns that tie go newest first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import numpy as np
from numpy.typing import NDArray

from recall import Message
from recall.core.tokens import TokenCounter
from recall.search.base import message_text
from recall.search.embeddings import Embedder

NEWEST = "newest turns that fit"
COSINE = "MiniLM int8 cosine"
BM25 = "bm25s"
RRF = "MiniLM + stemmed bm25s, RRF"
PEERS = (NEWEST, COSINE, BM25, RRF)
#: The peers count their lines in the encoding of recall's default model (gpt-4o).
PEER_ENCODING = "o200k_base"
#: Reciprocal-rank fusion's constant (Cormack et al. 2009).
RRF_K = 60


@dataclass(frozen=True)
class Turn:
    """One turn of the conversation as the peers see it."""

    message_id: int
    #: The id the questions' evidence names (LoCoMo's dia_id, BEAM's message id), as text.
    turn_id: str
    #: `speaker: text [shares an image: caption]`, what the ranking peers score.
    text: str
    #: `[YYYY-MM-DD] ` + text, what the peers put in the context.
    line: str
    #: The line's tokens plus one for its newline.
    tokens: int


def turn_text(message: Message) -> str:
    """`speaker: text`, whitespace collapsed, with a shared image's caption (as recall indexes it)."""
    return " ".join(message_text(message).split())


def make_turns(messages: Sequence[Message], counter: TokenCounter, key: str = "dia_id") -> list[Turn]:
    """The conversation's turns, oldest first, each as one line with its cost; `key` is the
    metadata key holding the id the evidence names."""
    turns = []
    for m in messages:
        text = turn_text(m)
        line = f"[{m.created_at.astimezone(UTC):%Y-%m-%d}] {text}"
        turns.append(Turn(m.id, str(m.metadata.get(key)), text, line, counter.count(line) + 1))
    return turns


def pack(order: Iterable[int], turns: Sequence[Turn], budget: int) -> tuple[set[str], int]:
    """The turn ids of the turns (by index, best first) that fit in `budget` tokens, a turn that
    does not fit skipped, and the tokens they take."""
    packed: set[str] = set()
    used = 0
    for index in order:
        turn = turns[index]
        if used + turn.tokens <= budget:
            packed.add(turn.turn_id)
            used += turn.tokens
    return packed, used


def ranked(scores: NDArray[np.floating[Any]] | Sequence[float]) -> list[int]:
    """Indexes by score, best first; ties newest (highest index) first."""
    values = np.asarray(scores, dtype=np.float64)
    return sorted(range(len(values)), key=lambda i: (-values[i], -i))


def fused(rankings: Sequence[Sequence[int]], size: int, k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion: each index scores the sum of 1 / (k + its 1-based rank) over the
    rankings that hold it; indexes by that score, best first (ties newest first)."""
    scores = np.zeros(size)
    for ranking in rankings:
        for rank, index in enumerate(ranking, 1):
            scores[index] += 1.0 / (k + rank)
    return ranked(scores)


class Bm25Peer:
    """bm25s over the turns' text (English stop words removed, the words stemmed with the
    English Snowball stemmer when `stem`); every turn scored for a question."""

    def __init__(self, texts: Sequence[str], stem: bool = False) -> None:
        import bm25s  # a dev dependency, needed only with the peers

        self._bm25s = bm25s
        self._stem = None
        if stem:
            import Stemmer  # PyStemmer, a dev dependency

            self._stem = Stemmer.Stemmer("english").stemWords
        self._retriever = bm25s.BM25()
        tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=self._stem, show_progress=False)
        self._retriever.index(tokens, show_progress=False)
        self._size = len(texts)

    def scores(self, question: str) -> NDArray[np.float64]:
        terms = self._bm25s.tokenize(
            [question], stopwords="en", stemmer=self._stem, return_ids=False, show_progress=False
        )[0]
        if not terms:
            return np.zeros(self._size)
        return np.asarray(self._retriever.get_scores(terms), dtype=np.float64)


class Peers:
    """Every peer's order of the turns for a question."""

    def __init__(self, turns: Sequence[Turn], embedder: Embedder) -> None:
        texts = [t.text for t in turns]
        # MiniLM reads a text's first 256 word pieces (the embedder cuts longer texts).
        self.vectors = embedder.embed(texts)
        self.bm25 = Bm25Peer(texts)
        self.stemmed = Bm25Peer(texts, stem=True)
        self.newest = list(reversed(range(len(turns))))

    def orders(self, question: str, query: NDArray[np.float32]) -> dict[str, list[int]]:
        """Peer -> turn indexes best first, for a question and its vector."""
        cosine = ranked(self.vectors @ query)
        stemmed = self.stemmed.scores(question)
        # The stemmed BM25 ranking holds only the turns sharing a word with the question.
        matching = [i for i in ranked(stemmed) if stemmed[i] > 0]
        return {
            NEWEST: self.newest,
            COSINE: cosine,
            BM25: ranked(self.bm25.scores(question)),
            RRF: fused([cosine, matching], len(self.newest)),
        }

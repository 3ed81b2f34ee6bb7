"""The search index's words: a text's terms as the index holds them, and each term's postings.

A term is a lowercased word, accents dropped, stemmed by Snowball (Porter 2), so a search for
"delivered" finds "delivery". A partition (`local_partition.py`) keeps, per term, the rows holding
it and its weighted count in each (`Postings`), and scores a keyword search by adding up the
BM25 weights those postings give.
"""

from __future__ import annotations

import unicodedata
from array import array
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from recall.search.base import WORD

#: BM25's term-frequency saturation and length normalisation (the usual values, FTS5's too).
BM25_K1 = 1.2
BM25_B = 0.75


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: loaded with the search index, not with `import recall`

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A lowercased word as the index holds it: accents dropped, then its Snowball stem."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
    return str(_stemmer().stemWord(plain))


def words(text: str) -> list[str]:
    """The terms of a text, in order, repeats kept."""
    return [stem(w) for w in WORD.findall(text.lower())]


class Postings:
    """The rows holding one term and its weighted count in each (appended in row order)."""

    __slots__ = ("rows", "counts", "_weights", "_weighed", "_dense", "_densed")

    def __init__(self) -> None:
        self.rows = array("q")
        self.counts = array("f")
        self._weights: NDArray[np.float32] | None = None
        self._weighed: tuple[int, float, float] = (0, 0.0, 0.0)
        self._dense: NDArray[np.float32] | None = None
        self._densed: tuple[int, int, float, float] = (0, 0, 0.0, 0.0)

    def weights(
        self, length: NDArray[Any], average: float, idf: float
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The rows, and each row's BM25 score for the term: `idf` × its term-frequency weight
        (length-normalised against `average`): kept until a row is added or the average length
        moves, so a term searched again in a store that did not change costs one gather."""
        rows = np.frombuffer(self.rows, dtype=np.int64)
        if self._weights is None or self._weighed != (len(rows), average, idf):
            counts = np.frombuffer(self.counts, dtype=np.float32)
            # Length normalisation of just the rows holding the term, not of the whole partition.
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length[rows] / average)
            weights = counts * (BM25_K1 + 1) / (counts + norm)
            self._weights = np.float32(idf) * weights.astype(np.float32)
            self._weighed = (len(rows), average, idf)
        return rows, self._weights

    def dense(self, size: int, length: NDArray[Any], average: float, idf: float) -> NDArray[np.float32]:
        """The weights of `weights` as a row per partition row (0 where the term is not), of
        the partition's first `size` rows: kept as long as those weights are."""
        if self._dense is None or self._densed != (size, len(self.rows), average, idf):
            rows, weights = self.weights(length, average, idf)
            dense = np.zeros(size, dtype=np.float32)
            dense[rows] = weights  # a row holds the term once: no two weights meet
            self._dense, self._densed = dense, (size, len(rows), average, idf)
        return self._dense

"""The passage vectors of long items: how they are embedded, and kept beside a partition's matrix.

A long message is stored with one vector for its text (its first 256 word pieces) and one per
passage (`core.passages`; `embed_with_passages`), all in its `embedding` value, one after
another; the in-memory partition keeps the first in its matrix (filters, the HNSW
graph), the others here. A vector search scores every live passage of the rows its filters pass
(a matrix product: a world of 3,000 long messages holds about 5,000 passages), and a row takes
its best passage's similarity, less a penalty, where that beats its whole vector's.

Why the penalty: a text with forty passages has forty chances to resemble a query by accident,
and a plain maximum over passages put long replies above the short turns that answer (BEAM
1-4, whole turns packed by cosine: 0.45 of the evidence at 2,000 tokens against 0.49 by whole
vectors). The expected best of n chance similarities grows with log n, so a passage gives up
0.10 + 0.05 × ln(passages of its text): measured through the whole context on BEAM 1-4 at
2,000 / 4,000 / 8,000 / 16,000 tokens, .531 / .682 / .740 / .828 against .533 / .680 / .755 /
.830 without passages (a flat 0.05: .522 / .630 / .709 / .803; 0.15: .531 / .667 / .740 /
.827), while a passage that matches clearly is still found.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from recall.core.passages import passage_spans

if TYPE_CHECKING:
    from recall.search.embeddings import Embedder

#: Cosine similarity a passage's match gives up against its text's whole vector...
PASSAGE_PENALTY = 0.10
#: ... and more per natural log of its text's number of passages.
PENALTY_PER_LOG = 0.05
#: Texts one run of the model embeds before a stopping indexer may end its round.
STOP_CHECK_TEXTS = 16
#: Passages a store of them grows by when full.
_GROWTH = 256


def passage_texts(text: str, prefix: str) -> list[str]:
    """What is embedded for an indexed text that starts with its speaker's `prefix` (such as
    `maria: `): the text itself, then (a long one) each passage of what follows the prefix,
    with the prefix, so a passage still says who said it."""
    body = text[len(prefix) :] if prefix and text.startswith(prefix) else text
    return [text, *(f"{prefix}{body[start:end]}" for start, end in passage_spans(body))]


def embed_with_passages(
    embedder: Embedder, items: Sequence[Sequence[str]], should_stop: Callable[[], bool] | None = None
) -> list[NDArray[np.float32]] | None:
    """For each item's `passage_texts`, its vector, or for a long text a matrix: its own vector,
    then its passages'. The model runs on STOP_CHECK_TEXTS texts at a time, and between runs
    `should_stop()` may end the work: then None (nothing is stored, the items stay pending), so
    a closing process waits for one short run, not for a round of long texts (which took 40 s)."""
    texts = [text for texts in items for text in texts]
    runs = []
    for start in range(0, len(texts), STOP_CHECK_TEXTS):
        if start and should_stop is not None and should_stop():
            return None
        runs.append(np.asarray(embedder.embed(texts[start : start + STOP_CHECK_TEXTS]), dtype=np.float32))
    vectors = np.concatenate(runs) if runs else np.zeros((0, embedder.dim), dtype=np.float32)
    out, at = [], 0
    for texts_of_item in items:
        out.append(vectors[at] if len(texts_of_item) == 1 else vectors[at : at + len(texts_of_item)])
        at += len(texts_of_item)
    return out


def speaker_prefix(kind: str, sender: str | None) -> str:
    """What an item's indexed text starts with before what was said (`base.indexed_text`)."""
    return f"{sender}: " if kind == "message" and sender else ""


def penalty_for(passages: int) -> float:
    """What the similarity of a passage of a text of `passages` passages gives up."""
    return PASSAGE_PENALTY + PENALTY_PER_LOG * math.log(max(passages, 1))


class PassageVectors:
    """Passage vectors by row: each with the row it belongs to and its 1-based part number."""

    def __init__(self, dim: int) -> None:
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        #: The row each passage belongs to (-1: dropped).
        self.owner = np.zeros(0, dtype=np.int64)
        self.part = np.zeros(0, dtype=np.int32)
        #: The penalty of each passage (`PASSAGE_PENALTY`, more for a text of many).
        self.penalty = np.zeros(0, dtype=np.float32)
        self.size = 0
        self.live = 0
        #: Row -> (first passage, count).
        self._of: dict[int, tuple[int, int]] = {}

    def set(self, row: int, vectors: NDArray[np.float32] | None) -> None:
        """The passages of `row` from now on (None or none: it has none)."""
        self.drop(row)
        if vectors is None or not len(vectors):
            return
        count = len(vectors)
        if self.size + count > len(self.owner):
            self._compact(max(2 * len(self.owner), self.live + count + _GROWTH))
        at = self.size
        self.matrix[at : at + count] = vectors
        self.owner[at : at + count] = row
        self.part[at : at + count] = np.arange(1, count + 1, dtype=np.int32)
        self.penalty[at : at + count] = penalty_for(count)
        self._of[row] = (at, count)
        self.size += count
        self.live += count

    def drop(self, row: int) -> None:
        found = self._of.pop(row, None)
        if found is not None:
            at, count = found
            self.owner[at : at + count] = -1
            self.live -= count

    def best(
        self, query: NDArray[np.float32], keep: NDArray[np.bool_]
    ) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.int32]]:
        """For each row `keep` passes that has passages: the row, its best passage's similarity
        to the query less its penalty (`penalty_for`), and that passage's part number."""
        owner = self.owner[: self.size]
        live = owner >= 0
        live[live] = keep[owner[live]]
        if not live.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int32)
        # Every passage multiplied in place (gathering the live ones first copies the matrix:
        # 7,500 passages, 11 MB, 13 ms a search), the dropped and filtered ones then left out.
        scores: NDArray[np.float32] = np.einsum("ij,j->i", self.matrix[: self.size], query) - self.penalty[: self.size]
        at = np.flatnonzero(live)
        rows, scores = owner[at], scores[at]
        # A row's passages lie together, in order: its best is the maximum of its run.
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        best = np.maximum.reduceat(scores, starts)
        lengths = np.diff(np.r_[starts, len(rows)])
        is_best = scores == np.repeat(best, lengths)
        first = np.minimum.reduceat(np.where(is_best, np.arange(len(rows)), len(rows)), starts)
        return rows[starts], best, self.part[at[first]]

    def joined(
        self,
        rows: NDArray[np.int64],
        similarity: NDArray[np.float32],
        query: NDArray[np.float32],
        keep: NDArray[np.bool_],
        whole: NDArray[np.float32],
    ) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.int32]]:
        """`rows` (scored by their whole vectors, rows of `whole`) joined by the rows whose best
        passage matches better, each with the part it matched by (0: its whole vector). Every
        passage `keep` passes is scored: they are few."""
        owners, best, parts_found = self.best(query, keep)
        extra = owners[~np.isin(owners, rows)]
        if len(extra):
            rows = np.concatenate([rows, extra])
            similarity = np.concatenate([similarity, np.einsum("ij,j->i", whole[extra], query)])
        similarity = np.array(similarity, dtype=np.float32)
        parts = np.zeros(len(rows), dtype=np.int32)
        order = np.argsort(rows, kind="stable")
        at = order[np.searchsorted(rows[order], owners)]
        better = best > similarity[at]
        similarity[at[better]] = best[better]
        parts[at[better]] = parts_found[better]
        return rows, similarity, parts

    def _compact(self, capacity: int) -> None:
        """Live passages moved to the front of arrays of `capacity` (new arrays: a search
        holding the old ones reads them unchanged)."""
        keep = np.flatnonzero(self.owner[: self.size] >= 0)
        matrix = np.zeros((capacity, self.matrix.shape[1]), dtype=np.float32)
        owner = np.full(capacity, -1, dtype=np.int64)
        part = np.zeros(capacity, dtype=np.int32)
        penalty = np.zeros(capacity, dtype=np.float32)
        matrix[: len(keep)] = self.matrix[keep]
        owner[: len(keep)] = self.owner[keep]
        part[: len(keep)] = self.part[keep]
        penalty[: len(keep)] = self.penalty[keep]
        self.matrix, self.owner, self.part, self.penalty = matrix, owner, part, penalty
        self.size = len(keep)
        moved, start = {}, 0
        for row, count in ((int(r), c) for r, (_, c) in sorted(self._of.items(), key=lambda kv: kv[1][0])):
            moved[row] = (start, count)
            start += count
        self._of = moved

"""Scoring a context of bench/context_recall_eval.py: which evidence turns it holds, a message
shown as an excerpt counting only if the excerpt holds the sentence the question rests on (the
rule is in bench/context_recall_eval.py's doc)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from recall import Message
from recall.core.context_parts import ContextReport
from recall.core.context_records import Context
from recall.core.escaping import escape
from recall.core.excerpts import sentences
from recall.core.models import with_caption
from recall.search.embeddings import Embedder, default_embedder


def evidence_share(found: set[str], evidence: Sequence[str]) -> float:
    """The share of the evidence turns that were found (partial credit)."""
    return sum(1 for turn_id in evidence if turn_id in found) / len(evidence) if evidence else 1.0


def included_messages(report: ContextReport) -> dict[int, bool]:
    """The id of every message the report lists as included, in any section, and whether it is
    shown whole anywhere (False: only as an excerpt). An item whose scores name more messages (a
    passage of several turns, under a key ending in `ids`) brings those too."""
    shown: dict[int, bool] = {}
    for item in report.items:
        if not item.included or item.kind != "message":
            continue
        score = item.score or {}
        ids = [item.id] if isinstance(item.id, int) else []
        for key, value in score.items():
            if key.endswith("ids") and isinstance(value, list | tuple):
                ids.extend(v for v in value if isinstance(v, int))
        for i in ids:
            shown[i] = shown.get(i, False) or not score.get("excerpt")
    return shown


def included_message_ids(report: ContextReport) -> set[int]:
    """The ids of every message the report lists as included, in any section."""
    return set(included_messages(report))


class KeySentences:
    """The sentence of a message a question rests on: of its sentences, the nearest the question
    by MiniLM cosine. Each message's sentences are embedded once; the last question's vector is
    kept."""

    def __init__(self, messages: Mapping[int, Message], embedder: Embedder | None = None) -> None:
        self._messages = messages
        self._embedder = embedder
        self._sentences: dict[int, tuple[list[str], NDArray[np.float32]]] = {}
        self._question: tuple[str, NDArray[np.float32]] | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    def vector(self, question: str) -> NDArray[np.float32]:
        if self._question is None or self._question[0] != question:
            self._question = (question, self.embedder.embed([question])[0])
        return self._question[1]

    def key(self, message_id: int, question: str) -> str:
        if message_id not in self._sentences:
            message = self._messages[message_id]
            text = with_caption(message.content, message.metadata)
            parts = [s for _, s in sentences(text)] or [" ".join(text.split())]
            self._sentences[message_id] = (parts, self.embedder.embed(parts))
        parts, vectors = self._sentences[message_id]
        return parts[int(np.argmax(vectors @ self.vector(question)))]


def recall_found(
    ctx: Context, turn_ids: Mapping[int, str], evidence: Sequence[str], keys: KeySentences, question: str
) -> tuple[set[str], set[str]]:
    """The evidence turns recall's context holds: counting an excerpt that holds the key sentence
    (see the module's doc), and counting whole messages only."""
    shown = included_messages(ctx.report)
    whole = {turn_ids[i] for i, is_whole in shown.items() if is_whole and i in turn_ids}
    wanted = set(evidence) - whole
    excerpted = [i for i, is_whole in shown.items() if not is_whole and turn_ids.get(i) in wanted]
    found = set(whole)
    if excerpted:
        text = "\n".join(m.content for m in ctx.messages)
        found.update(turn_ids[i] for i in excerpted if escape(keys.key(i, question)) in text)
    return found, whole

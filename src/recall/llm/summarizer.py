"""History summaries with a chat model (spec §3: older history becomes one summary message).

Summaries are cached by the exact run of messages they cover, and built incrementally: a chat's
older history grows one message at a time, so the summary of messages 1..n+1 is made from the
cached summary of 1..n plus message n+1. No run of messages is ever summarised twice, and each
model call sees only what is new.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from recall.core.models import Message
from recall.errors import ModelError
from recall.llm.base import ChatModel

logger = logging.getLogger("recall.summaries")

INSTRUCTIONS = (
    "You summarise a chat for one of its participants, who will read the summary instead of the"
    " messages. Keep who said what, names, facts, numbers, dates, decisions, promises and open"
    " questions; drop greetings and filler. Write plain sentences, at most 200 words, no"
    " preamble."
)
#: Summaries kept in memory (each is a few hundred bytes).
CACHE_SIZE = 1024


def _transcript(messages: Sequence[Message]) -> str:
    return "\n".join(f"{m.sender}: {m.content}" for m in messages)


def _chain(messages: Sequence[Message]) -> list[str]:
    """One key per prefix of `messages`: a hash over every message up to and including it."""
    keys: list[str] = []
    digest = hashlib.sha256()
    for m in messages:
        digest.update(f"{m.world_id}\0{m.id}\0{m.sender}\0{m.content}\0".encode())
        keys.append(digest.copy().hexdigest())
    return keys


class LLMSummarizer:
    """A `Summarizer` (recall.core.context) backed by a chat model, with the prefix cache.

    A model failure is logged and yields '' — the context builder then keeps the newest
    messages that fit instead of a summary — so a flaky model never breaks a context."""

    def __init__(self, model: ChatModel, *, max_tokens: int = 400, cache_size: int = CACHE_SIZE) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.cache_size = cache_size
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        #: Model calls made (for tests and metrics).
        self.calls = 0

    def summarize(self, messages: Sequence[Message]) -> str:
        if not messages:
            return ""
        keys = _chain(messages)
        with self._lock:
            start, previous = 0, ""
            for index in range(len(keys) - 1, -1, -1):
                if keys[index] in self._cache:
                    self._cache.move_to_end(keys[index])
                    start, previous = index + 1, self._cache[keys[index]]
                    break
        if start == len(messages):
            return previous
        new = _transcript(messages[start:])
        prompt = (
            f"Summary of the conversation so far:\n{previous}\n\nNew messages:\n{new}\n\n"
            "Write the updated summary of the whole conversation."
            if previous
            else f"Messages:\n{new}\n\nWrite the summary."
        )
        try:
            text = self.model.complete(
                [{"role": "user", "content": prompt}], system=INSTRUCTIONS, max_tokens=self.max_tokens
            ).strip()
        except ModelError as e:
            logger.warning("history summary failed, keeping recent messages instead: %s", e)
            return ""
        finally:
            with self._lock:
                self.calls += 1
        if text:
            with self._lock:
                self._cache[keys[-1]] = text
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return text

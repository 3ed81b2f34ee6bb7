"""Queued fact extractions outlive their process: each request is kept in the store
(store/extraction_jobs.py) from `extract()` until its run ends, so closing a `Recall` with
extractions still queued hands them to the next process that opens the store with a chat
model, which queues them again (the debounce starts anew: a short command such as the CLI's
makes no model call it was not asked for; `flush_extraction()` runs them at once).

A process that ended without closing (killed) leaves its requests marked as its own; another
takes them over once they are `STALE_AFTER` seconds past due.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from typing import Any

from recall.core.models import Message
from recall.errors import RecallError
from recall.store.base import Store
from recall.store.records import ExtractionJob

logger = logging.getLogger("recall.extraction")

#: Seconds past due after which a request its process never ran nor handed back is taken over.
STALE_AFTER = 900.0

#: What a kept request is queued again with: (tenant, scope, thread, messages, token, delay).
Submit = Callable[[str, str, str, Sequence[Message], str, float], None]
#: The conversation to extract from: (world key, agent id, chat id or None) → messages, oldest first.
ReadFn = Callable[[str, str, str | None], list[Message]]


class ExtractionJournal:
    """The store's record of this process's queued extractions."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self._clock = clock
        #: Who this process is in the records' `owner`.
        self.owner = uuid.uuid4().hex
        self._lock = threading.Lock()
        #: Tokens of the requests made in this process (not taken over from an earlier one).
        self._made_here: set[str] = set()

    def record(
        self, tenant: str, scope: str, thread: str, world_key: str, agent: str, chat: str | None, delay: float
    ) -> str:
        """Keep a request, in place of an earlier one for the same thread; its token."""
        token = uuid.uuid4().hex
        now = self._clock()
        self.store.put_extraction_job(
            ExtractionJob(tenant, scope, thread, world_key, agent, chat or "", token, self.owner, now + delay, now)
        )
        with self._lock:
            self._made_here.add(token)
        return token

    def finished(self, tokens: Collection[str]) -> None:
        """The requests ran (or were dropped): forget them."""
        self.store.finish_extraction_jobs(tokens)
        with self._lock:
            self._made_here.difference_update(tokens)

    def forget(self, tenant: str, scopes: Sequence[str], thread_prefix: str | None) -> None:
        """Forget every process's requests for deleted scopes or threads."""
        if scopes or thread_prefix is not None:
            self.store.forget_extraction_jobs(tenant, scopes, thread_prefix)

    def resume(self, read: ReadFn, submit: Submit, delay: float) -> int:
        """Take over the requests earlier processes left, read each conversation again and
        queue it, due in `delay` seconds; how many were queued. A request whose world or
        agent is gone is forgotten."""
        now = self._clock()
        try:
            jobs = self.store.claim_extraction_jobs(self.owner, now - STALE_AFTER, now + delay)
        except Exception:  # opening the store must not fail on this; the records stay
            logger.exception("could not read the queued fact extractions kept in the store")
            return 0
        gone: list[str] = []
        queued = 0
        for job in jobs:
            try:
                messages = read(job.world_id, job.agent_id, job.chat_id or None)
            except RecallError as e:  # the world or the agent was deleted since
                logger.info("a kept extraction for %s (thread %s) is dropped: %s", job.scope, job.thread, e)
                gone.append(job.token)
                continue
            submit(job.tenant, job.scope, job.thread, messages, job.token, delay)
            queued += 1
        if gone:
            self.store.finish_extraction_jobs(gone)
        if queued:
            logger.info("%d fact extraction(s) kept by an earlier process queued again", queued)
        return queued

    def release(self, tokens: Collection[str]) -> None:
        """Hand the requests `tokens` name back for the next open, and say so: a warning when
        some were made in this process (the user queued them and may expect them run)."""
        if not tokens:
            return
        with self._lock:
            made_here = len(self._made_here.intersection(tokens))
            self._made_here.difference_update(tokens)
        try:
            self.store.release_extraction_jobs(tokens)
        except Exception as e:
            logger.warning(
                "%d queued fact extraction(s) not run; they could not be handed back (%s) and are taken"
                " over by a process that opens the store %d minutes after they were due",
                len(tokens),
                e,
                STALE_AFTER // 60,
            )
            return
        log: Any = logger.warning if made_here else logger.info
        log(
            "%d queued fact extraction(s) not run yet are kept in the store: they run when it is next opened"
            " with a chat model (flush_extraction() before close() runs them now)",
            len(tokens),
        )

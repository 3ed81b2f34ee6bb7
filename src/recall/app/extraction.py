"""Fact extraction (spec §4): `Extraction` queues an agent's conversation after a run, and the
extraction queue runs the model over it in the background.

The queue: after an agent run, the service submits the thread's messages;
a scope's extraction runs `debounce` seconds after its latest submit, so a burst of messages costs
one model call per thread instead of one per message.

- The newest snapshot per (scope, thread) wins; older snapshots of the same thread are dropped.
- One background worker thread runs due work; `submit` never blocks on the model.
- Runs never overlap: one scope's `load` → model → `apply` finishes before the next starts, so
  each run sees the facts the previous one stored.
- A model failure or an unreadable answer changes nothing and is logged as a warning
  (logger `recall.extraction`); an exception from `load`/`apply` is logged with its traceback.
  The queue never raises into the caller; `run_now` reports each run's failure to a caller
  that waits for it (`recall facts extract`).
- `close()` does not run pending work (shutting down must not wait for model calls the user
  never asked for): it returns the tokens of what it did not run, for `Extraction` to keep in
  the store for the next open (app/extraction_journal.py). Call `flush()` first to run it now.
  An extraction already running is allowed to finish.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from recall import telemetry
from recall.app.extraction_journal import ExtractionJournal
from recall.app.facts import Facts
from recall.app.worlds import Worlds
from recall.core.extraction import MAX_MESSAGES as EXTRACTION_MESSAGES
from recall.core.extraction import extraction_messages, usable_messages
from recall.core.extraction_plan import FactChanges, parse_extraction, plan_changes
from recall.core.facts import Fact
from recall.core.models import Message, SenderType
from recall.errors import ExtractionParseError, InvalidInputError, ModelError, UnknownWorldError
from recall.llm.base import ChatModel
from recall.settings import Settings
from recall.store.base import Store
from recall.telemetry.instruments import EXTRACTION

logger = logging.getLogger("recall.extraction")

#: Reply tokens one extraction may use (sections plus a list of facts).
EXTRACTION_MAX_TOKENS = 2000

#: (tenant, scope) → (current facts, current sections)
LoadFn = Callable[[str, str], tuple[list[Fact], dict[str, str]]]
#: (tenant, scope, changes) → whether they were stored (not when a message they were read from is gone)
ApplyFn = Callable[[str, str, FactChanges], bool]


@dataclass(frozen=True)
class ExtractionRun:
    """One extraction that was run: `error` says why it changed nothing when it failed (the
    model unreachable or refusing, an unreadable answer, the store failing)."""

    tenant: str
    scope: str
    thread: str
    #: Whether the model was called (a failure to load the scope's facts comes before it).
    model_called: bool
    error: str | None = None


@dataclass
class _Pending:
    due: float
    #: thread id → newest snapshot; dict order is the order threads were first submitted.
    threads: dict[str, tuple[Message, ...]] = field(default_factory=dict)
    #: thread id → the token its newest snapshot was submitted with (the store's record of it).
    tokens: dict[str, str] = field(default_factory=dict)


class ExtractionQueue:
    """Debounced, per-scope fact extraction in the background. Thread-safe."""

    def __init__(
        self,
        model: ChatModel,
        load: LoadFn,
        apply: ApplyFn,
        debounce: float = 30.0,
        min_confidence: float = 0.7,
        max_facts: int = 100,
        *,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
        finished: Callable[[list[str]], None] | None = None,
    ) -> None:
        """`load` returns a scope's current facts and sections; `apply` stores a `FactChanges`
        (sections, then removals, then additions). With `background=False` no worker thread
        runs and only `flush()` does work; `clock` is what `debounce` is measured against.
        `finished` is told the tokens of snapshots that ran or were discarded."""
        if debounce < 0:
            raise ValueError(f"debounce must be ≥ 0 seconds, got {debounce}")
        self.model = model
        self._load = load
        self._apply = apply
        self.debounce = debounce
        self.min_confidence = min_confidence
        self.max_facts = max_facts
        self._clock = clock
        self._background = background
        self._finished = finished
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._lock = threading.Condition()
        #: Held while jobs are taken from `_pending` and run: runs never overlap, and `flush`
        #: waits for a run already under way.
        self._run_lock = threading.RLock()
        self._worker: threading.Thread | None = None
        self._closed = False

    # -- the caller's side -----------------------------------------------------------------

    def submit(
        self,
        tenant: str,
        scope: str,
        thread_id: str,
        messages: Sequence[Message],
        token: str | None = None,
        delay: float | None = None,
    ) -> None:
        """Queue `messages` (the thread's conversation) for `scope`, to run `delay` seconds
        from now (None: the debounce); returns at once. `token` names the request to
        `finished` and in what `close()` returns."""
        snapshot = tuple(messages)
        with self._lock:
            if self._closed:
                logger.debug("extraction queue closed; dropped a submit for %s %s", tenant, scope)
                return
            key = (tenant, scope)
            pending = self._pending.get(key)
            due = self._clock() + (self.debounce if delay is None else max(0.0, delay))
            if pending is None:
                pending = self._pending[key] = _Pending(due)
            pending.due = due if delay is None else min(pending.due, due)
            pending.threads[thread_id] = snapshot
            if token is None:
                pending.tokens.pop(thread_id, None)
            else:
                pending.tokens[thread_id] = token
            if self._background and self._worker is None:
                self._worker = threading.Thread(target=self._work, name="recall-extraction", daemon=True)
                self._worker.start()
            self._lock.notify_all()

    def flush(self, tenant: str | None = None, scope: str | None = None) -> int:
        """Run the pending work now (all of it, or one tenant's, or one scope's), in this
        thread; returns how many extractions ran (model calls made). Waits for a run that
        is already under way first."""
        return sum(run.model_called for run in self.run_now(tenant, scope))

    def run_now(self, tenant: str | None = None, scope: str | None = None) -> list[ExtractionRun]:
        """`flush`, returning each run with its failure, if any."""
        with self._run_lock:
            with self._lock:
                keys = [
                    k for k in self._pending if (tenant is None or k[0] == tenant) and (scope is None or k[1] == scope)
                ]
                jobs = [(k, self._pending.pop(k)) for k in keys]
            return self._run_jobs(jobs)

    def discard(
        self, tenant: str, *, scopes: Collection[str] = (), threads: str | None = None, messages: Collection[int] = ()
    ) -> int:
        """Drop pending snapshots of deleted things, once a run under way has ended, so what was
        deleted does not come back as facts: every snapshot of `scopes`, of the threads whose id
        begins with `threads` ('WORLD/' or 'WORLD/AGENT/'), or holding one of `messages`. How
        many went."""
        prefix = None if threads is None else threads.lower()
        wanted = set(messages)

        def gone(scope: str, thread: str, snapshot: Sequence[Message]) -> bool:
            return (
                scope in scopes
                or (prefix is not None and thread.lower().startswith(prefix))
                or any(m.id in wanted for m in snapshot)
            )

        dropped = 0
        tokens: list[str] = []
        with self._run_lock, self._lock:
            for key in [k for k in self._pending if k[0] == tenant]:
                pending = self._pending[key]
                for thread in [t for t, snapshot in pending.threads.items() if gone(key[1], t, snapshot)]:
                    del pending.threads[thread]
                    if thread in pending.tokens:
                        tokens.append(pending.tokens.pop(thread))
                    dropped += 1
                if not pending.threads:
                    del self._pending[key]
        self._tell_finished(tokens)
        return dropped

    def pending(self) -> list[tuple[str, str]]:
        """(tenant, scope) pairs waiting to run, soonest first."""
        with self._lock:
            return [k for k, _ in sorted(self._pending.items(), key=lambda item: item[1].due)]

    def depth(self) -> int:
        """Pending (scope, thread) snapshots, for the queue-depth metric."""
        with self._lock:
            return sum(len(p.threads) for p in self._pending.values())

    def close(self, timeout: float | None = None) -> list[str]:
        """Stop the worker without running pending work (flush first to run it); the tokens of
        the pending snapshots submitted with one (the others are dropped). Waits up to
        `timeout` seconds (None: as long as it takes) for a run under way to finish."""
        with self._lock:
            self._closed = True
            untracked = sum(len(p.threads) - len(p.tokens) for p in self._pending.values())
            kept = [token for p in self._pending.values() for token in p.tokens.values()]
            self._pending.clear()
            self._lock.notify_all()
            worker = self._worker
        if untracked:
            logger.info("extraction queue closed; dropped %d pending extraction(s)", untracked)
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout)
        return kept

    # -- the worker ------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._closed:
                    now = self._clock()
                    soonest = min((p.due for p in self._pending.values()), default=None)
                    if soonest is not None and soonest <= now:
                        break
                    self._lock.wait(None if soonest is None else soonest - now)
                if self._closed:
                    return
            with self._run_lock:
                with self._lock:
                    now = self._clock()
                    due = [k for k, p in self._pending.items() if p.due <= now]
                    jobs = [(k, self._pending.pop(k)) for k in due]
                try:
                    self._run_jobs(jobs)
                except Exception:  # never let the worker die
                    logger.exception("extraction worker: unexpected error")

    def _run_jobs(self, jobs: Sequence[tuple[tuple[str, str], _Pending]]) -> list[ExtractionRun]:
        runs: list[ExtractionRun] = []
        for (tenant, scope), pending in jobs:
            for thread_id, messages in pending.threads.items():
                try:
                    run = self._run(tenant, scope, thread_id, messages)
                finally:  # ran, or failed for good: not to be run again at the next open
                    token = pending.tokens.get(thread_id)
                    self._tell_finished([] if token is None else [token])
                if run is not None:
                    runs.append(run)
        return runs

    def _tell_finished(self, tokens: list[str]) -> None:
        if tokens and self._finished is not None:
            try:
                self._finished(tokens)
            except Exception:  # the record stays; a later open runs the extraction again
                logger.exception("extraction: could not remove the record of %d finished extraction(s)", len(tokens))

    def _run(self, tenant: str, scope: str, thread_id: str, messages: Sequence[Message]) -> ExtractionRun | None:
        """One extraction; None when there was nothing to extract from."""
        if not usable_messages(messages):
            logger.debug("extraction for %s (thread %s): no human messages or replies; skipped", scope, thread_id)
            return None
        try:
            facts, sections = self._load(tenant, scope)
        except Exception as e:
            logger.exception("extraction for %s (thread %s) could not load the scope's facts", scope, thread_id)
            return ExtractionRun(tenant, scope, thread_id, False, f"could not load the scope's facts: {e}")
        system, prompt = extraction_messages(messages, facts, sections)
        attributes: dict[str, telemetry.Value] = {
            "recall.model": self.model.name,
            "recall.extraction.messages": len(messages),
        }
        try:
            with telemetry.timed(EXTRACTION, "recall.extraction.duration", attributes) as span:
                answer = self.model.complete(
                    prompt, system=system, max_tokens=EXTRACTION_MAX_TOKENS, temperature=0.0, json_output=True
                )
                result = parse_extraction(answer)
                span.set({"recall.extraction.facts_known": len(facts)})
        except (ModelError, ExtractionParseError) as e:
            logger.warning("extraction for %s (thread %s) changed nothing: %s", scope, thread_id, e)
            return ExtractionRun(tenant, scope, thread_id, True, str(e))
        except Exception as e:
            logger.exception("extraction for %s (thread %s) failed; nothing changed", scope, thread_id)
            return ExtractionRun(tenant, scope, thread_id, True, f"{type(e).__name__}: {e}")
        done = ExtractionRun(tenant, scope, thread_id, True)
        changes = replace(
            plan_changes(facts, result, self.min_confidence, self.max_facts, source=(thread_id or "extraction")[:200]),
            sources=tuple(m.id for m in messages),
        )
        for content, reason in changes.skipped:
            logger.debug("extraction for %s skipped %r: %s", scope, content, reason)
        if changes.empty:
            logger.info("extraction for %s (thread %s): nothing to change", scope, thread_id)
            return done
        try:
            stored = self._apply(tenant, scope, changes)
        except Exception as e:
            logger.exception("extraction for %s (thread %s) could not store its changes", scope, thread_id)
            return ExtractionRun(tenant, scope, thread_id, True, f"could not store the changes: {e}")
        if not stored:
            logger.info(
                "extraction for %s (thread %s): a message it read was deleted meanwhile; nothing stored",
                scope,
                thread_id,
            )
            return ExtractionRun(
                tenant, scope, thread_id, True, "a message it read was deleted meanwhile; nothing stored"
            )
        logger.info("extraction for %s (thread %s): %s", scope, thread_id, changes.summary())
        return done


class Extraction:
    """Queue fact extraction from agents' conversations, run it now, and report its backlog.
    What is queued is kept in the store until it runs (`ExtractionJournal`): extractions a
    closed process did not run are queued again when the store is next opened with a model."""

    def __init__(
        self, store: Store, settings: Settings, worlds: Worlds, facts: Facts, model: ChatModel | None = None
    ) -> None:
        self.store = store
        self.worlds = worlds
        self.facts = facts
        self.journal = ExtractionJournal(store)
        #: Debounced extraction; None when no chat model is configured (extraction off).
        self.queue = (
            None
            if model is None
            else ExtractionQueue(
                model,
                facts.current,
                facts.apply_changes,
                debounce=settings.extraction_debounce,
                min_confidence=settings.extraction_min_confidence,
                max_facts=settings.max_facts,
                finished=self.journal.finished,
            )
        )
        if self.queue is not None:
            self.journal.resume(self._conversation, self.queue.submit, settings.extraction_debounce)

    def _conversation(self, world_key: str, agent: str, chat_id: str | None) -> list[Message]:
        """What extraction reads: the agent's newest messages in the chat, oldest first."""
        newest_first = islice(self.store.iter_heard(world_key, agent, chat_id), 2 * EXTRACTION_MESSAGES)
        return list(newest_first)[::-1]

    def extract(
        self, world_id: str, agent_id: str, chat_id: str | None = None, scope: str | None = None, tenant: str = ""
    ) -> dict[str, Any]:
        """Queue fact extraction from the agent's conversation in a chat (call it after an
        agent run). The facts go to `scope`, by default the newest human's `user:ID`. Returns
        at once; the model runs after the debounce, or on `flush_extraction`."""
        world = self.worlds.get_world(world_id)
        if world.tenant != tenant:
            raise UnknownWorldError(world.id)
        agent = self.worlds.get_agent(world.key, agent_id).id
        if chat_id is not None and not isinstance(chat_id, str):
            raise InvalidInputError("chat_id", "must be text")
        newest_first = list(islice(self.store.iter_heard(world.key, agent, chat_id or None), 2 * EXTRACTION_MESSAGES))
        if scope is None:
            human = next((m.sender for m in newest_first if m.sender_type is SenderType.HUMAN), None)
            if human is None:
                return {"queued": False, "reason": "no human message in this chat to learn about"}
            scope = f"user:{human.lower()}"
        canonical = self.facts.scope(scope, tenant)
        if self.queue is None:
            return {"queued": False, "scope": canonical, "reason": "no chat model configured (settings.llm_model)"}
        thread = f"{world.id}/{agent}/{chat_id or ''}"
        token = self.journal.record(tenant, canonical, thread, world.key, agent, chat_id, self.queue.debounce)
        self.queue.submit(tenant, canonical, thread, newest_first[::-1], token)
        return {"queued": True, "scope": canonical, "thread": thread, "messages": len(newest_first)}

    def flush_extraction(self, tenant: str | None = None, scope: str | None = None) -> int:
        """Run queued extractions now (all, one tenant's, or one scope's); the model calls made."""
        return 0 if self.queue is None else self.queue.flush(tenant, scope)

    def run_extraction(self, tenant: str | None = None, scope: str | None = None) -> list[ExtractionRun]:
        """`flush_extraction`, returning each run with its failure, if any."""
        return [] if self.queue is None else self.queue.run_now(tenant, scope)

    def discard(
        self, tenant: str, *, scopes: Collection[str] = (), threads: str | None = None, messages: Collection[int] = ()
    ) -> int:
        """Drop queued extractions of deleted things (`ExtractionQueue.discard`), and those
        kept in the store for them (of any process)."""
        self.journal.forget(tenant, list(scopes), threads)
        if self.queue is None:
            return 0
        return self.queue.discard(tenant, scopes=scopes, threads=threads, messages=messages)

    def depth(self) -> int:
        """Pending (scope, thread) snapshots: the queue-depth metric (0 with extraction off)."""
        return 0 if self.queue is None else self.queue.depth()

    def close(self) -> None:
        """Stop the queue's worker, after a run under way ends; what is still queued is kept
        in the store for the next open, and a warning says how many (flush first to run them)."""
        if self.queue is not None:
            self.journal.release(self.queue.close())

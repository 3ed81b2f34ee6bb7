"""The writer of recorded model calls: records queued off the hot path and stored in batches by
a thread, trimmed to the retention settings, and the rewriting of stored records when what they
quote is erased or deleted (`Scrubbing`). Below `app/calls.py`, which reads, replays and
compares them, so the services that delete (lifecycle, facts, memories) reach it alone.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from recall.core.calls import CallRecord, Deletion, Erasure, call_items, digest, now_utc, quoted_people
from recall.core.context_records import Context
from recall.errors import InvalidInputError
from recall.settings import Settings
from recall.store.base import Store
from recall.store.call_log import senders_text
from recall.store.records import NewCall

logger = logging.getLogger("recall.calls")

#: Records the writer stores per transaction, at most.
WRITE_BATCH = 200
#: Records queued at most: past it, a caller writes its own record (calls come faster than the
#: writer stores them, ~400/s on 2 cores: the queue stays bounded and no record is lost).
MAX_QUEUED = 5_000
#: Seconds an erase is remembered by the writer, for records of contexts built before it.
ERASURE_MEMORY = 600.0
#: Seconds between trims of the agents' calls by age.
TRIM_BY_AGE_EVERY = 60.0


def record_of(context: Context, call_id: str, source: str, at: datetime, copies: str = "ids") -> CallRecord:
    """The record of a context the service built (`context.params` set)."""
    params = context.params
    if params is None:
        raise InvalidInputError("context", "only a context built by recall can be recorded")
    report = context.report
    items = call_items(report.items)
    seen = [int(i.id) for i in items if i.kind == "message" and isinstance(i.id, int)]
    through = max([*seen, params.trigger_id or 0], default=0)
    settings = {**params.settings, "explicit": dict(params.explicit)}
    return CallRecord(
        call_id,
        params.world_key,
        report.agent_id,
        report.chat_id,
        params.trigger_id,
        at,
        source,
        params.model,
        report.encoding,
        settings,
        dict(report.sections),
        report.total_tokens,
        report.excluded,
        tuple(items),
        digest(context),
        through,
        messages=tuple(context.openai()) if copies == "full" else None,
    )


def pack(record: CallRecord) -> bytes:
    """The stored body of a record: its `body()` as compact JSON, compressed."""
    return zlib.compress(json.dumps(record.body(), separators=(",", ":")).encode(), 6)


def decoded(body: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(zlib.decompress(body))
    return data


@dataclass
class Pending:
    """A call queued for the writer: its context, packed into a row when it is written (the
    caller pays for queueing only); `seq` its place in the order of queueing."""

    call_id: str
    source: str
    at: datetime
    context: Context
    copies: str
    seq: int = 0

    def row(self, erasures: Sequence[Erasure | Deletion] = ()) -> NewCall:
        """The row to store, without anything of the people erased since it was built."""
        record = record_of(self.context, self.call_id, self.source, self.at, self.copies)
        senders = [i.sender for i in self.context.report.items if i.kind == "message" and i.sender]
        for erasure in erasures:
            record = erasure.scrub(record)
            senders = [s for s in senders if s.lower() != erasure.person]
        quoted = quoted_people(record.items, senders)
        return NewCall(record.id, record.world_id, record.agent_id, record.chat_id, record.trigger_id, self.at,
                       self.source, record.digest, pack(record),
                       senders_text(quoted, full_copy=record.messages is not None))  # fmt: skip


class CallWriter:
    """The thread that stores queued records, in batches, and trims each agent's calls.

    A batch leaves the queue only once the writer holds `_writing` (which an erase holds too,
    `paused`), and every record is stored under `_writing` without what the erasures of its
    world in the last ERASURE_MEMORY seconds took out: a context built before an erase and
    recorded after it quotes no one erased."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self._queue: list[Pending] = []
        #: Seqs queued and not yet stored (or given up): what `flush` waits for.
        self._outstanding: set[int] = set()
        self._seq = 0
        #: Records each agent had written since its calls were last trimmed by count.
        self._since_trim: dict[tuple[str, str], int] = {}
        self._trimmed_at = 0.0
        #: Recent erasures and deletions by world key ('': of every world): (when, what).
        self._erasures: dict[str, list[tuple[float, Erasure | Deletion]]] = {}
        self._lock = threading.Condition()
        self._writing = threading.Lock()
        self._stopped = False
        self._thread: threading.Thread | None = None
        #: Records lost to a store error (logged).
        self.lost = 0

    def put(self, call: Pending) -> None:
        with self._lock:
            self._seq += 1
            call.seq = self._seq
            if not self._stopped and len(self._queue) < MAX_QUEUED:
                self._queue.append(call)
                self._outstanding.add(call.seq)
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._run, name="recall-call-writer", daemon=True)
                    self._thread.start()
                self._lock.notify_all()
                return
        self._write([call])  # stopped (a context built while closing), or the queue full: written at once

    def flush(self) -> None:
        """Return once every record queued before the call is stored (later ones may wait)."""
        with self._lock:
            upto = self._seq
            while (
                any(seq <= upto for seq in self._outstanding) and self._thread is not None and self._thread.is_alive()
            ):
                self._lock.wait(timeout=1.0)
            left = [p for p in self._queue if p.seq <= upto]
            self._queue = [p for p in self._queue if p.seq > upto]
        if left:  # no writer thread (stopped): written here
            self._write(left)

    def stop(self) -> None:
        """Write what is queued and end the thread."""
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()
        self.flush()

    def scrubbing(self) -> Scrubbing:
        """For an erase or a deletion: `with writer.scrubbing() as scrub:` around its
        transaction, and inside it `scrub.forget(db, world_key, person, ids)` takes an erased
        person's messages and facts out of every stored record of the world that quotes them,
        `scrub.forget_copies(db, world_key, items)` the copy of the messages as sent out of every
        record whose copy showed a deleted message, fact or memory. What is queued is stored
        first; once the transaction commits, records stored later leave the same out."""
        self.flush()
        return Scrubbing(self, self.store)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No record is stored meanwhile (an erase's transaction runs)."""
        with self._writing:
            yield

    def remember(self, world_key: str, erasure: Erasure | Deletion) -> None:
        """Store every record of the world ('': of every world) from now on without what
        `erasure` took out (for ERASURE_MEMORY seconds: contexts built before it are recorded
        long before then)."""
        with self._lock:
            self._erasures.setdefault(world_key.lower(), []).append((time.monotonic(), erasure))

    def _recent_erasures(self, world_key: str) -> list[Erasure | Deletion]:
        oldest = time.monotonic() - ERASURE_MEMORY
        with self._lock:
            for key in [k for k, found in self._erasures.items() if found[-1][0] < oldest]:
                del self._erasures[key]
            found = [*self._erasures.get(world_key.lower(), ()), *self._erasures.get("", ())]
            return [erasure for at, erasure in found if at >= oldest]

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopped:
                    self._lock.wait()
                if not self._queue:
                    return
            with self._writing:
                with self._lock:
                    batch, self._queue = self._queue[:WRITE_BATCH], self._queue[WRITE_BATCH:]
                try:
                    if batch:
                        self._store(batch)
                except Exception:  # a store closing, busy or failing: these records are lost, not the thread
                    self.lost += len(batch)
                    logger.exception("recorded calls: %d record(s) could not be stored", len(batch))
                finally:
                    with self._lock:
                        self._outstanding.difference_update(p.seq for p in batch)
                        self._lock.notify_all()

    def _write(self, batch: Sequence[Pending]) -> None:
        with self._writing:
            self._store(batch)

    def _store(self, batch: Sequence[Pending]) -> None:
        """Store the batch (under `_writing`) and trim the agents' calls to the retention."""
        rows = [pending.row(self._recent_erasures(pending.context.params.world_key)) for pending in batch if
                pending.context.params is not None]  # fmt: skip
        self.store.add_calls(rows)
        keep = self.settings.call_retention_count
        for row in rows:
            agent = (row.world_id, row.agent_id.lower())
            self._since_trim[agent] = self._since_trim.get(agent, 0) + 1
        days = self.settings.call_retention_days
        by_age = days > 0 and time.monotonic() - self._trimmed_at >= TRIM_BY_AGE_EVERY
        older = now_utc() - timedelta(days=days) if by_age else None
        if by_age:
            self._trimmed_at = time.monotonic()
        for agent, written in list(self._since_trim.items()):
            # Trimming by count walks the agent's newest `keep` calls: done once a tenth of that
            # is new; by age, at most once a minute.
            if written >= max(1, keep // 10) or older is not None:
                self.store.trim_calls(*agent, keep=keep, older_than=older)
                del self._since_trim[agent]


class Scrubbing:
    """An erase's or a deletion's hold on the writer (`CallWriter.paused`): inside its
    transaction `forget` and `forget_copies` rewrite the stored records; once it commits, the
    records stored later leave the same out."""

    def __init__(self, writer: CallWriter, store: Store) -> None:
        self.writer = writer
        self.store = store
        self.done: list[tuple[str, Erasure | Deletion]] = []
        self._paused: AbstractContextManager[None] | None = None

    def __enter__(self) -> Scrubbing:
        self._paused = self.writer.paused()
        self._paused.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: Any) -> None:
        assert self._paused is not None
        try:
            if kind is None:  # committed: what is stored from now on leaves the person out too
                for world_key, erasure in self.done:
                    self.writer.remember(world_key, erasure)
        finally:
            self._paused.__exit__(kind, *exc)

    def forget(self, db: Any, world_key: str, person: str, message_ids: Iterable[int]) -> int:
        """Inside the erase's transaction: take these messages of `person`, and their facts, out
        of every record of the world that quotes them (a column of the call says whom it quotes,
        read without its body); how many changed."""
        erasure = Erasure(person.lower(), frozenset(int(i) for i in message_ids))
        self.done.append((world_key, erasure))
        return self.store.rewrite_calls(db, world_key, erasure.person, erasure.messages, _scrubber(erasure))

    def forget_copies(
        self, db: Any, world_key: str | None, items: Iterable[tuple[str, int]], tenant: str | None = None
    ) -> int:
        """Inside a deletion's transaction: every stored record of the world (None: of every
        world of `tenant`, as a fact may be quoted in any) whose copy of the messages as sent
        showed one of `items` (kind, id) loses that copy; how many changed."""
        deletion = Deletion(frozenset(items))
        self.done.append((world_key or "", deletion))
        return self.store.rewrite_copies(db, world_key, _scrubber(deletion), tenant)


def _scrubber(erasure: Erasure | Deletion) -> Callable[[bytes, int | None], bytes | None]:
    """A stored record's body, of a call that answered `trigger`, without anything of the
    erased person (None: it held nothing): `Erasure.scrub`, as a record still queued gets it."""

    def scrub(body: bytes, trigger: int | None) -> bytes | None:
        record = CallRecord.from_body(
            decoded(body), call_id="", world_id="", agent_id="", chat_id=None, trigger_id=trigger,
            at=datetime.fromtimestamp(0, UTC), source="", call_digest="",
        )  # fmt: skip
        if isinstance(erasure, Deletion) and record.messages is None:
            return body  # no copy (marked by the migration to be safe): the same body, the mark goes
        scrubbed = erasure.scrub(record)
        return None if scrubbed is record else pack(scrubbed)

    return scrub

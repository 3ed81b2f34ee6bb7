"""Recorded model calls: what each model call's context held (`core/calls.py`), written in the
background, read back per agent, replayed from the store and compared.

Recording is off the hot path: `record` renders the record and queues it; a writer thread
stores queued records in batches and trims the agent's calls to the retention settings. A
record is readable as soon as `record` returns (a read writes what is queued first).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from recall.app.context import Contexts
from recall.app.validation import check_int, could_be_stored
from recall.app.worlds import Worlds
from recall.core.calls import (
    MAX_ERROR_CHARS,
    OUTCOMES,
    SOURCES,
    CallDiff,
    CallItem,
    CallRecord,
    Erasure,
    call_items,
    diff,
    digest,
    now_utc,
    quoted_people,
)
from recall.core.context_records import Context
from recall.core.recalled import SECTION as RECALLED
from recall.errors import InvalidInputError, NotFoundError, UnknownCallError
from recall.limits import check_time
from recall.settings import Settings
from recall.store.base import Store
from recall.store.call_log import CallRow, NewCall, senders_text

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
#: Calls a listing returns at most.
MAX_LIST = 500
COPIES = ("ids", "full")
#: The settings a replay or a comparison may set for the rebuilt context.
OVERRIDES = ("max_tokens", "history_limit", "channel", "recalled_max_tokens")


@dataclass(frozen=True)
class Replay:
    """A recorded call rebuilt from the store: `context` what the model would get now from the
    same trigger and the same explicit settings (None when it cannot be rebuilt: `notes` say
    why), `now` its record, and `diff` item by item (`diff.identical`: the same bytes)."""

    call: CallRecord
    context: Context | None
    now: CallRecord | None
    diff: CallDiff | None
    notes: tuple[str, ...] = ()

    @property
    def identical(self) -> bool:
        return self.diff is not None and self.diff.identical

    def to_dict(self) -> dict[str, Any]:
        return {
            "call": self.call.to_dict(),
            "identical": self.identical,
            "now": None if self.now is None else self.now.to_dict(),
            "diff": None if self.diff is None else self.diff.to_dict(),
            "messages": None if self.context is None else self.context.openai(),
            "notes": list(self.notes),
        }


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


def _decoded(body: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(zlib.decompress(body))
    return data


def unpack(row: CallRow, world_id: str, with_items: bool = True) -> CallRecord:
    record = CallRecord.from_body(
        _decoded(row.body),
        with_items=with_items,
        call_id=row.id,
        world_id=world_id,
        agent_id=row.agent_id,
        chat_id=row.chat_id,
        trigger_id=row.trigger_id,
        at=row.created_at,
        source=row.source,
        call_digest=row.digest,
    )
    return replace(record, outcome=row.outcome, error=row.error)


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

    def row(self, erasures: Sequence[Erasure] = ()) -> NewCall:
        """The row to store, without anything of the people erased since it was built."""
        record = record_of(self.context, self.call_id, self.source, self.at, self.copies)
        senders = [i.sender for i in self.context.report.items if i.kind == "message" and i.sender]
        for erasure in erasures:
            record = erasure.scrub(record)
            senders = [s for s in senders if s.lower() != erasure.person]
        quoted = quoted_people(record.items, senders)
        return NewCall(record.id, record.world_id, record.agent_id, record.chat_id, record.trigger_id, self.at,
                       self.source, record.digest, pack(record), senders_text(quoted))  # fmt: skip


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
        #: Recent erasures by world key: (when, what).
        self._erasures: dict[str, list[tuple[float, Erasure]]] = {}
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

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No record is stored meanwhile (an erase's transaction runs)."""
        with self._writing:
            yield

    def remember(self, world_key: str, erasure: Erasure) -> None:
        """Store every record of the world from now on without what `erasure` took out (for
        ERASURE_MEMORY seconds: contexts built before it are recorded long before then)."""
        with self._lock:
            self._erasures.setdefault(world_key.lower(), []).append((time.monotonic(), erasure))

    def _recent_erasures(self, world_key: str) -> list[Erasure]:
        oldest = time.monotonic() - ERASURE_MEMORY
        with self._lock:
            for key in [k for k, found in self._erasures.items() if found[-1][0] < oldest]:
                del self._erasures[key]
            return [erasure for at, erasure in self._erasures.get(world_key.lower(), ()) if at >= oldest]

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


@dataclass(frozen=True, eq=False)
class CallLog:
    """Records model calls, reads them back, replays and compares them."""

    store: Store
    settings: Settings
    worlds: Worlds
    contexts: Contexts
    writer: CallWriter

    def record(self, context: Context, source: str) -> Context:
        """Record `context` as a model call from `source`; the context with its `call_id` (as
        given when recording is off: `call_retention_count` 0)."""
        if source not in SOURCES:
            raise InvalidInputError("source", f"must be one of {', '.join(SOURCES)}, got {source!r}")
        if context.params is None:
            raise InvalidInputError("context", "only a context built by recall can be recorded")
        if self.settings.call_retention_count <= 0:
            return context
        copies = self.settings.call_copies
        if copies not in COPIES:
            raise InvalidInputError("call_copies", f"must be one of {', '.join(COPIES)}, got {copies!r}")
        call_id = "c_" + uuid.uuid4().hex[:20]
        self.writer.put(Pending(call_id, source, now_utc(), context, copies))
        return replace(context, call_id=call_id)

    def get(self, world_id: str, agent_id: str, call_id: str) -> CallRecord:
        world = self.worlds.get_world(world_id)
        agent = self.worlds.get_agent(world.key, agent_id)
        if not isinstance(call_id, str) or not call_id:
            raise InvalidInputError("call_id", "must be the id of a recorded call (c_…)")
        self.writer.flush()
        row = self.store.get_call(world.key, agent.id, call_id) if could_be_stored(call_id) else None
        if row is None:
            raise UnknownCallError(call_id, agent.id)
        return unpack(row, world.key)

    def list(
        self, world_id: str, agent_id: str, *, before: datetime | None = None, limit: int = 50
    ) -> list[CallRecord]:
        """The agent's recorded calls, newest first, without their items (`counts` says how
        many; `get` reads one whole)."""
        world = self.worlds.get_world(world_id)
        agent = self.worlds.get_agent(world.key, agent_id)
        check_int("limit", limit, 1, MAX_LIST)
        if before is not None:
            before = check_time("before", before)  # a naive time is UTC, as everywhere
        self.writer.flush()
        return [
            unpack(row, world.key, with_items=False)
            for row in self.store.list_calls(world.key, agent.id, before=before, limit=limit)
        ]

    def report_outcome(self, world_id: str, agent_id: str, call_id: str, error: str | None = None) -> CallRecord:
        """Record what came of one of the agent's calls: the model answered (`error` None) or
        failed (`error` says how; cut to MAX_ERROR_CHARS). Reported again, the last report
        stands. The call with its outcome."""
        world = self.worlds.get_world(world_id)
        agent = self.worlds.get_agent(world.key, agent_id)
        if not isinstance(call_id, str) or not call_id:
            raise InvalidInputError("call_id", "must be the id of a recorded call (c_…)")
        if error is not None and (not isinstance(error, str) or not error.strip()):
            raise InvalidInputError("error", "must say how the call failed (a non-empty text), or be None")
        outcome, detail = (OUTCOMES[0], None) if error is None else (OUTCOMES[1], error.strip()[:MAX_ERROR_CHARS])
        self.writer.flush()  # a call still queued is stored first
        if not self.store.set_call_outcome(world.key, agent.id, call_id, outcome, detail):
            raise UnknownCallError(call_id, agent.id)
        return self.get(world_id, agent_id, call_id)

    def replay(self, world_id: str, agent_id: str, call_id: str) -> Replay:
        """Rebuild a recorded call's context from the store (same trigger, same explicit
        settings), and say whether the bytes are the same and, item by item, what changed."""
        call = self.get(world_id, agent_id, call_id)
        return self._rebuilt(world_id, call, dict(call.settings.get("explicit", {})))

    def compare(self, world_id: str, agent_id: str, call_id: str, other: str | None = None, **overrides: Any) -> Replay:
        """Call `call_id` beside another recorded call (`other`), or beside its own context
        rebuilt now with `overrides` (settings of `OVERRIDES`): what the settings change does."""
        call = self.get(world_id, agent_id, call_id)
        unknown = sorted(set(overrides) - set(OVERRIDES))
        if unknown:
            raise InvalidInputError(unknown[0], f"is not a setting a comparison takes ({', '.join(OVERRIDES)})")
        if other is not None:
            if overrides:
                raise InvalidInputError("other", "compares two recorded calls as they were: give no settings with it")
            second = self.get(world_id, agent_id, other)
            return Replay(call, None, second, diff(call, second, self._explain(call, second)))
        explicit = {**dict(call.settings.get("explicit", {})), **{k: v for k, v in overrides.items() if v is not None}}
        return self._rebuilt(world_id, call, explicit)

    def _rebuilt(self, world_id: str, call: CallRecord, explicit: Mapping[str, Any]) -> Replay:
        if call.trigger_erased or (
            call.trigger_id is not None and self.store.get_message(call.world_id, call.trigger_id) is None
        ):
            why = "the message it answered was deleted or erased since"
            return Replay(call, None, None, None, (f"the call cannot be rebuilt: {why}", *_erased_note(call)))
        try:
            context = self.contexts.build_context(
                world_id, call.agent_id, call.chat_id, message_id=call.trigger_id, **explicit
            )
        except NotFoundError as exc:
            return Replay(call, None, None, None, (f"the call cannot be rebuilt: {exc}",))
        now = record_of(context, call.id, call.source, now_utc())
        notes: tuple[str, ...] = ()
        blocks = call.settings.get("caller_blocks") or []
        if blocks or call.settings.get("observation"):
            notes = (
                "the call had blocks its caller gave"
                + (f" ({', '.join(blocks)})" if blocks else "")
                + (" and an observation" if call.settings.get("observation") else "")
                + "; they are not stored, so the rebuilt context lacks them",
            )
        return Replay(call, context, now, diff(call, now, self._explain(call, now)), notes)

    def _explain(self, a: CallRecord, b: CallRecord) -> dict[tuple[str, int | str | None], str]:
        """What the store says of each item that is in one context and not the other, or whose
        text changed: deleted since, edited since, added since."""
        out: dict[tuple[str, int | str | None], str] = {}
        before = {i.key: i for i in a.items}
        after = {i.key: i for i in b.items}
        messages = [i.id for i in a.items if i.kind == "message" and isinstance(i.id, int) and i.included]
        present = self.store.messages_among(a.world_id, [int(m) for m in messages]) if messages else {}
        tenant = self.worlds.get_world(a.world_id).tenant
        for key, item in before.items():
            kind, item_id = key
            if kind == "message" and item.included and item_id not in present:
                out[key] = "deleted since the call"
            elif kind == "fact" and isinstance(item_id, int):
                scope = str(item.scores.get("scope", ""))
                fact = self.store.get_fact(tenant, scope, item_id)
                if fact is None:
                    out[key] = "deleted since the call"
                elif key in after and after[key].version != item.version:
                    out[key] = "edited since the call"
            elif kind == "memory" and isinstance(item_id, int):
                if self.store.get_memory(a.world_id, item_id) is None:
                    out[key] = "deleted (or expired) since the call"
                elif key in after and after[key].version != item.version:
                    out[key] = "edited since the call"
        for key, item in after.items():
            if key not in before and item.included and item.kind in ("fact", "memory"):
                out[key] = f"a {item.kind} the call's context did not list (added, or ranked in, since)"
        changed = _changed_settings(a, b)
        for key in set(before) | set(after):
            if key in out:
                continue
            if changed:
                out[key] = "settings changed: " + ", ".join(changed)
            elif key[0] == "message" and RECALLED in {i.section for i in (before.get(key), after.get(key)) if i}:
                out[key] = _searched_anew(before.get(key), after.get(key))
        return out

    def erasing(self) -> _Erasure:
        """For an erase: `with log.erasing() as erasure:` around the erase's transaction, and
        `erasure.forget(db, world_key, person, ids)` inside it takes the erased messages (all
        said by `person`) and the person's facts out of every stored record of the world that
        quotes them; once the transaction is committed, records stored later leave them out too."""
        self.writer.flush()
        return _Erasure(self.writer, self.store)


class _Erasure:
    def __init__(self, writer: CallWriter, store: Store) -> None:
        self.writer = writer
        self.store = store
        self.done: list[tuple[str, Erasure]] = []
        self._paused: AbstractContextManager[None] | None = None

    def __enter__(self) -> _Erasure:
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


def _scrubber(erasure: Erasure) -> Callable[[bytes, int | None], bytes | None]:
    """A stored record's body, of a call that answered `trigger`, without anything of the
    erased person (None: it held nothing): `Erasure.scrub`, as a record still queued gets it."""

    def scrub(body: bytes, trigger: int | None) -> bytes | None:
        record = CallRecord.from_body(
            _decoded(body), call_id="", world_id="", agent_id="", chat_id=None, trigger_id=trigger,
            at=datetime.fromtimestamp(0, UTC), source="", call_digest="",
        )  # fmt: skip
        scrubbed = erasure.scrub(record)
        return None if scrubbed is record else pack(scrubbed)

    return scrub


def _erased_note(call: CallRecord) -> tuple[str, ...]:
    if not call.erased:
        return ()
    return (f"{call.erased} item(s) of the call quoted a person erased since: their ids are gone from the record",)


def _searched_anew(a: CallItem | None, b: CallItem | None) -> str:
    """Why a recalled passage scored otherwise with the same settings and the same trigger: a
    message never changes, so the search did (its words' rarity moves with every message indexed
    or deleted, and a vector joins once the message is embedded)."""
    if b is not None and "similarity" in b.scores and (a is None or "similarity" not in a.scores):
        return "embedded since the call: its meaning now counts beside its words"
    return "the search index changed since the call (messages indexed, embedded or deleted since move its scores)"


def _changed_settings(a: CallRecord, b: CallRecord) -> list[str]:
    return [
        f"{name} {a.settings.get(name)!r} → {b.settings.get(name)!r}"
        for name in sorted({*a.settings, *b.settings} - {"explicit"})
        if a.settings.get(name) != b.settings.get(name)
    ]

"""Recorded model calls: what each model call's context held (`core/calls.py`), written in the
background, read back per agent, replayed from the store and compared.

Recording is off the hot path: `record` renders the record and queues it; a writer thread
stores queued records in batches and trims the agent's calls to the retention settings. A
record is readable as soon as `record` returns (a read writes what is queued first).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from recall.app.call_writer import CallWriter, Pending, Scrubbing, decoded, record_of
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
    diff,
    now_utc,
)
from recall.core.context_records import Context
from recall.core.recalled import SECTION as RECALLED
from recall.errors import InvalidInputError, NotFoundError, UnknownCallError
from recall.limits import check_time
from recall.settings import Settings
from recall.store.base import Store
from recall.store.records import CallRow

logger = logging.getLogger("recall.calls")

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


def unpack(row: CallRow, world_id: str, with_items: bool = True) -> CallRecord:
    record = CallRecord.from_body(
        decoded(row.body),
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
        stored = could_be_stored(call_id) and self.store.set_call_outcome(world.key, agent.id, call_id, outcome, detail)
        if not stored:
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

    def scrubbing(self) -> Scrubbing:
        """For an erase or a deletion: `with log.scrubbing() as scrub:` around its transaction
        (`CallWriter.scrubbing`)."""
        return self.writer.scrubbing()


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

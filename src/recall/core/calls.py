"""A model call's record (what its context held, compactly) and how two contexts compare.

A context is a pure function of stored data and the settings it was built with, so a record
need not copy its text: it keeps the ids of what each section held, with a short version of
what a fact or a memory said then, each candidate left out with its reason and scores, the
token counts, the settings, and a hash of the rendered bytes. Rebuilding the call from the store
and comparing the two says whether the model would get the same bytes today and, where not,
which item changed and how (`diff`).

Pure: plain data in, plain data out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from recall.core.context_parts import ReportItem
from recall.core.context_records import Context

#: The record's layout: a reader refuses a newer one rather than misread it.
RECORD_FORMAT = 1

#: Why a message was left out that is a rule of the routing, not a choice of this call: counted
#: (in `excluded`), never listed (a busy agent's memory would fill the record with them).
UNLISTED_REASONS = frozenset({"other-chat", "after-trigger", "not-addressed", "system-sender", "turn-limit-notice"})

#: Candidates left out listed per section, at most: the nearest misses (a recalled past may have
#: hundreds; the rest are counted in `excluded`).
MAX_LISTED_OUT = 20

#: Where calls come from.
SOURCES = ("python", "runner", "rest", "mcp", "inbox", "langchain")
#: What a caller may report of a call.
OUTCOMES = ("answered", "failed")
#: The longest error a reported outcome keeps (a model server's message, cut).
MAX_ERROR_CHARS = 2_000


def rendered_bytes(context: Context) -> bytes:
    """The context as a model receives it, in a canonical byte form: what the digest hashes."""
    return json.dumps(context.openai(), ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def digest(context: Context) -> str:
    """sha256 of the rendered context, hex."""
    return hashlib.sha256(rendered_bytes(context)).hexdigest()


def version(text: str) -> str:
    """A short fingerprint of what an item said (8 hex digits): whether it changed, not what."""
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class CallItem:
    """One item of a recorded context: a message, fact, memory or block, in its section or left
    out with its reason; `rank` its place among the section's candidates; `scores` why it
    ranked there; `version` what a fact or memory said (None for messages: they never change)."""

    section: str
    kind: str
    id: int | str | None
    included: bool
    rank: int
    tokens: int = 0
    reason: str | None = None
    version: str | None = None
    scores: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int | str | None]:
        return (self.kind, self.id)

    def to_list(self) -> list[Any]:
        return [self.section, self.kind, self.id, self.included, self.rank, self.tokens, self.reason, self.version,
                dict(self.scores)]  # fmt: skip

    @classmethod
    def from_list(cls, row: Sequence[Any]) -> CallItem:
        section, kind, item_id, included, rank, tokens, reason, item_version, scores = row
        return cls(section, kind, item_id, bool(included), int(rank), int(tokens), reason, item_version, scores or {})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"section": self.section, "kind": self.kind, "id": self.id, "included": self.included}
        out["rank"] = self.rank
        if self.included:
            out["tokens"] = self.tokens
        else:
            out["reason"] = self.reason
        if self.version is not None:
            out["version"] = self.version
        out.update(self.scores)
        return out


@dataclass(frozen=True)
class CallRecord:
    """What one model call's context held (see the module's notes). `settings` are those that
    shaped it (budget, history depth, the recalled past's cap, the channel, the context filter,
    the system prompt's version); `through` the newest message id of the world when it was built;
    `erased` how many of its items were removed since because their person was erased."""

    id: str
    world_id: str
    agent_id: str
    chat_id: str | None
    trigger_id: int | None
    at: datetime
    source: str
    model: str
    encoding: str
    settings: Mapping[str, Any]
    sections: Mapping[str, int]
    total_tokens: int
    excluded: Mapping[str, int]
    items: tuple[CallItem, ...]
    digest: str
    through: int = 0
    erased: int = 0
    #: The messages as sent (OpenAI form), when the store keeps full copies.
    messages: tuple[Mapping[str, Any], ...] | None = None
    #: Items in the context and left out; set when `items` was not read (a listing).
    counted: tuple[int, int] | None = None
    #: What came of the call, as its caller reported it: None (nothing reported), "answered" or
    #: "failed" (then `error` says how: the runner reports a model server that did not answer).
    outcome: str | None = None
    error: str | None = None
    #: The message it answered was erased since (`trigger_id` is None then): it cannot be rebuilt.
    trigger_erased: bool = False

    @property
    def counts(self) -> tuple[int, int]:
        """(items in the context, candidates left out and listed)."""
        if self.counted is not None:
            return self.counted
        inside = sum(1 for i in self.items if i.included)
        return inside, len(self.items) - inside

    def _built_with(self) -> dict[str, Any]:
        """How the context was built and what it holds, as both `body` and `to_dict` give it."""
        return {
            "model": self.model,
            "encoding": self.encoding,
            "settings": dict(self.settings),
            "sections": dict(self.sections),
            "total_tokens": self.total_tokens,
            "excluded": dict(self.excluded),
        }

    def body(self) -> dict[str, Any]:
        """What the store keeps beside the indexed columns."""
        out: dict[str, Any] = {
            "format": RECORD_FORMAT,
            **self._built_with(),
            "items": [item.to_list() for item in self.items],
            "counts": list(self.counts),
            "through": self.through,
            "erased": self.erased,
        }
        if self.trigger_erased:
            out["trigger_erased"] = True
        if self.messages is not None:
            out["messages"] = [dict(m) for m in self.messages]
        return out

    @classmethod
    def from_body(
        cls,
        body: Mapping[str, Any],
        *,
        call_id: str,
        world_id: str,
        agent_id: str,
        chat_id: str | None,
        trigger_id: int | None,
        at: datetime,
        source: str,
        call_digest: str,
        with_items: bool = True,
    ) -> CallRecord:
        """The record of a stored body; without `with_items` its items are not read (a listing
        needs their counts only)."""
        if body.get("format") != RECORD_FORMAT:
            raise ValueError(f"call {call_id} has record format {body.get('format')!r}, not {RECORD_FORMAT}")
        messages = body.get("messages")
        counts = body.get("counts") or [0, 0]
        return cls(
            call_id,
            world_id,
            agent_id,
            chat_id,
            trigger_id,
            at,
            source,
            str(body["model"]),
            str(body["encoding"]),
            dict(body["settings"]),
            dict(body["sections"]),
            int(body["total_tokens"]),
            dict(body["excluded"]),
            tuple(CallItem.from_list(row) for row in body["items"]) if with_items else (),
            call_digest,
            int(body.get("through", 0)),
            int(body.get("erased", 0)),
            None if messages is None else tuple(messages),
            None if with_items else (int(counts[0]), int(counts[1])),
            trigger_erased=bool(body.get("trigger_erased", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "world_id": self.world_id,
            "agent_id": self.agent_id,
            "chat_id": self.chat_id,
            "trigger_id": self.trigger_id,
            "at": self.at.isoformat(),
            "source": self.source,
            **self._built_with(),
            "counts": {"included": self.counts[0], "left_out": self.counts[1]},
            "digest": self.digest,
            "through": self.through,
            "erased": self.erased,
            "trigger_erased": self.trigger_erased,
            "outcome": self.outcome,
            "error": self.error,
        }
        if self.counted is None:
            out["items"] = [item.to_dict() for item in self.items]
        if self.messages is not None:
            out["messages"] = [dict(m) for m in self.messages]
        return out


def call_items(report_items: Sequence[ReportItem]) -> list[CallItem]:
    """The record's items of a context report: every item in the context, and the candidates
    left out for a reason of this call (budget, cutoff, depth …: the first MAX_LISTED_OUT of
    each section, with their score), ranked within their section in the report's order (or by
    the rank the report gives), with a fact's or memory's `version`."""
    ranks: dict[tuple[str, str], int] = {}
    left_out: dict[str, int] = {}
    out: list[CallItem] = []
    for item in report_items:
        if not item.included and item.reason in UNLISTED_REASONS:
            continue
        section = item.section or "history"
        place = ranks[(section, item.kind)] = ranks.get((section, item.kind), 0) + 1
        scores = dict(item.score or {})
        rank = int(scores.pop("rank", place))
        item_version = scores.pop("version", None)
        if not item.included:
            left_out[section] = left_out.get(section, 0) + 1
            if left_out[section] > MAX_LISTED_OUT:
                continue
            scores = {name: value for name, value in scores.items() if name in ("score", "scope")}
        out.append(
            CallItem(
                section,
                item.kind,
                item.id,
                item.included,
                rank,
                item.tokens if item.included else 0,
                item.reason,
                item_version,
                scores,
            )  # fmt: skip
        )
    return out


# -- erasing a person from records ---------------------------------------------------------------


@dataclass(frozen=True)
class Erasure:
    """What erasing a person takes out of a world's call records: the messages they said (by
    id) and the facts of their `user:` scope; `person` lowercased."""

    person: str
    messages: frozenset[int]

    def drops(self, item: CallItem) -> bool:
        if item.kind == "message":
            return item.id in self.messages
        return item.kind == "fact" and str(item.scores.get("scope", "")).lower() == f"user:{self.person}"

    def scrub(self, record: CallRecord) -> CallRecord:
        """The record without anything of the person (the same record when it held nothing):
        no item of theirs, no trigger of theirs, no full copy that may quote them."""
        kept = tuple(i for i in record.items if not self.drops(i))
        erased_trigger = record.trigger_id in self.messages
        if len(kept) == len(record.items) and not erased_trigger:
            return record
        gone = len(record.items) - len(kept)
        return replace(
            record,
            items=kept,
            trigger_id=None if erased_trigger else record.trigger_id,
            trigger_erased=record.trigger_erased or erased_trigger,
            erased=record.erased + gone,
            messages=None,
        )


@dataclass(frozen=True)
class Deletion:
    """What deleting messages, facts or memories takes out of the calls that quoted them: the
    copy of the messages as sent (`call_copies = "full"`), which holds their text. The items
    stay: they hold ids and versions, no text, and a replay says each is deleted since."""

    #: (kind, id) of what was deleted.
    items: frozenset[tuple[str, int]]
    #: No one leaves a record's senders (an erase's person does).
    person: str = ""

    def scrub(self, record: CallRecord) -> CallRecord:
        """The record without its copy when the copy showed a deleted item (else the same record)."""
        if record.messages is None or not any(i.included and (i.kind, i.id) in self.items for i in record.items):
            return record
        return replace(record, messages=None)


def quoted_people(items: Sequence[CallItem], senders: Iterable[str]) -> set[str]:
    """Whom a record quotes, lowercased: the senders of its messages and the people whose
    `user:` facts it lists (an erase rewrites only the records that quote the person)."""
    people = {s.lower() for s in senders if s}
    for item in items:
        scope = str(item.scores.get("scope", "")) if item.kind == "fact" else ""
        if scope.lower().startswith("user:"):
            people.add(scope[5:].lower())
    return people


# -- comparing two contexts ---------------------------------------------------------------------


@dataclass(frozen=True)
class ItemChange:
    """How one item differs between two contexts `a` (before) and `b` (after): `added` (in b's
    context, not a's), `removed` (the reverse), `moved` (in both, another section or rank),
    `edited` (in both, its text changed), `rescored` (in or out of both alike, other scores).
    `reason_*` say why it was out where it was; `why` what explains the change, when known."""

    change: str
    kind: str
    id: int | str | None
    a: CallItem | None
    b: CallItem | None
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "kind": self.kind,
            "id": self.id,
            "a": None if self.a is None else self.a.to_dict(),
            "b": None if self.b is None else self.b.to_dict(),
            "why": self.why,
        }


@dataclass(frozen=True)
class CallDiff:
    """Two contexts side by side: whether their bytes are the same, the settings that differ,
    and each item that differs."""

    identical: bool
    settings: Mapping[str, tuple[Any, Any]]
    items: tuple[ItemChange, ...]
    tokens: tuple[int, int]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "identical": self.identical,
            "settings": {name: {"a": a, "b": b} for name, (a, b) in self.settings.items()},
            "items": [change.to_dict() for change in self.items],
            "tokens": {"a": self.tokens[0], "b": self.tokens[1]},
            "notes": list(self.notes),
        }


def diff(a: CallRecord, b: CallRecord, explain: Mapping[tuple[str, int | str | None], str] | None = None) -> CallDiff:
    """How context `b` differs from `a`, item by item. `explain` gives, by (kind, id), what is
    known of an item's change (e.g. "deleted since the call"); the caller looks it up."""
    explain = explain or {}
    settings = {
        name: (a.settings.get(name), b.settings.get(name))
        for name in sorted({*a.settings, *b.settings})
        if a.settings.get(name) != b.settings.get(name)
    }
    before = {item.key: item for item in a.items if item.kind != "block"}
    after = {item.key: item for item in b.items if item.kind != "block"}
    reordered = _reordered(before, after)
    changes: list[ItemChange] = []
    for key in [*before, *(k for k in after if k not in before)]:
        old, new = before.get(key), after.get(key)
        change = "moved" if key in reordered else _change(old, new)
        if change is not None:
            changes.append(ItemChange(change, key[0], key[1], old, new, explain.get(key)))
    notes = []
    if a.erased:
        notes.append(f"{a.erased} item(s) of the recorded call quoted a person erased since: their ids are gone")
    return CallDiff(a.digest == b.digest, settings, tuple(changes), (a.total_tokens, b.total_tokens), tuple(notes))


def _reordered(
    before: Mapping[tuple[str, int | str | None], CallItem], after: Mapping[tuple[str, int | str | None], CallItem]
) -> set[tuple[str, int | str | None]]:
    """The items in both contexts (and unchanged) that changed section, or place among the
    items of their section that both contexts hold: an item that merely closed up on one left
    out has not moved."""
    both = [
        k for k, item in before.items()
        if item.included and k in after and after[k].included and item.version == after[k].version
    ]  # fmt: skip
    moved = {k for k in both if before[k].section != after[k].section}
    for section in {before[k].section for k in both} - {before[k].section for k in moved}:
        kept = [k for k in both if k not in moved and before[k].section == section]
        old_order = sorted(kept, key=lambda k: before[k].rank)
        new_order = sorted(kept, key=lambda k: after[k].rank)
        moved |= {k for k, j in zip(old_order, new_order, strict=True) if k != j}
    return moved


def _change(old: CallItem | None, new: CallItem | None) -> str | None:
    was_in = old is not None and old.included
    is_in = new is not None and new.included
    if was_in and not is_in:
        return "removed"
    if is_in and not was_in:
        return "added"
    if old is None or new is None:
        return None  # listed only as left out, on one side: no change of the context
    if old.version != new.version:
        return "edited"
    if old.reason != new.reason or dict(old.scores) != dict(new.scores):
        return "rescored"
    return None


def now_utc() -> datetime:
    return datetime.now(UTC)

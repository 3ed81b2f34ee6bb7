"""The export format of a world (`recall.world/1`): JSON lines, one record per line.

The first line is the header (`{"format": "recall.world/1", "exported_at": …, "recall_version":
…}`), then the world (`{"record": "world", …}`), then one record per stored row, parents
first, and last `{"record": "end", "counts": {record: count}}`, so a file cut short is refused. Every id
(messages, observations, long-term memories, facts), every time (epoch seconds, exactly as
stored) and every read flag is kept. Agents' and the world's internal keys are not: records
name agents by id. JSON columns are JSON values; the default chat is null.

This module turns stored rows into records and back, checking every field of a record as the
service checks what it stores (ids, size caps, no NUL, finite numbers): a bad line is an
`InvalidInputError` whose field names the line and the field (`line 7: message.content`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from recall import limits
from recall.app.validation import MAX_IMPORTED_ID, MAX_MESSAGE_ID, check_channel, check_id, check_int
from recall.core.facts import CATEGORIES, parse_scope, validate_sections
from recall.core.models import SenderType
from recall.errors import InvalidInputError
from recall.store.rows import load_json
from recall.store.world_records import WORLD_COLUMNS, WORLD_TABLES

FORMAT = "recall.world/1"

#: The record kind of each table (the world's own row is "world"; see docs/http-api.md).
TYPES: dict[str, str] = {
    "worlds": "world",
    "participants": "participant",
    "chats": "chat",
    "messages": "message",
    "deliveries": "delivery",
    "inbox_marks": "inbox_mark",
    "memory_counts": "memory_count",
    "turn_counters": "turn_counter",
    "observations": "observation",
    "agent_memory": "note",
    "context_sessions": "context_session",
    "notes": "memory",
    "facts": "fact",
    "fact_sections": "fact_sections",
}
TABLES = {kind: table for table, kind in TYPES.items()}

#: (field, value) → the value as stored; raises InvalidInputError naming the field.
Check = Callable[[str, Any], Any]


def _optional(check: Check) -> Check:
    return lambda field, value: None if value is None else check(field, value)


def _text(limit: int, required: bool = False) -> Check:
    return lambda field, value: limits.check_text(field, value, limit, required=required)


def _whole(low: int = 0, high: int = MAX_MESSAGE_ID) -> Check:
    return lambda field, value: check_int(field, value, low, high)


def _time(field: str, value: Any) -> float:
    return limits.check_timestamp(field, value)


def _chat(field: str, value: Any) -> str:
    """The default chat is null in a record and '' in the store."""
    return "" if value is None else check_id(field, value)


def _choice(*values: str) -> Check:
    def check(field: str, value: Any) -> str:
        if value not in values:
            raise InvalidInputError(field, f"must be one of {', '.join(values)}, got {value!r}")
        return str(value)

    return check


def _flag(field: str, value: Any) -> int:
    if not isinstance(value, bool):
        raise InvalidInputError(field, f"must be true or false, got {value!r}")
    return int(value)


def _json(limit: int, shape: type | None = dict, sort_keys: bool = False) -> Check:
    """A JSON value (an object by default), stored as its JSON text."""

    def check(field: str, value: Any) -> str:
        if shape is not None and not isinstance(value, shape):
            raise InvalidInputError(field, f"must be a JSON {'object' if shape is dict else 'list'}")
        limits.check_json(field, value, limit)
        return json.dumps(value, sort_keys=sort_keys)

    return check


def _names(field: str, value: Any) -> str:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError(field, "must be a list of names")
    limits.check_json(field, value, limits.MAX_METADATA_CHARS)
    return json.dumps(value) if value else "[]"


def _channel(field: str, value: Any) -> str | None:
    try:
        return check_channel(value)
    except InvalidInputError as e:
        raise InvalidInputError(field, e.problem) from None


def _scope(field: str, value: Any) -> str:
    canonical = parse_scope(value)
    if canonical != value:
        raise InvalidInputError(field, f"must be a canonical scope (lowercase), got {value!r}")
    return canonical


def _sections(field: str, value: Any) -> str:
    if not isinstance(value, dict):
        raise InvalidInputError(field, "must be an object of section name to text")
    try:
        validate_sections(value)
    except InvalidInputError as e:
        raise InvalidInputError(f"{field}.{e.field}", e.problem) from None
    return json.dumps(value, sort_keys=True)


def _confidence(field: str, value: Any) -> float:
    number = limits.check_number(field, value)
    if not 0 <= number <= 1:
        raise InvalidInputError(field, f"must be from 0 to 1, got {value!r}")
    return number


_ID = check_id
#: An id kept by the import (below MAX_IMPORTED_ID, so it never steers later ids past the cap).
_STORED_ID = _whole(1, MAX_IMPORTED_ID)
#: Each record type's fields, in the order of its table's columns (WORLD_TABLES), and their checks.
FIELDS: dict[str, tuple[tuple[str, Check], ...]] = {
    "world": (
        ("id", _ID),
        ("name", _text(limits.MAX_WORLD_NAME, required=True)),
        ("turn_limit", _optional(_whole(1))),
        ("created_at", _time),
        ("tenant", _text(limits.MAX_ID)),
    ),
    "participant": (
        ("id", _ID),
        ("kind", _choice("agent", "human")),
        ("profile", _json(20 * limits.MAX_PROFILE_TEXT)),
        ("created_at", _time),
    ),
    "chat": (("id", _chat), ("created_at", _time)),
    "message": (
        ("id", _STORED_ID),
        ("chat_id", _chat),
        ("sender", _text(limits.MAX_ID, required=True)),
        ("sender_type", _choice(*(t.value for t in SenderType))),
        ("channel", _channel),
        ("parent_id", _optional(_STORED_ID)),
        # Its cap is the importing service's setting (`Settings.max_message_chars`), checked after.
        ("content", _text(2**31)),
        ("mentions", _names),
        ("addressed", _names),
        ("metadata", _json(limits.MAX_METADATA_CHARS)),
        ("created_at", _time),
        ("idempotency_key", _optional(_text(limits.MAX_IDEMPOTENCY_KEY + limits.MAX_ID + 1))),
    ),
    "delivery": (("agent", _ID), ("message_id", _STORED_ID), ("own", _flag), ("read_at", _optional(_time))),
    "inbox_mark": (("agent", _ID), ("low", _whole())),
    "memory_count": (("agent", _ID), ("chat_id", _chat), ("n", _whole())),
    "turn_counter": (("agent", _ID), ("count", _whole())),
    "observation": (
        ("id", _STORED_ID),
        ("agent", _ID),
        ("kind", _choice("observation", "action")),
        ("sim_time", _time),
        ("data", _json(limits.MAX_OBSERVATION_CHARS)),
        ("created_at", _time),
    ),
    "note": (
        ("agent", _ID),
        ("key", _text(limits.MAX_MEMORY_KEY, required=True)),
        ("value", _json(limits.MAX_MEMORY_VALUE, shape=None)),
        ("updated_at", _time),
        ("expires_at", _optional(_time)),
    ),
    "context_session": (
        ("agent", _ID),
        ("session", _text(limits.MAX_SESSION, required=True)),
        ("chat_id", _chat),
        ("last_sent_id", _whole()),
        ("refreshed_at", _time),
    ),
    "memory": (
        ("id", _STORED_ID),
        ("owner", lambda field, value: "" if value is None else check_id(field, value)),
        ("type", _text(40, required=True)),
        ("content", _text(limits.MAX_NOTE_CHARS, required=True)),
        ("importance", _whole(1, 10)),
        ("chat_id", _optional(_text(limits.MAX_ID))),
        ("metadata", _json(limits.MAX_METADATA_CHARS)),
        ("created_at", _time),
        ("updated_at", _time),
        ("expires_at", _optional(_time)),
    ),
    "fact": (
        ("id", _STORED_ID),
        ("scope", _scope),
        ("content", _text(limits.MAX_FACT_CHARS, required=True)),
        ("category", _choice(*CATEGORIES)),
        ("confidence", _confidence),
        ("source", _text(limits.MAX_FACT_SOURCE)),
        ("avoid", _optional(_text(limits.MAX_FACT_AVOID))),
        ("created_at", _time),
        ("updated_at", _time),
    ),
    "fact_sections": (("scope", _scope), ("sections", _sections), ("updated_at", _time)),
}
#: Fields an export of an earlier recall does not hold, and what they are then: a memory was
#: never changed (updated when created) and never expired.
_ADDED_LATER: dict[tuple[str, str], Callable[[Mapping[str, Any]], Any]] = {
    ("memory", "updated_at"): lambda record: record.get("created_at"),
    ("memory", "expires_at"): lambda record: None,
}
#: Columns stored as JSON text, shown as JSON values in records.
_JSON_FIELDS = {"profile", "mentions", "addressed", "metadata", "data", "value", "sections"}
#: Columns where the store's '' is a record's null: the default chat, a shared memory's owner.
_NULL_WHEN_EMPTY = {("chat", "id"), ("message", "chat_id"), ("memory_count", "chat_id"), ("context_session", "chat_id"), ("memory", "owner")}  # fmt: skip

assert all(len(FIELDS[TYPES[t]]) == len(c) for t, c in WORLD_TABLES.items()) and len(FIELDS["world"]) == len(
    WORLD_COLUMNS
)


def record_of(table: str, row: tuple[Any, ...]) -> dict[str, Any]:
    """The record of a stored row (in WORLD_TABLES' columns)."""
    kind = TYPES[table]
    record: dict[str, Any] = {"record": kind}
    for (name, _), value in zip(FIELDS[kind], row, strict=True):
        if name in _JSON_FIELDS and isinstance(value, str):
            value = load_json(value)
        elif name == "own":
            value = bool(value)
        elif (kind, name) in _NULL_WHEN_EMPTY and value == "":
            value = None
        record[name] = value
    return record


def row_of(record: Mapping[str, Any], line: int) -> tuple[str, tuple[Any, ...]]:
    """(table, row) of a record read from line `line`, every field checked; InvalidInputError
    naming the line and the field."""
    kind = record.get("record")
    if kind not in FIELDS:
        known = ", ".join(sorted(FIELDS))
        raise InvalidInputError(f"line {line}: record", f"must be one of {known} (or end), got {kind!r}")
    fields = FIELDS[kind]
    unknown = sorted(set(record) - {"record"} - {name for name, _ in fields})
    if unknown:
        raise InvalidInputError(f"line {line}: {kind}.{unknown[0]}", f"is not a field of a {kind} record")
    row = []
    for name, check in fields:
        if name in record:
            value = record[name]
        elif (kind, name) in _ADDED_LATER:
            value = _ADDED_LATER[(kind, name)](record)
        else:
            raise InvalidInputError(f"line {line}: {kind}.{name}", "is missing")
        try:
            row.append(check(f"{kind}.{name}", value))
        except InvalidInputError as e:
            raise InvalidInputError(f"line {line}: {e.field}", e.problem) from None
    return TABLES[kind], tuple(row)

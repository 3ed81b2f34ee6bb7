"""The size cap of every stored field, and the checks every interface shares (spec §8).

Every write passes the service, which checks here, so the Python API, the CLI, REST and MCP
refuse the same input with the same `InvalidInputError(field, problem)` (HTTP 422) and store
nothing. Text is counted in characters; JSON values (metadata, an agent's key-value memory,
observations) by the length of their JSON text. Besides its cap, every stored text and JSON
value is refused when it holds NUL (PostgreSQL cannot store it, and the same input must be
accepted or refused alike on every store) or, for JSON, a number that is not finite (NaN and
Infinity are not JSON: a stored one would make every later read of it fail).

The cap of a message's content is a setting (`Settings.max_message_chars`, default 100,000),
since importers of long transcripts may need more; docs/http-api.md lists them all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from recall.errors import InvalidInputError, text_problem

#: Ids of worlds, chats and participants (an ASCII word, see `service.ID_PATTERN`).
MAX_ID = 64
#: A world's display name.
MAX_WORLD_NAME = 200
#: An agent's system_prompt, identity, personality and knowledge, each.
MAX_PROFILE_TEXT = 100_000
#: Items of an agent's goals, constraints and guidelines, each list; and the length of one item.
MAX_PROFILE_ITEMS = 100
MAX_PROFILE_ITEM = 10_000
#: An agent's model name.
MAX_MODEL_NAME = 200
#: A message's or a long-term memory's metadata, as JSON text.
MAX_METADATA_CHARS = 100_000
#: A client-supplied idempotency key, and an inbox session name.
MAX_IDEMPOTENCY_KEY = 200
MAX_SESSION = 200
#: The agent's private key-value memory: a key, and its value as JSON text.
MAX_MEMORY_KEY = 200
MAX_MEMORY_VALUE = 65_536
#: An observation or an action as JSON text, and its free texts (note, description, utterance).
MAX_OBSERVATION_CHARS = 65_536
MAX_OBSERVATION_TEXT = 10_000
#: A fact, what a correction says to avoid, where a fact came from, and a summary section.
MAX_FACT_CHARS = 10_000
MAX_FACT_AVOID = 2_000
MAX_FACT_SOURCE = 200
MAX_SECTION_CHARS = 10_000
#: A long-term memory (note).
MAX_NOTE_CHARS = 20_000
#: How deep a JSON value may nest (objects and lists within each other).
MAX_JSON_DEPTH = 32
#: One line of a world import: room for the largest record the caps above allow (an agent's
#: profile: four texts of 100,000 characters and three lists of 100 × 10,000), JSON-escaped.
MAX_IMPORT_LINE_BYTES = 32 * 1024 * 1024

NON_FINITE_MESSAGE = "must be a finite number (NaN and Infinity are not JSON)"


def check_text(field: str, value: object, limit: int, *, required: bool = False) -> str:
    """`value` as text of at most `limit` characters without NUL (non-empty when `required`)."""
    if not isinstance(value, str):
        raise InvalidInputError(field, f"must be text, got {type(value).__name__}")
    if required and not value.strip():
        raise InvalidInputError(field, "must be non-empty text")
    if problem := text_problem(value):
        raise InvalidInputError(field, problem)
    if len(value) > limit:
        raise InvalidInputError(field, f"is {len(value):,} characters; the limit is {limit:,}")
    return value


#: The times recall stores and reads (a post's, an import's, a search's `now`): the years 2 to
#: 9998, so that a time in any UTC offset, and the periods read around it ("last month", "in
#: July" of the last 30 years), stay within what a datetime can hold.
MIN_TIME = datetime(2, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(9998, 12, 31, tzinfo=UTC)
_TIME_RANGE = f"must be a time from {MIN_TIME:%Y-%m-%d} to {MAX_TIME:%Y-%m-%d} (UTC)"


def check_time(field: str, value: datetime) -> datetime:
    """`value` in UTC (a naive one is UTC), within MIN_TIME and MAX_TIME."""
    if not isinstance(value, datetime):
        raise InvalidInputError(field, f"must be a datetime, got {value!r}")
    try:
        at = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (OverflowError, ValueError):  # past the year 9999 or before the year 1 in UTC
        raise InvalidInputError(field, f"{_TIME_RANGE}, got {value.isoformat()}") from None
    if not MIN_TIME <= at <= MAX_TIME:
        raise InvalidInputError(field, f"{_TIME_RANGE}, got {value.isoformat()}")
    return at


def check_timestamp(field: str, value: object) -> float:
    """Epoch seconds (finite) of a time within MIN_TIME and MAX_TIME."""
    seconds = check_number(field, value)
    if not MIN_TIME.timestamp() <= seconds <= MAX_TIME.timestamp():
        raise InvalidInputError(field, f"{_TIME_RANGE} in epoch seconds, got {value!r}")
    return seconds


def check_number(field: str, value: object) -> float:
    """A finite number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(field, f"must be a number, got {value!r}")
    if not math.isfinite(value):
        raise InvalidInputError(field, NON_FINITE_MESSAGE)
    return float(value)


def check_json(field: str, value: Any, limit: int) -> int:
    """Refuse a value that is not plain JSON: non-finite numbers, NUL in a string or a key,
    nesting deeper than MAX_JSON_DEPTH, other Python objects, or more than `limit` characters
    as JSON text. The error names the offending place (`metadata.scores[2]`); returns the size."""
    _walk(field, value, 0)
    return _size(field, value, limit)


def check_json_fields(name: str, value: Mapping[str, Any], limit: int) -> int:
    """`check_json` for an object whose keys are the caller's own field names (an observation):
    an error names the field (`note`, `agents[0].id`); the size error names the whole, `name`."""
    for key, item in value.items():
        _walk(str(key), item, 1)
    return _size(name, value, limit)


def _size(field: str, value: Any, limit: int) -> int:
    size = len(json.dumps(value, ensure_ascii=False, allow_nan=False))
    if size > limit:
        raise InvalidInputError(field, f"is {size:,} characters as JSON; the limit is {limit:,}")
    return size


def _walk(path: str, value: Any, depth: int) -> None:
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, str):
        if problem := text_problem(value):
            raise InvalidInputError(path, problem)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(path, NON_FINITE_MESSAGE)
        return
    if depth >= MAX_JSON_DEPTH:
        raise InvalidInputError(path, f"nests deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(path, f"keys must be text, got {key!r}")
            if problem := text_problem(key):
                raise InvalidInputError(path, f"keys {problem}")
            _walk(f"{path}.{key}", item, depth + 1)
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _walk(f"{path}[{i}]", item, depth + 1)
        return
    raise InvalidInputError(path, f"must be a JSON value (text, number, list, object…), got {type(value).__name__}")

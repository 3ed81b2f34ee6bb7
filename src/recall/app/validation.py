"""The input checks the use cases share: ids, bounded integers, chats, channels and times.

Every interface passes its input through these, so the Python API, the CLI, REST and MCP refuse
the same input with the same `InvalidInputError(field, problem)`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from recall import limits
from recall.core.models import CHANNELS
from recall.errors import InvalidInputError

#: Ids of worlds, chats and participants: an ASCII word, optionally joined by `-` or `_`,
#: so every participant can be @mentioned and its id is a valid OpenAI `name`.
ID_PATTERN = re.compile(r"[A-Za-z0-9_]+(?:[-_][A-Za-z0-9_]+)*", re.ASCII)
MAX_ID_LENGTH = 64
MAX_HISTORY_LIMIT = 10_000
#: The largest context budget in tokens: far beyond any model's window, small enough that one
#: request cannot make a build hold the whole store in memory.
MAX_CONTEXT_TOKENS = 10_000_000
#: Message ids fit SQLite's and PostgreSQL's 64-bit integers with room to spare.
MAX_MESSAGE_ID = 2**62
#: The largest id an import may keep (messages, observations, notes, facts). Ids are one
#: sequence per store, and the store goes on from the largest it holds: below this, what it
#: hands out after any import stays far below MAX_MESSAGE_ID, and exact in JavaScript (2^53).
MAX_IMPORTED_ID = 2**48


def check_id(field: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(field, "must be a non-empty string")
    if len(value) > MAX_ID_LENGTH or not ID_PATTERN.fullmatch(value):
        raise InvalidInputError(
            field,
            f"{value!r} is not a valid id: use up to {MAX_ID_LENGTH} ASCII letters, digits, '_' and '-' "
            "(not at the start or end), e.g. 'support-bot'",
        )
    return value


def could_be_stored(value: object) -> bool:
    """Whether an id a caller looks up could be stored at all: text without NUL (PostgreSQL's
    text cannot hold it, and asking it is an error, not an answer). One that could not is
    unknown without a look at the database."""
    return isinstance(value, str) and "\x00" not in value


def check_int(field: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(field, f"must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidInputError(field, f"must be {bound}, got {value}")
    return value


def check_fraction(field: str, value: object) -> float:
    """A number from 0 to 1 (an int is accepted: 0 and 1 are fractions too)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidInputError(field, f"must be a number from 0 to 1, got {value!r}")
    return float(value)


#: Where an agent's recalled past comes from (`recalled_scope`).
RECALLED_SCOPES = ("world", "chat")
#: Most tokens of recalled past a setting may ask for.
MAX_RECALLED_TOKENS = 1_000_000
#: Most passages a setting may ask for.
MAX_RECALLED_LIMIT = 1000


def check_recalled_setting(name: str, value: object) -> int | float | str:
    """One `recalled_*` setting of an agent or a call, checked."""
    if name == "recalled_max_tokens":
        return check_int(name, value, 0, MAX_RECALLED_TOKENS)
    if name == "recalled_limit":
        return check_int(name, value, 0, MAX_RECALLED_LIMIT)
    if name in ("recalled_cutoff", "recalled_min_similarity"):
        return check_fraction(name, value)
    if name == "recalled_scope":
        if value not in RECALLED_SCOPES:
            raise InvalidInputError(name, f"must be 'world' or 'chat', got {value!r}")
        return str(value)
    raise InvalidInputError(name, "is not a recalled-past setting")


def check_chat(chat_id: str | None) -> str | None:
    """A chat id, or None (the default chat) for None or ''."""
    return None if chat_id is None or chat_id == "" else check_id("chat_id", chat_id)


def check_channel(channel: str | None) -> str | None:
    if channel is not None and channel not in CHANNELS:
        raise InvalidInputError("channel", f"must be one of {', '.join(CHANNELS)}, got {channel!r}")
    return channel


def parse_timestamp(value: datetime | str | float | int | None, field: str = "created_at") -> datetime:
    """A caller-supplied time (datetime, ISO 8601 text or epoch seconds), in UTC; now if None."""
    if value is None:
        return datetime.now(UTC)
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(limits.check_timestamp(field, value), tz=UTC)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(field, f"{value!r} is not an ISO 8601 time like 2025-05-08T13:56:00Z") from None
    else:
        raise InvalidInputError(field, f"must be a time, got {value!r}")
    return limits.check_time(field, dt)

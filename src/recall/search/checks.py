"""Validation of what callers hand the index: items to add and the arguments of a search.
Everything is checked before any SQL is built, so a bad value is an InvalidInputError naming
its field, never a database error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from recall.errors import InvalidInputError
from recall.search.base import KINDS, MAX_K, MAX_PARAMS, MAX_QUERY_CHARS, METHODS, Filters, IndexItem, ItemRow
from recall.search.metadata import indexed, parse


def timestamp(value: datetime) -> float:
    """POSIX seconds; a naive datetime is taken as UTC, as everywhere else in recall."""
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def item_row(item: IndexItem) -> ItemRow:
    """The stored row of an item to add."""
    if not isinstance(item, IndexItem):
        raise InvalidInputError("items", f"must be IndexItem values, got {type(item).__name__}")
    check_kinds([item.kind])
    for name in ("tenant", "space", "owner", "text"):
        if not isinstance(getattr(item, name), str):
            raise InvalidInputError(name, "must be text")
    if not item.space:
        raise InvalidInputError("space", "must not be empty")
    if not isinstance(item.created_at, datetime):
        raise InvalidInputError("created_at", "must be a datetime")
    importance = None if item.importance is None else check_int("importance", item.importance)
    if item.metadata is not None and not isinstance(item.metadata, Mapping):
        raise InvalidInputError("metadata", "must be an object")
    return ItemRow(
        item.tenant, item.space, item.kind, check_id(item.source_id), item.owner, item.chat_id or None,
        item.sender or None, importance, timestamp(item.created_at), item.text, "", indexed(item.metadata),
    )  # fmt: skip


def check_int(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(field, f"must be a whole number, got {value!r}")
    return value


def check_id(value: object) -> int:
    number = check_int("source_id", value)
    if not 0 < number < 2**63:
        raise InvalidInputError("source_id", f"must be a positive id, got {number}")
    return number


def check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    if isinstance(kinds, str) or not kinds:
        raise InvalidInputError("kinds", f"must be a non-empty list of {', '.join(KINDS)}")
    for kind in kinds:
        if kind not in KINDS:
            raise InvalidInputError("kinds", f"must be among {', '.join(KINDS)}, got {kind!r}")
    return tuple(dict.fromkeys(kinds))


def check_query(query: object, k: object, method: object) -> None:
    if not isinstance(query, str):
        raise InvalidInputError("query", "must be text")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError("query", f"must be at most {MAX_QUERY_CHARS:,} characters, got {len(query):,}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInputError("k", f"must be a whole number 1-{MAX_K}, got {k!r}")
    if method not in METHODS:
        raise InvalidInputError("method", f"must be one of {', '.join(METHODS)}, got {method!r}")


def _optional_text(field: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(field, "must be text")
    return value


def _optional_time(field: str, value: object) -> float | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(field, "must be a datetime")
    return timestamp(value)


def search_filters(
    tenant: object,
    space: object,
    kinds: Sequence[str],
    owners: Sequence[str] | None,
    chat_id: object,
    sender: object,
    since: object,
    until: object,
    min_importance: object,
    metadata: object = None,
) -> Filters:
    """The filters of a search, checked (`metadata`: see `metadata.parse`)."""
    if not isinstance(tenant, str):
        raise InvalidInputError("tenant", "must be text")
    if not isinstance(space, str) or not space:
        raise InvalidInputError("space", "must be non-empty text")
    if owners is not None:
        if isinstance(owners, str) or len(owners) > MAX_PARAMS:
            raise InvalidInputError("owners", f"must be a list of at most {MAX_PARAMS} owner ids")
        if any(not isinstance(o, str) for o in owners):
            raise InvalidInputError("owners", "must be text")
    return Filters(
        tenant=tenant,
        space=space,
        kinds=check_kinds(kinds),
        owners=None if owners is None else tuple(dict.fromkeys(o.lower() for o in owners)),
        chat_id=_optional_text("chat_id", chat_id),
        sender=_optional_text("sender", sender),
        since=_optional_time("since", since),
        until=_optional_time("until", until),
        min_importance=None if min_importance is None else check_int("min_importance", min_importance),
        metadata=parse(metadata),
    )

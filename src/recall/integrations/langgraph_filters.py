"""A LangGraph store's filters, as LangGraph's own stores read them and as recall's search can
check them: `RecallStore` (`langgraph.py`) asks both of every item it returns.

A search's `filter` (each key a dotted path into the item's value, each wanted value JSON to
equal or a `$eq`/`$ne`/`$gt`/`$gte`/`$lt`/`$lte` comparison) and `list_namespaces`' match
conditions are read exactly as LangGraph's SQLite store reads them (`filter_matches`,
`namespace_matches`), with its errors. So that a query search ranks only what can pass, part of
that is also written as metadata keys of each item's memory (`search_keys`: the owner, whether
the item is searched, its namespace labels, its text values) and asked of recall's search
(`search_conditions`), which filters on them before it ranks.
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from recall.extras import require

require("langgraph")  # before the framework loads: one line naming the extra

from langgraph.store.base import MatchCondition

from recall.search.metadata import MAX_CONDITIONS, MAX_KEY_CHARS, MAX_VALUE_CHARS

#: Keys of a memory's metadata that recall's search filters a query search on (`search_keys`):
#: the store's owner, whether the item is searched at all, each namespace label by depth, and
#: each text value of the item by its dotted path.
_OWNER_KEY = "langgraph:owner"
_INDEXED_KEY = "langgraph:indexed"
_LABEL_KEY = "langgraph:ns:{}"
_VALUE_KEY = "langgraph:value:{}"
#: A filter key LangGraph's SQLite store accepts (the same check, the same error).
_FILTER_KEY = re.compile(r"^[a-zA-Z0-9_.-]+$")


def _text_leaves(value: Mapping[str, Any], path: str = "") -> Iterable[tuple[str, str]]:
    """(dotted path, text) of each text value of an item, nested objects included."""
    for field, inner in value.items():
        where = f"{path}.{field}" if path else str(field)
        if isinstance(inner, str):
            yield where, inner
        elif isinstance(inner, Mapping):
            yield from _text_leaves(inner, where)


def _kept(key: str, value: str) -> bool:
    """Whether the search index keeps this metadata key and text (`search/metadata.py`)."""
    return len(key) <= MAX_KEY_CHARS and len(value) <= MAX_VALUE_CHARS


def search_keys(owner: str, namespace: Sequence[str], value: Mapping[str, Any], indexed: bool) -> dict[str, Any]:
    """The metadata keys a query search filters the store's items on (see `search_conditions`)."""
    keys: dict[str, Any] = {_OWNER_KEY: owner.lower(), _INDEXED_KEY: indexed}
    keys.update((_LABEL_KEY.format(depth), label) for depth, label in enumerate(namespace))
    keys.update((_VALUE_KEY.format(path), text) for path, text in _text_leaves(value))
    return {k: v for k, v in keys.items() if not isinstance(v, str) or _kept(k, v)}


def search_conditions(owner: str, prefix: Sequence[str], filter: Mapping[str, Any] | None) -> dict[str, Any]:
    """What recall's search can check of a query search before it ranks: the owner, indexed
    items only, the prefix's labels, and each filter key asking for a text (equal as JSON text
    and as Python compare it). Every hit is still checked whole (`filter_matches`): these only
    keep the search from ranking what cannot pass."""
    asked: dict[str, Any] = {_OWNER_KEY: owner.lower(), _INDEXED_KEY: True}
    for depth, label in enumerate(prefix):
        key = _LABEL_KEY.format(depth)
        if len(asked) < MAX_CONDITIONS and _kept(key, label):
            asked[key] = label
    for path, wanted in (filter or {}).items():
        key = _VALUE_KEY.format(path)
        if isinstance(wanted, str) and len(asked) < MAX_CONDITIONS and _kept(key, wanted):
            asked[key] = wanted
    return asked


def check_filter(filter: Mapping[str, Any]) -> None:
    """Refuse the filter keys LangGraph's SQLite store refuses, before any item is compared."""
    for key in filter:
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise ValueError(
                f"Invalid filter key: '{key}'. Filter keys must contain only alphanumeric characters,"
                " underscores, dots, and hyphens."
            )


def filter_matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """A search's filter (checked by `check_filter`), as LangGraph's SQLite store reads it: each
    key a path into the value (`user.access-level`), compared with what it wants by `_matches`."""
    for key, wanted in filter.items():
        found: Any = value
        for part in key.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        if not _matches(found, wanted):
            return False
    return True


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter: exact JSON equality, nested objects field by field, and the operators
    $eq, $ne, $gt, $gte, $lt and $lte."""
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_compare(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported operator: {op}")
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A `list_namespaces` match condition: the namespace starts (`prefix`) or ends (`suffix`)
    with the condition's path, `*` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or n == p for n, p in pairs)

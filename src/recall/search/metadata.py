"""Metadata filters of a search, as mem0's and Zep's users write them:
`{"channel": "sms", "priority": {"$gte": 2}, "lang": {"$in": ["en", "fr"]}}`.

Each key names a top-level key of an item's metadata (messages and memories have metadata; facts
have none, so they never match). A plain value asks for equality; an object of operators asks
for each of them (`$eq`, `$ne`, `$in`, `$gt`, `$gte`, `$lt`, `$lte`); every condition must hold.
Values are JSON scalars: text, numbers, true/false and null, compared as JSON compares them (2
equals 2.0, true is not 1, "2" is not 2); `$in` takes a list of them, and the four comparisons
take numbers (an item whose value is not a number fails them). An item without the key fails
every condition on it, `$ne` included.

What the index keeps of an item's metadata (`indexed`) is exactly what a filter can match: its
top-level keys whose value is a scalar (text of at most MAX_VALUE_CHARS characters), as
canonical JSON text (sorted keys, integral numbers written as integers), so that both stores, the
copy in memory of SQLite's and PostgreSQL's JSONB column, compare the same values. A key whose
value is a list or an object, or longer text, counts as missing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from recall.errors import InvalidInputError

Operator = Literal["$eq", "$ne", "$in", "$gt", "$gte", "$lt", "$lte"]
OPERATORS: tuple[Operator, ...] = ("$eq", "$ne", "$in", "$gt", "$gte", "$lt", "$lte")
#: The operators that compare numbers, and their SQL.
COMPARISONS: dict[str, str] = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
Scalar = str | int | float | bool | None

#: Conditions a search may hold (each operator of a key counts one).
MAX_CONDITIONS = 20
#: Values an `$in` may list.
MAX_IN_VALUES = 100
#: The longest key a filter may name.
MAX_KEY_CHARS = 200
#: The longest text a filter may compare with, and the longest text value the index keeps.
MAX_VALUE_CHARS = 1_000
#: Numbers beyond this are neither kept nor compared (the copy in memory compares float64).
MAX_NUMBER = 2.0**63

FIELD = "metadata"
_SCALARS = "text, a number, true, false or null"


@dataclass(frozen=True)
class Condition:
    """One checked condition: `key`'s value `op` `values` (one value, several for `$in`);
    numbers are written as `canonical` writes them."""

    key: str
    op: Operator
    values: tuple[Scalar, ...]


def _number(value: int | float) -> int | float | None:
    """A number as the index keeps it (an integral float as an int), or None if it is none
    it keeps (not finite, or beyond MAX_NUMBER)."""
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) >= MAX_NUMBER:
            return None
        return int(value) if value.is_integer() else value
    return value if abs(value) < MAX_NUMBER else None


def _text(value: str) -> bool:
    """Text the index keeps and a filter may hold: short, no NUL, encodable."""
    if len(value) > MAX_VALUE_CHARS or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no store can hold it
        return False
    return True


_MISSING = object()


def _scalar(value: Any) -> Any:
    """`value` as the index keeps it, or _MISSING when it keeps no such value."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        number = _number(value)
        return _MISSING if number is None else number
    if isinstance(value, str):
        return value if _text(value) else _MISSING
    return _MISSING


def canonical(value: Scalar) -> str:
    """A kept scalar as JSON text: equal JSON values, equal texts (json.dumps's, written out for
    the scalars: the copy in memory writes one per key of every item it loads)."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def indexed(metadata: Mapping[str, Any] | None) -> str | None:
    """The part of an item's metadata that filters match, as canonical JSON text (None when it
    has none)."""
    if not metadata or not isinstance(metadata, Mapping):
        return None
    kept: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(key, str) and len(key) <= MAX_KEY_CHARS and _text(key):
            scalar = _scalar(value)
            if scalar is not _MISSING:
                kept[key] = scalar
    return json.dumps(kept, ensure_ascii=False, sort_keys=True, separators=(",", ":")) if kept else None


def parse(value: object) -> tuple[Condition, ...]:
    """The conditions of a search's `metadata` filter (None: none), checked: an error names the
    key it is about (`metadata.channel`)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise InvalidInputError(FIELD, f"must be an object of metadata keys to values, got {type(value).__name__}")
    conditions: list[Condition] = []
    for key, wanted in value.items():
        field = f"{FIELD}.{key}"
        if not isinstance(key, str) or not key:
            raise InvalidInputError(FIELD, f"keys must be non-empty text, got {key!r}")
        if key.startswith("$"):
            raise InvalidInputError(
                field,
                "is not a metadata key: every key's conditions must hold ($and and $or are not supported),"
                ' and operators go in a key\'s object: {"priority": {"$gte": 2}}',
            )
        if len(key) > MAX_KEY_CHARS or not _text(key):
            raise InvalidInputError(FIELD, f"keys must be text of at most {MAX_KEY_CHARS} characters without NUL")
        if isinstance(wanted, Mapping):
            if not wanted:
                raise InvalidInputError(field, f"names no operator; use one of {', '.join(OPERATORS)}")
            for op, operand in wanted.items():
                conditions.append(_condition(field, key, op, operand))
        elif isinstance(wanted, list | tuple):
            raise InvalidInputError(field, "a list is no value to equal: write {'$in': [...]} for any of several")
        else:
            conditions.append(Condition(key, "$eq", (_value(field, wanted),)))
        if len(conditions) > MAX_CONDITIONS:
            raise InvalidInputError(FIELD, f"holds more than {MAX_CONDITIONS} conditions")
    return tuple(conditions)


def _condition(field: str, key: str, op: object, operand: object) -> Condition:
    if op not in OPERATORS:
        raise InvalidInputError(field, f"has an unknown operator {op!r}; use one of {', '.join(OPERATORS)}")
    if op == "$in":
        if not isinstance(operand, list | tuple) or not operand:
            raise InvalidInputError(f"{field}.$in", f"must be a non-empty list of values ({_SCALARS})")
        if len(operand) > MAX_IN_VALUES:
            raise InvalidInputError(f"{field}.$in", f"lists {len(operand)} values; the limit is {MAX_IN_VALUES}")
        values = {canonical(v): v for v in (_value(f"{field}.$in", v) for v in operand)}  # each once
        return Condition(key, "$in", tuple(values.values()))
    value = _value(f"{field}.{op}", operand)
    if op in COMPARISONS and (value is None or isinstance(value, bool | str)):
        raise InvalidInputError(f"{field}.{op}", f"must be a number, got {operand!r}")
    return Condition(key, op, (value,))


def _value(field: str, value: object) -> Scalar:
    """A filter's value, checked and kept as the index keeps values."""
    if isinstance(value, str) and not _text(value):
        raise InvalidInputError(field, f"must be text of at most {MAX_VALUE_CHARS:,} characters without NUL")
    if isinstance(value, int | float) and not isinstance(value, bool) and _number(value) is None:
        raise InvalidInputError(field, f"must be a finite number below {MAX_NUMBER:.0e} in size, got {value!r}")
    scalar = _scalar(value)
    if scalar is _MISSING:
        raise InvalidInputError(field, f"must be {_SCALARS}, got {type(value).__name__}")
    return scalar  # type: ignore[no-any-return]


def matches(conditions: Sequence[Condition], metadata: Mapping[str, Any] | None) -> bool:
    """Whether an item with this metadata passes every condition (what the stores compute, for
    a single item in Python)."""
    kept = json.loads(indexed(metadata) or "{}")
    for c in conditions:
        if c.key not in kept:
            return False
        have = kept[c.key]
        if c.op in ("$eq", "$in", "$ne"):
            equal = canonical(have) in {canonical(v) for v in c.values}
            if equal == (c.op == "$ne"):
                return False
        elif isinstance(have, bool) or not isinstance(have, int | float) or not _compare(c.op, have, c.values[0]):
            return False
    return True


def _compare(op: str, have: float, value: Scalar) -> bool:
    assert isinstance(value, int | float)
    return {"$gt": have > value, "$gte": have >= value, "$lt": have < value, "$lte": have <= value}[op]


def where_sql(conditions: Sequence[Condition], column: str) -> tuple[list[str], list[Any]]:
    """PostgreSQL's conditions (with `?` parameters) of `conditions` on the JSONB `column`: `@>`
    for equality (which its GIN index answers), `->` for the rest; no key is part of the SQL."""
    clauses: list[str] = []
    params: list[Any] = []
    for c in conditions:
        if c.op in ("$eq", "$in"):
            clauses.append("(" + " OR ".join(f"{column} @> CAST(? AS jsonb)" for _ in c.values) + ")")
            params += [json.dumps({c.key: v}, ensure_ascii=False) for v in c.values]
        elif c.op == "$ne":
            clauses.append(f"{column} -> CAST(? AS text) <> CAST(? AS jsonb)")
            params += [c.key, canonical(c.values[0])]
        else:
            clauses.append(
                f"(jsonb_typeof({column} -> CAST(? AS text)) = 'number'"
                f" AND {column} -> CAST(? AS text) {COMPARISONS[c.op]} CAST(? AS jsonb))"
            )
            params += [c.key, c.key, canonical(c.values[0])]
    return clauses, params

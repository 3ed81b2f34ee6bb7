"""Reading another memory system's JSON export: the file, and its fields checked where they are,
so a file not in the format fails with a message naming the place (`results[3].created_at`)
before anything is stored."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from recall.app.validation import parse_timestamp
from recall.errors import InvalidInputError


def load_json(path: str | Path, what: str) -> tuple[Any, bytes]:
    """The JSON value of the file at `path` and its bytes; `what` names the format in errors."""
    file = Path(path)
    if not file.is_file():
        raise InvalidInputError("file", f"{path} does not exist")
    try:
        data = file.read_bytes()
        return json.loads(data.decode("utf-8")), data
    except OSError as exc:
        raise InvalidInputError("file", f"cannot read {path}: {exc}") from None
    except UnicodeDecodeError:
        raise InvalidInputError("file", f"{path} is not UTF-8 text, so not {what}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            "file", f"{path} is not JSON, so not {what}: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def at(where: str, key: str | int) -> str:
    """The place of a field or item below `where`: `results[3]`, `results[3].memory`."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInputError(where or "file", f"must be a JSON object, got {_kind(value)}")
    return value


def items(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidInputError(where, f"must be a JSON list, got {_kind(value)}")
    return value


def objects(value: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a list, each with its place."""
    return [(at(where, i), obj(item, at(where, i))) for i, item in enumerate(items(value, where))]


def text(parent: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    """A text field (required: present and not blank)."""
    value = parent.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidInputError(at(where, key), f"must be {'non-empty ' if required else ''}text, got {_kind(value)}")
    return value


def ident(parent: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    """An id field: text, or a number (some exports write ids as numbers), as text."""
    value = parent.get(key)
    if value is None and not required:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return text(parent, key, where, required=required)


def time(parent: dict[str, Any], key: str, where: str, *, required: bool = True) -> datetime | None:
    """A time field (ISO 8601, or epoch seconds), in UTC; a naive one is UTC."""
    value = parent.get(key)
    if value is None:
        if required:
            raise InvalidInputError(at(where, key), "is missing: a time like 2025-05-08T13:56:00Z")
        return None
    return parse_timestamp(value, at(where, key))


def mapping(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """An optional object field ({} when missing or null)."""
    value = parent.get(key)
    return {} if value is None else obj(value, at(where, key))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: f"text {value!r}", bool: str(value).lower()}.get(
        type(value), repr(value)
    )

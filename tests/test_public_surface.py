"""The public surface: `recall.__all__` names everything the Python API returns and takes, so
a caller (and a type checker) never reaches into recall's modules for a type."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Iterator
from pathlib import Path

import recall
import recall.errors
import recall.records
from recall.api import Agent, Recall, Scope, World

HANDLES = (Recall, World, Agent, Scope)


def recall_classes(hint: object) -> Iterator[type]:
    """The classes of recall's own inside a type hint (`list[Fact]`, `Memory | None`, ...)."""
    if isinstance(hint, type) and hint.__module__.startswith("recall"):
        yield hint
    for argument in typing.get_args(hint):
        yield from recall_classes(argument)


def signature_hints(handle: type) -> dict[str, dict[str, object]]:
    """Every public method's and property's type hints (parameters and return) by name. Only
    `Recall` is built by callers: the other handles' constructors take recall's service."""
    hints = {}
    for name, member in inspect.getmembers(handle):
        if name.startswith("_") and not (name == "__init__" and handle is Recall):
            continue
        function = member.fget if isinstance(member, property) else member
        if callable(function):
            hints[name] = typing.get_type_hints(function)
    return hints


def reachable_records() -> set[type]:
    """Every recall class a handle's public method returns or takes, and those in their fields."""
    found = {cls for handle in HANDLES for hints in signature_hints(handle).values()
             for hint in hints.values() for cls in recall_classes(hint)}  # fmt: skip
    todo = list(found)
    while todo:
        record = todo.pop()
        if dataclasses.is_dataclass(record):
            for hint in typing.get_type_hints(record).values():
                for cls in set(recall_classes(hint)) - found:
                    found.add(cls)
                    todo.append(cls)
    return found


def exported() -> set[object]:
    return {getattr(recall, name) for name in recall.__all__}


def test_every_name_in_all_imports() -> None:
    for module in (recall, recall.records):
        for name in module.__all__:
            namespace: dict[str, object] = {}
            exec(f"from {module.__name__} import {name}", namespace)
            assert namespace[name] is getattr(module, name)
    assert set(recall.records.__all__) <= set(recall.__all__)


def test_every_public_method_returns_and_takes_exported_types() -> None:
    returns = {
        f"{handle.__name__}.{name}": hints["return"]
        for handle in HANDLES
        for name, hints in signature_hints(handle).items()
        if "return" in hints
    }
    assert "Scope.list" in returns and "Agent.context" in returns and "World.search" in returns
    for method, hint in returns.items():
        missing = [cls.__name__ for cls in recall_classes(hint) if cls not in exported()]
        assert missing == [], f"{method} returns {missing}, not in recall.__all__"
    missing_anywhere = sorted(cls.__name__ for cls in reachable_records() - exported())
    assert missing_anywhere == [], "reached from a public method but not exported"


def test_the_named_records_are_exported() -> None:
    for name in ("Scope", "Fact", "Memory", "SearchResult", "SearchHit", "ParticipantRecord", "WorldRecord",
                 "Note", "Decision", "CheckResult", "Context", "ContextReport", "Message"):  # fmt: skip
        assert name in recall.__all__


def test_every_error_is_exported() -> None:
    errors = {
        cls
        for name, cls in vars(recall.errors).items()
        if not name.startswith("_") and isinstance(cls, type) and issubclass(cls, Exception)
    }
    assert recall.RecallError in errors
    assert sorted(cls.__name__ for cls in errors - exported()) == []


def test_the_package_ships_its_type_hints() -> None:
    assert (Path(recall.__file__).parent / "py.typed").is_file()

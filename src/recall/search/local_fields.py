"""The search index's filterable fields: strings as codes, and metadata keys as postings.

A search's filters become a boolean mask over a partition's rows (`local_partition.py`) by a
few vectorised comparisons, so the strings filters compare (owner, chat, sender) are held as
small integers of one vocabulary (`Vocabulary`), and each metadata key holds its rows by value,
and its numbers beside their rows, so a condition on it sets rows without reading any item
(`Field`).
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from recall.search.metadata import Condition, canonical


class Vocabulary:
    """Strings as small integers, so filters compare numbers."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self._values: list[str] = []

    def code(self, value: str) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self._codes)
            self._values.append(value)
        return found

    def value(self, code: int) -> str:
        return self._values[code]

    def known(self, values: Iterable[str]) -> list[int]:
        """The codes of the values seen so far (a value never seen matches no row)."""
        return [self._codes[v] for v in values if v in self._codes]


_COMPARE = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


class Field:
    """The rows whose metadata holds one key: all of them, by value (canonical JSON text), and
    those whose value is a number with that number (appended in row order)."""

    __slots__ = ("rows", "values", "number_rows", "numbers")

    def __init__(self) -> None:
        self.rows = array("q")
        self.values: dict[str, array[int]] = {}
        self.number_rows = array("q")
        self.numbers = array("d")

    def add(self, at: int, value: object) -> None:
        self.rows.append(at)
        text = canonical(value)  # type: ignore[arg-type]  # `metadata.indexed` keeps only scalars
        rows = self.values.get(text)
        if rows is None:
            rows = self.values[text] = array("q")
        rows.append(at)
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.number_rows.append(at)
            self.numbers.append(float(value))

    def passing(self, c: Condition, n: int) -> NDArray[np.bool_]:
        """The rows (of `n`) whose value passes `c`."""
        found = np.zeros(n, dtype=bool)
        if c.op in ("$eq", "$in", "$ne"):
            if c.op == "$ne":
                found[np.frombuffer(self.rows, dtype=np.int64)] = True
            for value in c.values:
                equal = self.values.get(canonical(value))
                if equal is not None:
                    found[np.frombuffer(equal, dtype=np.int64)] = c.op != "$ne"
        elif self.numbers:
            numbers = np.frombuffer(self.numbers, dtype=np.float64)
            rows = np.frombuffer(self.number_rows, dtype=np.int64)
            found[rows[_COMPARE[c.op](numbers, float(c.values[0]))]] = True  # type: ignore[arg-type]  # a number (parse)
        return found

    def compacted(self, alive: NDArray[np.bool_]) -> Field | None:
        """This key's rows that are alive (None: none is)."""
        rows = np.frombuffer(self.rows, dtype=np.int64)
        keep = alive[rows]
        if keep.all():
            return self
        if not keep.any():
            return None
        fresh = Field()
        fresh.rows.frombytes(rows[keep].tobytes())
        for value, found in self.values.items():
            alive_rows = np.frombuffer(found, dtype=np.int64)
            alive_rows = alive_rows[alive[alive_rows]]
            if len(alive_rows):
                fresh.values[value] = array("q", alive_rows.tobytes())
        number_rows = np.frombuffer(self.number_rows, dtype=np.int64)
        numbers = alive[number_rows]
        fresh.number_rows.frombytes(number_rows[numbers].tobytes())
        fresh.numbers.frombytes(np.frombuffer(self.numbers, dtype=np.float64)[numbers].tobytes())
        return fresh

"""Fact extraction, the answer (spec §4): a tolerant parser for the model's JSON answer, and the
plan of changes that answer leads to. Pure: plain data in, plain data out. The prompt is
`core/extraction.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recall.core.extraction import DEFAULT_CONFIDENCE, DEFAULT_SOURCE, SECTION_CHARS
from recall.core.facts import CATEGORIES, SECTION_NAMES, Fact, NewFact, validate_new_fact
from recall.errors import ExtractionParseError, InvalidInputError

# -- parsing the answer --------------------------------------------------------------------


@dataclass(frozen=True)
class ExtractedFact:
    content: str
    category: str = "knowledge"
    confidence: float = DEFAULT_CONFIDENCE
    avoid: str | None = None


@dataclass(frozen=True)
class ExtractionResult:
    """What the model asked for, as parsed; nothing is validated against the store yet."""

    sections: dict[str, str]
    new_facts: tuple[ExtractedFact, ...] = ()
    remove_fact_ids: tuple[int, ...] = ()
    #: Entries the parser could not read: (what, why).
    rejected: tuple[tuple[str, str], ...] = ()


_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_EXPECTED_KEYS = ("sections", "new_facts", "remove_fact_ids")
#: Names models use instead of the asked-for keys.
_KEY_ALIASES = {"facts": "new_facts", "remove_ids": "remove_fact_ids", "removed_fact_ids": "remove_fact_ids"}
#: How many `{` positions the prose search tries before giving up.
_MAX_CANDIDATES = 200


def parse_extraction(text: str) -> ExtractionResult:
    """Read the model's answer: a JSON object bare, in a code fence, or inside prose.

    Tolerates trailing commas, facts given as plain strings, numbers given as strings and
    unknown keys. Raises `ExtractionParseError` when no JSON object can be found.
    """
    obj = _find_object(text)
    rejected: list[tuple[str, str]] = []
    return ExtractionResult(
        sections=_read_sections(obj.get("sections"), rejected),
        new_facts=_read_facts(obj.get("new_facts"), rejected),
        remove_fact_ids=_read_ids(obj.get("remove_fact_ids"), rejected),
        rejected=tuple(rejected),
    )


def _find_object(text: str) -> dict[str, Any]:
    if not isinstance(text, str) or not text.strip():
        raise ExtractionParseError("the answer is empty", text if isinstance(text, str) else "")
    candidates: list[str] = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    candidates += _brace_spans(text)
    found_other = False
    for candidate in candidates:
        obj = _loads(candidate)
        if isinstance(obj, dict):
            for alias, key in _KEY_ALIASES.items():
                if alias in obj and key not in obj:
                    obj[key] = obj.pop(alias)
            if not obj or any(key in obj for key in _EXPECTED_KEYS):
                return obj
            found_other = True
    if found_other:
        raise ExtractionParseError(f"no JSON object with any of the keys {', '.join(_EXPECTED_KEYS)}", text)
    raise ExtractionParseError("no JSON object found", text)


def _loads(candidate: str) -> Any:
    for attempt in (candidate, _strip_trailing_commas(candidate)):
        try:
            return json.loads(attempt)
        except ValueError:
            continue
    return None


def _brace_spans(text: str) -> list[str]:
    """Balanced `{…}` substrings, outermost first, from left to right (string-aware)."""
    spans: list[str] = []
    start = text.find("{")
    tried = 0
    while start != -1 and tried < _MAX_CANDIDATES:
        tried += 1
        end = _matching_brace(text, start)
        if end is not None:
            spans.append(text[start : end + 1])
        start = text.find("{", start + 1)
    return spans


def _matching_brace(text: str, start: int) -> int | None:
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i if c == "}" else None
            if depth < 0:
                return None
    return None


def _strip_trailing_commas(text: str) -> str:
    """Drop commas that directly precede `}` or `]` (outside strings)."""
    out: list[str] = []
    in_string = False
    escaped = False
    pending_comma: int | None = None
    for c in text:
        if in_string:
            out.append(c)
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            continue
        if c in "}]" and pending_comma is not None:
            del out[pending_comma]
        if not c.isspace():
            pending_comma = None
        if c == ",":
            pending_comma = len(out)
        elif c == '"':
            in_string = True
        out.append(c)
    return "".join(out)


def _read_sections(value: object, rejected: list[tuple[str, str]]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        rejected.append(("sections", "is not an object"))
        return {}
    out: dict[str, str] = {}
    for name, text in value.items():
        if isinstance(text, str):
            out[re.sub(r"[\s-]+", "_", str(name).strip().lower())] = text
        elif text is not None:
            rejected.append((f"section {name}", "text is not a string"))
    return out


def _read_facts(value: object, rejected: list[tuple[str, str]]) -> tuple[ExtractedFact, ...]:
    if value is None:
        return ()
    if isinstance(value, str | Mapping):
        value = [value]
    if not isinstance(value, list):
        rejected.append(("new_facts", "is not a list"))
        return ()
    out: list[ExtractedFact] = []
    for entry in value:
        if isinstance(entry, str):
            if entry.strip():
                out.append(ExtractedFact(entry.strip()))
            continue
        if not isinstance(entry, Mapping):
            rejected.append((json.dumps(entry, ensure_ascii=False)[:200], "a fact must be an object or a string"))
            continue
        content = entry.get("content", entry.get("fact"))
        if not isinstance(content, str) or not content.strip():
            rejected.append((json.dumps(entry, ensure_ascii=False)[:200], "a fact needs non-empty `content`"))
            continue
        confidence = _number(entry.get("confidence"))
        if confidence is None:
            if entry.get("confidence") is not None:
                rejected.append((content, f"confidence {entry.get('confidence')!r} is not a number"))
                continue
            confidence = DEFAULT_CONFIDENCE
        category = entry.get("category")
        avoid = entry.get("avoid")
        out.append(
            ExtractedFact(
                content=content.strip(),
                category=_category(category) if isinstance(category, str) and category.strip() else "knowledge",
                confidence=confidence,
                avoid=(avoid.strip() or None) if isinstance(avoid, str) else None,
            )
        )
    return tuple(out)


def _read_ids(value: object, rejected: list[tuple[str, str]]) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        value = [value]
    out: list[int] = []
    for item in value:
        if isinstance(item, Mapping):  # {"id": 3}
            item = item.get("id")
        number = _number(item)
        if number is None or number != int(number):
            rejected.append((f"remove id {item!r}", "is not a whole number"))
            continue
        if int(number) not in out:
            out.append(int(number))
    return tuple(out)


def _number(value: object) -> float | None:
    """A JSON number, or a string holding one (`"0.9"`, `"12"`, `"#12"`, `"85%"`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lstrip("#")
        percent = text.endswith("%")
        try:
            number = float(text.rstrip("%").strip())
        except ValueError:
            return None
        if number != number or number in (float("inf"), float("-inf")):
            return None
        return number / 100 if percent else number
    return None


_CATEGORY_SPELLINGS = {"behaviour": "behavior", "behaviours": "behavior", "fact": "knowledge", "facts": "knowledge"}


def _category(raw: str) -> str:
    name = raw.strip().lower()
    name = _CATEGORY_SPELLINGS.get(name, name)
    if name not in CATEGORIES and name.endswith("s") and name[:-1] in CATEGORIES:
        name = name[:-1]
    return name


# -- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FactChanges:
    """What one extraction changes in a scope. Apply in order: sections, removals, additions."""

    #: Sections to replace, name → new text (never empty).
    sections: dict[str, str]
    #: Existing facts to delete: the ones the model asked to remove, then evictions over `max_facts`.
    remove_ids: tuple[int, ...] = ()
    #: Facts to add, in the model's order.
    add: tuple[NewFact, ...] = ()
    #: What was not applied and why: (content or item, reason), for the log and reports.
    skipped: tuple[tuple[str, str], ...] = ()
    #: The messages the extraction read: each fact it adds records them (erasing one of them
    #: removes the fact), and the change is dropped if one is gone by the time it is stored.
    sources: tuple[int, ...] = ()

    @property
    def empty(self) -> bool:
        """True when applying would change nothing."""
        return not self.sections and not self.remove_ids and not self.add

    def summary(self) -> str:
        parts = [
            f"{len(self.add)} added",
            f"{len(self.remove_ids)} removed",
            f"sections: {', '.join(self.sections) or 'none'}",
        ]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        return ", ".join(parts)


def normalize_content(text: str) -> str:
    """The duplicate key of a fact: case-folded, whitespace collapsed."""
    return " ".join(text.split()).casefold()


def plan_changes(
    current: Sequence[Fact],
    result: ExtractionResult,
    min_confidence: float,
    max_facts: int,
    *,
    source: str = DEFAULT_SOURCE,
) -> FactChanges:
    """The spec §4 rules, applied to a scope's current facts and the model's answer.

    1. Replace a known section only when the answer gives it non-empty text.
    2. Remove the listed facts that exist.
    3. Add new facts that are valid, have confidence ≥ `min_confidence`, and are not a
       duplicate (case-insensitive, whitespace-normalised) of a kept fact or of each other.
    4. Above `max_facts` in total, drop the lowest-confidence facts (ties: the oldest first;
       new facts are the newest), existing or new, so the highest-confidence ones remain.
    """
    skipped: list[tuple[str, str]] = list(result.rejected)

    sections: dict[str, str] = {}
    for name, text in result.sections.items():
        if name not in SECTION_NAMES:
            skipped.append((f"section {name}", f"not a section; sections are {', '.join(SECTION_NAMES)}"))
        elif text.strip():
            sections[name] = text.strip()[:SECTION_CHARS]

    existing = {f.id: f for f in current}
    removed: list[int] = []
    for fact_id in result.remove_fact_ids:
        if fact_id in existing:
            if fact_id not in removed:
                removed.append(fact_id)
        else:
            skipped.append((f"remove fact {fact_id}", "no such fact in this scope"))
    removed_set = set(removed)
    kept = [f for f in current if f.id not in removed_set]

    seen = {normalize_content(f.content) for f in kept}
    added: list[NewFact] = []
    for extracted in result.new_facts:
        try:
            fact = validate_new_fact(
                NewFact(extracted.content, extracted.category, extracted.confidence, source, extracted.avoid)
            )
        except InvalidInputError as e:
            skipped.append((extracted.content, str(e)))
            continue
        if fact.confidence < min_confidence:
            skipped.append((fact.content, f"confidence {fact.confidence:.2f} is below {min_confidence:.2f}"))
            continue
        key = normalize_content(fact.content)
        if key in seen:
            skipped.append((fact.content, "duplicate of a fact already kept"))
            continue
        seen.add(key)
        added.append(fact)

    excess = len(kept) + len(added) - max(max_facts, 0)
    if excess > 0:
        # Eviction order: lowest confidence first, then oldest first; new facts are newer
        # than every existing one and ordered as the model listed them.
        candidates: list[tuple[float, int, int, Fact | NewFact]] = [
            (f.confidence, 0, rank, f) for rank, f in enumerate(sorted(kept, key=lambda f: (f.created_at, f.id)))
        ]
        candidates += [(f.confidence, 1, rank, f) for rank, f in enumerate(added)]
        candidates.sort(key=lambda c: c[:3])
        evicted = [c[3] for c in candidates[:excess]]
        for item in evicted:
            if isinstance(item, Fact):
                removed.append(item.id)
            else:
                skipped.append((item.content, f"over max_facts={max_facts}: lower confidence than the facts kept"))
        evicted_new = {id(item) for item in evicted if isinstance(item, NewFact)}
        added = [f for f in added if id(f) not in evicted_new]

    return FactChanges(sections=sections, remove_ids=tuple(removed), add=tuple(added), skipped=tuple(skipped))

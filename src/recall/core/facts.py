"""Facts and the `<memory>` block (spec §4): what a fact is, how facts are ranked against the
recent conversation, and the exact text injected into a context.

Pure: plain data in, plain data out. Ranking uses TF-IDF cosine similarity between each fact
and the recent conversation (scikit-learn's `TfidfVectorizer` defaults, computed here: the
facts of a scope are few, and that one class brought scipy and scikit-learn, 160 MB, into every
install), blended with the fact's confidence.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from recall.core.calls import version
from recall.core.escaping import escape
from recall.core.models import Message, SenderType
from recall.core.tokens import TokenCounter
from recall.errors import InvalidInputError, text_problem
from recall.limits import MAX_FACT_AVOID, MAX_FACT_CHARS, MAX_FACT_SOURCE, MAX_SECTION_CHARS, check_text

CATEGORIES = ("preference", "knowledge", "context", "behavior", "goal", "correction")

#: A scope's summary sections, in the order of the injection format, with their labels.
SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("work_context", "User Context:", "Work"),
    ("personal_context", "User Context:", "Personal"),
    ("top_of_mind", "User Context:", "Current Focus"),
    ("recent_months", "History:", "Recent"),
    ("earlier_context", "History:", "Earlier"),
    ("long_term_background", "History:", "Background"),
)
SECTION_NAMES = tuple(name for name, _, _ in SECTIONS)

#: Scope kinds: facts about a user, an agent, or a whole world.
SCOPE_KINDS = ("user", "agent", "world")

MEMORY_OPEN = "<memory>"
MEMORY_CLOSE = "</memory>"

#: Human turns the recent conversation reaches back to (spec §4).
RECENT_HUMAN_TURNS = 3


@dataclass(frozen=True)
class Fact:
    id: int
    scope: str
    content: str
    category: str
    confidence: float
    created_at: datetime
    updated_at: datetime
    #: Where it came from: a message or thread id, or "manual".
    source: str = "manual"
    #: For corrections: what to avoid saying or doing.
    avoid: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "content": self.content,
            "category": self.category,
            "confidence": self.confidence,
            "source": self.source,
            "avoid": self.avoid,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True)
class NewFact:
    """A fact to store; the store assigns id and times."""

    content: str
    category: str = "knowledge"
    confidence: float = 1.0
    source: str = "manual"
    avoid: str | None = None


def parse_scope(scope: object) -> str:
    """`user:ID`, `agent:WORLD/AGENT` or `world:ID`, with a clear error for anything else."""
    if not isinstance(scope, str) or ":" not in scope:
        raise InvalidInputError("scope", f"must look like 'user:ID', 'agent:WORLD/AGENT' or 'world:ID', got {scope!r}")
    kind, _, rest = scope.partition(":")
    if kind not in SCOPE_KINDS:
        raise InvalidInputError("scope", f"kind must be one of {', '.join(SCOPE_KINDS)}, got {kind!r}")
    if not rest or len(scope) > 300 or any(c.isspace() or ord(c) < 32 for c in rest):
        raise InvalidInputError("scope", f"needs an id without spaces after '{kind}:' (at most 300 characters)")
    if kind == "agent" and rest.count("/") != 1:
        raise InvalidInputError("scope", f"an agent scope is 'agent:WORLD/AGENT', got {scope!r}")
    return f"{kind}:{rest.lower()}"


def validate_new_fact(fact: NewFact | Mapping[str, Any]) -> NewFact:
    """Check a fact's fields; a mapping may carry `content`, `category`, `confidence`, `source`, `avoid`."""
    if isinstance(fact, Mapping):
        unknown = set(fact) - {"content", "category", "confidence", "source", "avoid"}
        if unknown:
            raise InvalidInputError(sorted(unknown)[0], "is not a field of a fact")
        fact = NewFact(
            content=fact.get("content"),  # type: ignore[arg-type]
            category=fact.get("category", "knowledge"),
            confidence=fact.get("confidence", 1.0),
            source=fact.get("source", "manual"),
            avoid=fact.get("avoid"),
        )
    if not isinstance(fact.content, str) or not fact.content.strip():
        raise InvalidInputError("content", "must be non-empty text")
    if problem := text_problem(fact.content):
        raise InvalidInputError("content", problem)
    if len(fact.content) > MAX_FACT_CHARS:
        raise InvalidInputError("content", f"at most {MAX_FACT_CHARS:,} characters, got {len(fact.content):,}")
    if fact.category not in CATEGORIES:
        raise InvalidInputError("category", f"must be one of {', '.join(CATEGORIES)}, got {fact.category!r}")
    confidence = fact.confidence
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        raise InvalidInputError("confidence", f"must be a number from 0 to 1, got {confidence!r}")
    if not isinstance(fact.source, str) or not fact.source or len(fact.source) > MAX_FACT_SOURCE:
        raise InvalidInputError("source", f"must be non-empty text of at most {MAX_FACT_SOURCE} characters")
    check_text("source", fact.source, MAX_FACT_SOURCE)
    if fact.avoid is not None and (not isinstance(fact.avoid, str) or len(fact.avoid) > MAX_FACT_AVOID):
        raise InvalidInputError("avoid", f"must be text of at most {MAX_FACT_AVOID:,} characters, or null")
    if fact.avoid is not None:
        check_text("avoid", fact.avoid, MAX_FACT_AVOID)
    return NewFact(fact.content.strip(), fact.category, float(confidence), fact.source, fact.avoid or None)


def validate_sections(sections: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in sections.items():
        if name not in SECTION_NAMES:
            raise InvalidInputError(name, f"is not a section; sections are {', '.join(SECTION_NAMES)}")
        if not isinstance(value, str) or len(value) > MAX_SECTION_CHARS:
            raise InvalidInputError(name, f"must be text of at most {MAX_SECTION_CHARS:,} characters")
        check_text(name, value, MAX_SECTION_CHARS)
        out[name] = value.strip()
    return out


# -- the recent conversation ---------------------------------------------------------------


def _is_final_reply(message: Message) -> bool:
    """An agent message that is a reply, not a tool call or a tool result."""
    return not message.metadata.get("tool_calls") and not message.metadata.get("tool_result_for")


def recent_conversation(newest_first: Iterable[Message]) -> str:
    """Walking back from the newest message: human messages and final agent replies, up to and
    including the 3rd human turn, joined oldest first. Empty when there is none."""
    picked: list[str] = []
    humans = 0
    for message in newest_first:
        if message.sender_type is SenderType.HUMAN:
            picked.append(message.content)
            humans += 1
            if humans >= RECENT_HUMAN_TURNS:
                break
        elif message.sender_type is SenderType.AGENT and _is_final_reply(message):
            picked.append(message.content)
    return "\n".join(reversed(picked))


# -- ranking -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoredFact:
    fact: Fact
    score: float
    similarity: float | None


def rank_facts(
    facts: Sequence[Fact], conversation: str, similarity_weight: float = 0.6, confidence_weight: float = 0.4
) -> list[ScoredFact]:
    """Facts best first: similarity × w1 + confidence × w2, or confidence alone when there is
    no recent conversation (or no word of it is in any fact's vocabulary). Ties keep the
    newer fact first, then the lower id, so the order is deterministic."""
    similarities = _tfidf_similarities([f.content for f in facts], conversation) if conversation.strip() else None
    scored = [
        ScoredFact(
            f, f.confidence if sims is None else sims * similarity_weight + f.confidence * confidence_weight, sims
        )
        for f, sims in zip(facts, similarities if similarities is not None else [None] * len(facts), strict=True)
    ]
    scored.sort(key=lambda s: (-round(s.score, 12), -s.fact.updated_at.timestamp(), s.fact.id))
    return scored


#: scikit-learn's default `token_pattern`: words of two or more word characters.
_WORD = re.compile(r"(?u)\b\w\w+\b")


def _tfidf_similarities(documents: Sequence[str], query: str) -> list[float] | None:
    """Cosine of each document's TF-IDF vector with the query's, fitted on the documents and the
    query together, as scikit-learn's `TfidfVectorizer()` does by default: lower-cased words of
    two or more characters, raw counts, smoothed idf `ln((1 + n) / (1 + df)) + 1`, rows
    L2-normalised. None when the query has no such word."""
    if not documents:
        return []
    counts = [Counter(_WORD.findall(text.lower())) for text in [*documents, query]]
    query_counts = counts[-1]
    if not query_counts:
        return None
    document_frequency: Counter[str] = Counter()
    for words in counts:
        document_frequency.update(words.keys())
    n = len(counts)
    idf = {word: math.log((1 + n) / (1 + df)) + 1 for word, df in document_frequency.items()}

    def weights(words: Counter[str]) -> tuple[dict[str, float], float]:
        weighted = {word: count * idf[word] for word, count in words.items()}
        return weighted, math.sqrt(math.fsum(w * w for w in weighted.values()))

    query_weights, query_norm = weights(query_counts)
    similarities: list[float] = []
    for words in counts[:-1]:
        document_weights, norm = weights(words)
        dot = math.fsum(w * query_weights[word] for word, w in document_weights.items() if word in query_weights)
        similarities.append(dot / (norm * query_norm) if dot else 0.0)
    return similarities


# -- the injected block --------------------------------------------------------------------


def fact_line(fact: Fact) -> str:
    line = f"- [{fact.category} | {fact.confidence:.2f}] {escape(_one_line(fact.content))}"
    if fact.avoid:
        line += f" (avoid: {escape(_one_line(fact.avoid))})"
    return line


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _sections_text(sections: Mapping[str, str]) -> list[str]:
    parts: list[str] = []
    for heading in ("User Context:", "History:"):
        lines = [
            f"- {label}: {escape(_one_line(sections[name]))}"
            for name, head, label in SECTIONS
            if head == heading and sections.get(name)
        ]
        if lines:
            parts.append("\n".join([heading, *lines]))
    return parts


@dataclass(frozen=True)
class MemoryBlock:
    text: str
    tokens: int
    #: Every candidate fact in rank order, with its score and whether it fit.
    ranked: tuple[ScoredFact, ...] = ()
    fitted: frozenset[int] = field(default_factory=frozenset)

    def report_items(self) -> list[dict[str, Any]]:
        return [
            {
                "kind": "fact",
                "id": s.fact.id,
                "scope": s.fact.scope,
                "score": round(s.score, 4),
                "similarity": None if s.similarity is None else round(s.similarity, 4),
                "confidence": s.fact.confidence,
                # What the fact said (a fingerprint): a recorded call's replay tells an edit.
                "version": version(fact_line(s.fact)),
                "included": s.fact.id in self.fitted,
            }
            for s in self.ranked
        ]


def render_memory_block(
    sections: Mapping[str, str], ranked: Sequence[ScoredFact], counter: TokenCounter, max_tokens: int
) -> MemoryBlock:
    """`<memory>…</memory>` with the sections and the facts in rank order while the whole block
    fits `max_tokens` (counted exactly). Empty text when nothing at all fits or exists."""
    parts = _sections_text(sections)
    body = "\n\n".join(parts)
    text = _wrap(body, [])
    if counter.count(text) > max_tokens:  # even the sections do not fit: leave them out
        parts, body = [], ""
    lines: list[str] = []
    fitted: set[int] = set()
    for scored in ranked:
        candidate = [*lines, fact_line(scored.fact)]
        if counter.count(_wrap(body, candidate)) <= max_tokens:
            lines = candidate
            fitted.add(scored.fact.id)
    if not parts and not lines:
        return MemoryBlock("", 0, tuple(ranked), frozenset())
    text = _wrap(body, lines)
    return MemoryBlock(text, counter.count(text), tuple(ranked), frozenset(fitted))


def _wrap(sections_body: str, fact_lines: Sequence[str]) -> str:
    parts = [sections_body] if sections_body else []
    if fact_lines:
        parts.append("\n".join(["Facts:", *fact_lines]))
    return f"{MEMORY_OPEN}\n" + "\n\n".join(parts) + f"\n{MEMORY_CLOSE}"

"""BEAM's 128K-token conversations (`beam_128k.json`) read for the context benchmarks.

BEAM (Tavakoli et al., "Beyond a Million Tokens", arXiv 2510.27246) is long user-assistant
conversations with probing questions for ten memory abilities; the 128K file keeps the nine
whose questions name evidence. Its format (../shared/datasets/beam/README.md): a list of
conversations, each `{"conversation": "1", "turns": [{id, role, at, content}],
"questions": [{ability, n, question, evidence: [turn ids], parts?, difficulty}]}`.

A conversation becomes one world: BEAM's `user` is a human named `maria` (recall reserves
`user` as a sender name), its `assistant` an agent `assistant` that hears everything (context
filter `all`: BEAM's code blocks open lines with `@decorators`). Each message is posted at its
`at` with `metadata={"beam_id": id}`, so a stored message maps back to the id the questions'
evidence names. Conversations are numbered 1-20 by their `conversation` field: 1-10 tune,
11-20 are held out.

The data is read where it lies; nothing of it is copied into the repository.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from recall.app.posting import PostRequest
from recall.importers import Conversation, slug

#: BEAM's `user`, as a human sender (recall reserves `user`).
HUMAN = "maria"
#: BEAM's `assistant`, the agent whose context is built.
AGENT = "assistant"
#: The message metadata key holding BEAM's message id.
TURN_KEY = "beam_id"
#: The abilities in the README's order, each with the short name a table's header shows.
ABILITIES = {
    "contradiction_resolution": "CR",
    "event_ordering": "EO",
    "information_extraction": "IE",
    "instruction_following": "IF",
    "knowledge_update": "KU",
    "multi_session_reasoning": "MSR",
    "preference_following": "PF",
    "summarization": "SUM",
    "temporal_reasoning": "TR",
}
#: Conversations 1-10 tune, 11-20 are held out (by the `conversation` field).
HALVES = {"1-10": range(1, 11), "11-20": range(11, 21)}


def is_beam(samples: Sequence[Any]) -> bool:
    """Whether a loaded JSON file is BEAM's: conversations with `turns` and `questions`."""
    return bool(samples) and all(isinstance(s, dict) and "turns" in s and "questions" in s for s in samples)


def conversation_id(sample: Mapping[str, Any]) -> str:
    """The conversation's number as the file gives it (`"1"` .. `"20"`)."""
    return str(sample["conversation"])


def half(sample_id: str) -> str | None:
    """The half (`1-10` or `11-20`) a conversation belongs to, None for any other number."""
    number = int(sample_id) if sample_id.isdigit() else 0
    return next((name for name, numbers in HALVES.items() if number in numbers), None)


def beam_time(raw: str) -> datetime:
    """An `at` value (`2024-03-15T09:00:00Z`) as an aware UTC datetime."""
    return datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(UTC)


def longest_turn(samples: Sequence[Mapping[str, Any]]) -> int:
    """The characters of the longest message (one is 348,853: over recall's default cap)."""
    return max((len(str(t.get("content") or "")) for s in samples for t in s["turns"]), default=0)


def read_beam(samples: Sequence[Mapping[str, Any]]) -> list[Conversation]:
    """One conversation per BEAM sample, in order, ready for `store_conversation`."""
    conversations = []
    for sample in samples:
        number = conversation_id(sample)
        conversation = Conversation(
            world_id=slug(f"beam-{number}"),
            name=f"BEAM {number}",
            humans={HUMAN},
            agents={AGENT},
            agent_settings={"context_filter": "all"},
        )
        for turn in sample["turns"]:
            content = str(turn.get("content") or "")
            conversation.messages.append(
                PostRequest(
                    sender=HUMAN if turn["role"] == "user" else AGENT,
                    content=content if content.strip() else "…",
                    created_at=beam_time(str(turn["at"])),
                    metadata={TURN_KEY: turn["id"]},
                )
            )
        conversations.append(conversation)
    return conversations


def questions(sample: Mapping[str, Any], known_ids: set[str]) -> Iterator[tuple[str, str, list[str]]]:
    """Each question as (question, ability, evidence): the distinct ids of its evidence messages
    that the conversation has, as text (an empty list: nothing to find)."""
    for question in sample["questions"]:
        evidence = list(dict.fromkeys(str(i) for i in question.get("evidence") or [] if str(i) in known_ids))
        yield str(question["question"]), str(question["ability"]), evidence

"""The agent's notes: its private key-value entries.

`…/notes` are the names; `…/memory` (the first name, before long-term memories took the word)
stays as a deprecated alias served by the same handlers.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from recall.server import answers, schemas, views
from recall.server.deps import ActingAgent, NoteKey, state_of

router = APIRouter()

NOTES = "/v1/worlds/{world}/agents/{agent}/notes"
#: The deprecated alias of `NOTES`.
MEMORY = "/v1/worlds/{world}/agents/{agent}/memory"


@router.get(
    NOTES,
    tags=["notes"],
    summary="Every note the agent keeps",
    **answers.answering(answers.Notes),
)
@router.get(
    MEMORY,
    tags=["memory"],
    summary="Everything the agent remembers",
    deprecated=True,
    **answers.answering(answers.Notes),
)
def list_memory(request: Request, acting: ActingAgent) -> dict[str, Any]:
    return views.notes(state_of(request).service.agent_state.notes(acting.key, acting.agent))


@router.put(
    NOTES + "/{key}",
    tags=["notes"],
    summary="Keep a note under a key",
    **answers.answering(answers.Note),
)
@router.put(
    MEMORY + "/{key}",
    tags=["memory"],
    summary="Remember a value",
    deprecated=True,
    **answers.answering(answers.Note),
)
def remember(request: Request, acting: ActingAgent, key: NoteKey, body: schemas.MemoryIn) -> dict[str, Any]:
    return state_of(request).service.agent_state.remember(acting.key, acting.agent, key, body.value, body.ttl).to_dict()


@router.get(
    NOTES + "/{key}",
    tags=["notes"],
    summary="The note under a key",
    **answers.answering(answers.Note),
)
@router.get(
    MEMORY + "/{key}",
    tags=["memory"],
    summary="Recall a value",
    deprecated=True,
    **answers.answering(answers.Note),
)
def recall_value(request: Request, acting: ActingAgent, key: NoteKey) -> dict[str, Any]:
    return state_of(request).service.agent_state.recall_note(acting.key, acting.agent, key).to_dict()


@router.delete(
    NOTES + "/{key}",
    tags=["notes"],
    summary="Forget the note under a key",
    **answers.answering(answers.Forgotten),
)
@router.delete(
    MEMORY + "/{key}",
    tags=["memory"],
    summary="Forget a value",
    deprecated=True,
    **answers.answering(answers.Forgotten),
)
def forget(request: Request, acting: ActingAgent, key: NoteKey) -> dict[str, bool]:
    return views.forgotten(state_of(request).service.agent_state.forget(acting.key, acting.agent, key))

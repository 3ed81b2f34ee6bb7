"""Long-term memories: shared by a world's agents, or private to one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from recall.server import answers, schemas, views
from recall.server.deps import ActingAgent, MemoryId, WorldOf, memories_of, tenant_world
from recall.store.records import WorldRecord

router = APIRouter(tags=["memories"])
MinImportance = Annotated[int, Query(ge=1, le=10)]
Limit = Annotated[int, Query(ge=1, le=1000)]


@router.post(
    "/v1/worlds/{world}/memories",
    status_code=201,
    summary="Add a shared memory",
    responses={201: {"model": answers.Memory}},
)
def add_shared_note(request: Request, record: WorldOf, body: schemas.NoteIn) -> JSONResponse:
    note = memories_of(request).add_memory(record.key, **body.model_dump())
    return JSONResponse(note.to_dict(), status_code=201)


@router.get(
    "/v1/worlds/{world}/memories",
    summary="Shared memories, most important first",
    **answers.answering(answers.Memories),
)
def list_shared_notes(
    request: Request, record: WorldOf, min_importance: MinImportance = 1, limit: Limit = 100
) -> dict[str, Any]:
    return views.memories(memories_of(request).list_memories(record.key, None, min_importance, limit))


@router.patch(
    "/v1/worlds/{world}/memories/{note_id}",
    summary="Change a shared memory in place",
    **answers.answering(answers.Memory),
)
def update_shared_note(
    request: Request,
    record: Annotated[WorldRecord, tenant_world("update shared memories")],
    note_id: MemoryId,
    body: schemas.NotePatch,
) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    return memories_of(request).update_memory(record.key, note_id, changes).to_dict()


@router.delete(
    "/v1/worlds/{world}/memories/{note_id}",
    summary="Delete a shared memory",
    **answers.answering(answers.DeletedOne),
)
def delete_shared_note(
    request: Request, record: Annotated[WorldRecord, tenant_world("delete shared memories")], note_id: MemoryId
) -> dict[str, bool]:
    memories_of(request).delete_memory(record.key, note_id)
    return views.deleted()


@router.post(
    "/v1/worlds/{world}/agents/{agent}/memories",
    status_code=201,
    summary="Add a private memory",
    responses={201: {"model": answers.Memory}},
)
def add_private_note(request: Request, acting: ActingAgent, body: schemas.NoteIn) -> JSONResponse:
    note = memories_of(request).add_memory(acting.key, agent=acting.agent, **body.model_dump())
    return JSONResponse(note.to_dict(), status_code=201)


@router.get(
    "/v1/worlds/{world}/agents/{agent}/memories",
    summary="Shared memories and the agent's own",
    **answers.answering(answers.Memories),
)
def list_agent_notes(
    request: Request, acting: ActingAgent, min_importance: MinImportance = 1, limit: Limit = 100
) -> dict[str, Any]:
    return views.memories(memories_of(request).list_memories(acting.key, acting.agent, min_importance, limit))


@router.patch(
    "/v1/worlds/{world}/agents/{agent}/memories/{note_id}",
    summary="Change one of its memories in place",
    **answers.answering(answers.Memory),
)
def update_agent_note(
    request: Request, acting: ActingAgent, note_id: MemoryId, body: schemas.NotePatch
) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True)
    return memories_of(request).update_memory(acting.key, note_id, changes, agent=acting.agent).to_dict()


@router.delete(
    "/v1/worlds/{world}/agents/{agent}/memories/{note_id}",
    summary="Delete one of its memories",
    **answers.answering(answers.DeletedOne),
)
def delete_agent_note(request: Request, acting: ActingAgent, note_id: MemoryId) -> dict[str, bool]:
    memories_of(request).delete_memory(acting.key, note_id, agent=acting.agent)
    return views.deleted()

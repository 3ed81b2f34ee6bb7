"""Deleting worlds, participants and messages, and exporting and importing whole worlds (spec §8).

Every route here is a tenant's admin act: an agent's key is answered 403 before anything is
looked up, another tenant's world is 404 (as if it did not exist), and an import lands in the
caller's tenant. What each deletion takes with it, and what an export holds, is the service's
(`app/lifecycle.py`, `app/world_export.py`); docs/http-api.md lists both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from recall.app.gate import Principal
from recall.server import answers, views
from recall.server.deps import state_of, tenant_key, tenant_world
from recall.server.json_body import json_bytes
from recall.store.records import WorldRecord

router = APIRouter(tags=["lifecycle"])

Erase = Annotated[
    bool,
    Query(description="also delete every message it sent (and, for a human, its user:ID facts in the tenant)"),
]
#: The media type of an export: JSON lines.
NDJSON = "application/x-ndjson"


@router.delete(
    "/v1/worlds/{world}",
    summary="Delete a world and everything in it",
    **answers.answering(answers.Deleted),
)
def delete_world(request: Request, record: Annotated[WorldRecord, tenant_world("delete worlds")]) -> dict[str, Any]:
    """Participants, chats, messages, deliveries and read state, notes, observations, memories,
    the facts of the world's and its agents' scopes, and their search items. Its humans'
    `user:ID` facts stay: they belong to the tenant."""
    return state_of(request).service.lifecycle.delete_world(record.key).to_dict()


@router.delete(
    "/v1/worlds/{world}/agents/{agent}",
    tags=["participants"],
    summary="Delete an agent",
    **answers.answering(answers.Deleted),
)
def delete_agent(
    request: Request, agent: str, record: Annotated[WorldRecord, tenant_world("delete agents")], erase: Erase = False
) -> dict[str, Any]:
    """With what was private to it: deliveries, read state, notes, turn counter, observations,
    private memories, its agent facts. The messages it wrote stay (others heard them) unless
    `erase=true`."""
    return state_of(request).service.lifecycle.delete_participant(record.key, agent, "agent", erase=erase).to_dict()


@router.delete(
    "/v1/worlds/{world}/humans/{human}",
    tags=["participants"],
    summary="Delete (or erase) a human",
    **answers.answering(answers.Deleted),
)
def delete_human(
    request: Request, human: str, record: Annotated[WorldRecord, tenant_world("delete humans")], erase: Erase = False
) -> dict[str, Any]:
    """Without `erase` only the participant goes: its messages stay (every agent heard them) and
    so do its `user:ID` facts. With `erase=true` every message it sent in the world goes too,
    with their deliveries, and the facts of `user:ID` in the world's tenant, search items and
    vectors included."""
    return state_of(request).service.lifecycle.delete_participant(record.key, human, "human", erase=erase).to_dict()


@router.delete(
    "/v1/worlds/{world}/messages/{message_id}",
    tags=["messages"],
    summary="Delete a message",
    **answers.answering(answers.Deleted),
)
def delete_message(
    request: Request,
    record: Annotated[WorldRecord, tenant_world("delete messages")],
    message_id: Annotated[int, Path(ge=1, le=2**62)],
) -> dict[str, Any]:
    """With its deliveries (read or not) and its search item; replies to it become replies to its
    parent (or start their thread), so no reply names a message that is gone."""
    return state_of(request).service.lifecycle.delete_message(record.key, message_id).to_dict()


@router.get(
    "/v1/worlds/{world}/export",
    summary="Export a world as JSON lines",
    response_class=StreamingResponse,
    responses={200: {"content": {NDJSON: {"schema": {"type": "string"}}}, "description": "One record per line"}},
)
def export_world(request: Request, record: Annotated[WorldRecord, tenant_world("export worlds")]) -> StreamingResponse:
    """A header line (`format`: `recall.world/1`), the world, one record per stored row, and an end
    record with the counts (a download cut short is refused by an import)."""
    records = state_of(request).service.exports.export_world(record.key)

    def lines() -> Iterator[bytes]:  # iterated in a worker thread: it reads the store
        for item in records:
            yield json_bytes(item, compact=False) + b"\n"  # an export's lines as they always were

    return StreamingResponse(
        lines(), media_type=NDJSON, headers={"Content-Disposition": f'attachment; filename="{record.id}.jsonl"'}
    )


@router.post(
    "/v1/worlds/import",
    status_code=201,
    summary="Import a world (an export's JSON lines)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {NDJSON: {"schema": {"type": "string"}}, "text/plain": {"schema": {"type": "string"}}},
        }
    },
    responses={201: {"model": answers.ImportedWorld}},
)
async def import_world(request: Request, who: Annotated[Principal, tenant_key("import worlds")]) -> JSONResponse:
    """Into the caller's tenant, with every id, time and read flag kept. A malformed line is 422
    naming the line and the field; a world of that id in the tenant, or any kept id the store
    holds already, is 409; either way nothing is written."""
    body = await request.body()
    imported = await run_in_threadpool(state_of(request).service.exports.import_world, body.splitlines(), who.tenant)
    return JSONResponse({**views.world(imported.world), "imported": imported.counts}, status_code=201)

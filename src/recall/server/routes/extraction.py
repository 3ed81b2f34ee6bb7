"""Fact extraction from an agent's conversation: queued, and flushed on demand."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Request

from recall.app.gate import Principal
from recall.server import answers, schemas
from recall.server.deps import ActingAgent, Caller, state_of, tenant_key

router = APIRouter(tags=["facts"])


@router.post(
    "/v1/worlds/{world}/agents/{agent}/extract",
    status_code=202,
    summary="Queue fact extraction from an agent's conversation (after its run)",
    **answers.answering(answers.ExtractionQueued, 202),
)
def extract(request: Request, acting: ActingAgent, body: schemas.ExtractIn, who: Caller) -> dict[str, Any]:
    scope = None if body.scope is None else state_of(request).gate.scope(who, body.scope)[0]
    return state_of(request).service.extraction.extract(
        acting.key, acting.agent, body.chat_id, scope, acting.world.tenant
    )


@router.post(
    "/v1/extraction/flush",
    summary="Run the caller's queued fact extractions now",
    **answers.answering(answers.Extractions),
)
async def flush_extraction(
    request: Request, who: Annotated[Principal, tenant_key("flush the extraction queue")]
) -> dict[str, int]:
    # Model calls take seconds: off the event loop, so waiting checks keep being answered.
    return {"extractions": await asyncio.to_thread(state_of(request).service.extraction.flush_extraction, who.tenant)}

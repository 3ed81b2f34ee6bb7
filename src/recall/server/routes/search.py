"""Search a world's messages, long-term memories and facts: all of it, or what an agent may see."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request

from recall.server import answers, schemas, views
from recall.server.deps import ActingAgent, state_of, tenant_world
from recall.store.records import WorldRecord

router = APIRouter(tags=["search"])


@router.post(
    "/v1/worlds/{world}/search",
    summary="Search a world's messages, memories and facts",
    **answers.answering(answers.SearchResults),
)
def search_world(
    request: Request,
    record: Annotated[WorldRecord, tenant_world("search a whole world (agents search through their own route)")],
    body: schemas.SearchIn,
) -> dict[str, Any]:
    return _search(request, record.key, record.tenant, None, body)


@router.post(
    "/v1/worlds/{world}/agents/{agent}/search",
    summary="Search what an agent may see",
    **answers.answering(answers.SearchResults),
)
def search_agent(request: Request, acting: ActingAgent, body: schemas.SearchIn) -> dict[str, Any]:
    return _search(request, acting.key, acting.world.tenant, acting.agent, body)


def _search(
    request: Request, world_key: str, tenant: str, agent_id: str | None, body: schemas.SearchIn
) -> dict[str, Any]:
    results = state_of(request).service.searcher.search(
        world_key,
        body.query,
        tenant=tenant,
        kinds=body.kinds,
        k=body.k,
        method=body.method,
        agent=agent_id,
        chat_id=body.chat_id,
        sender=body.sender,
        since=body.since,
        until=body.until,
        min_importance=body.min_importance,
        min_score=body.min_score,
        metadata=body.metadata,
        now=body.now,
    )
    return views.search_hits(results)

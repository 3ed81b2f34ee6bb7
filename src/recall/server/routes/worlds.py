"""Worlds and their participants."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request

from recall.app.gate import Principal
from recall.server import schemas, views
from recall.server.deps import Caller, WorldOf, state_of, tenant_key, tenant_world
from recall.store.base import WorldRecord

router = APIRouter()


@router.post("/v1/worlds", status_code=201, tags=["worlds"], summary="Create a world")
def create_world(
    request: Request, body: schemas.WorldIn, who: Annotated[Principal, tenant_key("create worlds")]
) -> dict[str, Any]:
    record = state_of(request).service.worlds.create_world(body.id, body.name, body.turn_limit, tenant=who.tenant)
    return views.world(record)


@router.get("/v1/worlds", tags=["worlds"], summary="List the caller's worlds")
def list_worlds(request: Request, who: Caller) -> dict[str, Any]:
    return {"worlds": [views.world(w) for w in state_of(request).gate.worlds(who)]}


@router.get("/v1/worlds/{world}", tags=["worlds"], summary="A world with its participants and chats")
def get_world(request: Request, record: WorldOf) -> dict[str, Any]:
    service = state_of(request).service
    people = service.worlds.participants(record.key)
    return views.world_detail(
        record,
        agents=[p.id for p in people if p.kind == "agent"],
        humans=[p.id for p in people if p.kind == "human"],
        chats=service.posting.list_chats(record.key),
    )


@router.post("/v1/worlds/{world}/agents", status_code=201, tags=["participants"], summary="Register an agent")
def add_agent(
    request: Request, record: Annotated[WorldRecord, tenant_world("register agents")], body: schemas.AgentIn
) -> dict[str, Any]:
    settings = body.model_dump(exclude={"id"})
    profile = state_of(request).service.worlds.add_agent(record.key, body.id, **settings)
    return views.participant(record, profile.id, "agent", **settings)


@router.post("/v1/worlds/{world}/humans", status_code=201, tags=["participants"], summary="Register a human")
def add_human(
    request: Request, record: Annotated[WorldRecord, tenant_world("register humans")], body: schemas.HumanIn
) -> dict[str, Any]:
    human = state_of(request).service.worlds.add_human(record.key, body.id)
    return views.participant(record, human.id, "human")

"""Worlds and their participants."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from recall.app.gate import Principal
from recall.app.worlds import Worlds, profile_settings
from recall.server import answers, schemas, views
from recall.server.deps import ActingAgent, Caller, WorldOf, state_of, tenant_key, tenant_world
from recall.store.records import WorldRecord

router = APIRouter()


@router.post(
    "/v1/worlds",
    status_code=201,
    tags=["worlds"],
    summary="Create a world",
    **answers.answering(answers.WorldInfo, 201),
)
def create_world(
    request: Request, body: schemas.WorldIn, who: Annotated[Principal, tenant_key("create worlds")]
) -> dict[str, Any]:
    record = state_of(request).service.worlds.create_world(body.id, body.name, body.turn_limit, tenant=who.tenant)
    return views.world(record)


@router.get(
    "/v1/worlds",
    tags=["worlds"],
    summary="List the caller's worlds",
    **answers.answering(answers.Worlds),
)
def list_worlds(request: Request, who: Caller) -> dict[str, Any]:
    return {"worlds": [views.world(w) for w in state_of(request).gate.worlds(who)]}


@router.get(
    "/v1/worlds/{world}",
    tags=["worlds"],
    summary="A world with its participants and chats",
    **answers.answering(answers.WorldDetail),
)
def get_world(request: Request, record: WorldOf) -> dict[str, Any]:
    service = state_of(request).service
    people = service.worlds.participants(record.key)
    return views.world_detail(
        record,
        agents=[p.id for p in people if p.kind == "agent"],
        humans=[p.id for p in people if p.kind == "human"],
        chats=service.posting.list_chats(record.key),
    )


#: `?exist_ok=true`: registering a participant that is already there answers 200 with it as it
#: is, instead of 409 (so a setup script can run again).
ExistOk = Annotated[bool, Query(description="Answer 200 with the participant if it exists already")]
EXISTED = "It was registered already (`exist_ok=true`)"


@router.post(
    "/v1/worlds/{world}/agents",
    status_code=201,
    tags=["participants"],
    summary="Register an agent",
    **answers.answering(
        answers.AgentSettings, 201, also={200: {"model": answers.AgentSettings, "description": EXISTED}}
    ),
)
def add_agent(
    request: Request,
    response: Response,
    record: Annotated[WorldRecord, tenant_world("register agents")],
    body: schemas.AgentIn,
    exist_ok: ExistOk = False,
) -> dict[str, Any]:
    worlds = state_of(request).service.worlds
    settings = body.model_dump(exclude={"id"})
    with _registering(response, worlds, record, body.id, "agent", exist_ok):
        profile = worlds.add_agent(record.key, body.id, exist_ok=exist_ok, **settings)
    return views.participant(record, profile.id, "agent", **profile_settings(profile))


@router.post(
    "/v1/worlds/{world}/humans",
    status_code=201,
    tags=["participants"],
    summary="Register a human",
    **answers.answering(answers.Human, 201, also={200: {"model": answers.Human, "description": EXISTED}}),
)
def add_human(
    request: Request,
    response: Response,
    record: Annotated[WorldRecord, tenant_world("register humans")],
    body: schemas.HumanIn,
    exist_ok: ExistOk = False,
) -> dict[str, Any]:
    worlds = state_of(request).service.worlds
    with _registering(response, worlds, record, body.id, "human", exist_ok):
        human = worlds.add_human(record.key, body.id, exist_ok=exist_ok)
    return views.participant(record, human.id, "human", created_at=human.created_at.isoformat())


@router.get(
    "/v1/worlds/{world}/agents",
    tags=["participants"],
    summary="The world's agents with their settings",
    **answers.answering(answers.Agents),
)
def list_agents(
    request: Request, record: Annotated[WorldRecord, tenant_world("read every agent's settings")]
) -> dict[str, Any]:
    profiles = state_of(request).service.worlds.agents(record.key)
    return {"agents": [views.participant(record, p.id, "agent", **profile_settings(p)) for p in profiles]}


@router.get(
    "/v1/worlds/{world}/humans",
    tags=["participants"],
    summary="The world's humans",
    **answers.answering(answers.Humans),
)
def list_humans(request: Request, record: WorldOf) -> dict[str, Any]:
    humans = state_of(request).service.worlds.humans(record.key)
    return {"humans": [views.participant(record, h.id, "human", created_at=h.created_at.isoformat()) for h in humans]}


@router.get(
    "/v1/worlds/{world}/agents/{agent}",
    tags=["participants"],
    summary="An agent's settings",
    **answers.answering(answers.AgentSettings),
)
def get_agent(request: Request, acting: ActingAgent) -> dict[str, Any]:
    """The agent's profile: its admin's key or its own may read it."""
    profile = state_of(request).service.worlds.get_agent(acting.key, acting.agent)
    return views.participant(acting.world, profile.id, "agent", **profile_settings(profile))


@router.patch(
    "/v1/worlds/{world}/agents/{agent}",
    tags=["participants"],
    summary="Change an agent's settings",
    **answers.answering(answers.AgentSettings),
)
def update_agent(
    request: Request,
    agent: str,
    record: Annotated[WorldRecord, tenant_world("change agents")],
    body: schemas.AgentPatch,
) -> dict[str, Any]:
    """Settings left out stay as they are; null puts one back to its default."""
    profile = state_of(request).service.worlds.update_agent(record.key, agent, **body.model_dump(exclude_unset=True))
    return views.participant(record, profile.id, "agent", **profile_settings(profile))


@contextmanager
def _registering(
    response: Response, worlds: Worlds, record: WorldRecord, participant_id: str, kind: str, exist_ok: bool
) -> Iterator[None]:
    """Around a registration: 200 instead of 201 when `exist_ok` found the participant there."""
    there = exist_ok and any(
        p.id.lower() == participant_id.lower() and p.kind == kind for p in worlds.participants(record.key)
    )
    yield
    if there:
        response.status_code = 200

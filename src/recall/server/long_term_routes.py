"""REST routes for facts (`/v1/scopes/{scope}/facts…`), long-term memories and search.

A scope in a path is `user:ID`, `world:WORLD` or `agent:WORLD/AGENT` (the slash may be sent
as is or as %2F). Tenants: a user scope lives in the caller's tenant; world and agent scopes
must name a world of that tenant. A key bound to an agent reaches user and world scopes and
its own agent scope, never another agent's; it searches and lists only what it may see.

The handlers are plain functions: FastAPI runs them in worker threads, so a search that
catches the index up or embeds its query never holds the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse

from recall.app.gate import Gate, Principal
from recall.app.service import RecallService
from recall.server import schemas
from recall.server.access import Caller
from recall.store.base import WorldRecord

AgentOf = Callable[[str, str, Principal], tuple[str, str]]


def add_long_term_routes(app: FastAPI, service: RecallService, gate: Gate, agent_of: AgentOf) -> None:
    memory = service.long_term

    def world_of(world: str, who: Principal) -> WorldRecord:
        return gate.world(who, world)

    def scope_of(scope: str, who: Principal) -> tuple[str, str]:
        """(canonical scope, tenant) the caller may use."""
        return gate.scope(who, scope)

    # -- facts ------------------------------------------------------------------------------

    @app.get("/v1/scopes", tags=["facts"], summary="Scopes of the caller's tenant that hold facts")
    def list_scopes(who: Caller) -> dict[str, Any]:
        who.require_admin("list every scope")
        return {"scopes": [{"scope": s, "facts": n} for s, n in memory.fact_scopes(who.tenant)]}

    @app.get("/v1/scopes/{scope:path}/facts/export", tags=["facts"], summary="Export a scope's facts and sections")
    def export_facts(scope: str, who: Caller) -> dict[str, Any]:
        canonical, tenant = scope_of(scope, who)
        return memory.export_facts(canonical, tenant)

    @app.post("/v1/scopes/{scope:path}/facts/import", tags=["facts"], summary="Import facts (an export's JSON)")
    def import_facts(scope: str, body: schemas.FactsImportIn, who: Caller) -> dict[str, int]:
        canonical, tenant = scope_of(scope, who)
        data = body.model_dump(exclude={"replace"})
        data["sections"] = {k: v for k, v in data["sections"].items() if v is not None}
        return memory.import_facts(canonical, data, body.replace, tenant)

    @app.get("/v1/scopes/{scope:path}/facts", tags=["facts"], summary="A scope's facts and summary sections")
    def list_facts(scope: str, who: Caller) -> dict[str, Any]:
        canonical, tenant = scope_of(scope, who)
        return {
            "scope": canonical,
            "facts": [f.to_dict() for f in memory.list_facts(canonical, tenant)],
            "sections": memory.sections(canonical, tenant),
        }

    @app.post("/v1/scopes/{scope:path}/facts", status_code=201, tags=["facts"], summary="Add a fact")
    def add_fact(scope: str, body: schemas.FactIn, who: Caller) -> dict[str, Any]:
        canonical, tenant = scope_of(scope, who)
        return memory.add_facts(canonical, [body.model_dump()], tenant)[0].to_dict()

    @app.delete("/v1/scopes/{scope:path}/facts", tags=["facts"], summary="Clear a scope: every fact and section")
    def clear_facts(scope: str, who: Caller) -> dict[str, int]:
        canonical, tenant = scope_of(scope, who)
        return {"removed": memory.clear_facts(canonical, tenant)}

    @app.get("/v1/scopes/{scope:path}/facts/{fact_id}", tags=["facts"], summary="One fact")
    def get_fact(scope: str, fact_id: Annotated[int, schemas.Field(ge=1, le=2**62)], who: Caller) -> dict[str, Any]:
        canonical, tenant = scope_of(scope, who)
        return memory.get_fact(canonical, fact_id, tenant).to_dict()

    @app.patch("/v1/scopes/{scope:path}/facts/{fact_id}", tags=["facts"], summary="Change some fields of a fact")
    def update_fact(
        scope: str,
        fact_id: Annotated[int, schemas.Field(ge=1, le=2**62)],
        body: schemas.FactPatch,
        who: Caller,
    ) -> dict[str, Any]:
        canonical, tenant = scope_of(scope, who)
        changes = body.model_dump(exclude_unset=True)
        return memory.update_fact(canonical, fact_id, changes, tenant).to_dict()

    @app.delete("/v1/scopes/{scope:path}/facts/{fact_id}", tags=["facts"], summary="Delete a fact")
    def delete_fact(scope: str, fact_id: Annotated[int, schemas.Field(ge=1, le=2**62)], who: Caller) -> dict[str, bool]:
        canonical, tenant = scope_of(scope, who)
        memory.delete_fact(canonical, fact_id, tenant)
        return {"deleted": True}

    @app.get("/v1/scopes/{scope:path}/sections", tags=["facts"], summary="A scope's summary sections")
    def get_sections(scope: str, who: Caller) -> dict[str, str]:
        canonical, tenant = scope_of(scope, who)
        return memory.sections(canonical, tenant)

    @app.put("/v1/scopes/{scope:path}/sections", tags=["facts"], summary="Set sections (an empty text removes one)")
    def set_sections(scope: str, body: schemas.SectionsIn, who: Caller) -> dict[str, str]:
        canonical, tenant = scope_of(scope, who)
        return memory.set_sections(canonical, body.model_dump(exclude_none=True), tenant)

    # -- long-term memories -----------------------------------------------------------------

    @app.post("/v1/worlds/{world}/memories", status_code=201, tags=["memories"], summary="Add a shared memory")
    def add_shared_note(world: str, body: schemas.NoteIn, who: Caller) -> JSONResponse:
        record = world_of(world, who)
        note = memory.add_note(record.key, **_note_args(body))
        return JSONResponse(note.to_dict(), status_code=201)

    @app.get("/v1/worlds/{world}/memories", tags=["memories"], summary="Shared memories, most important first")
    def list_shared_notes(
        world: str,
        who: Caller,
        min_importance: Annotated[int, Query(ge=1, le=10)] = 1,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> dict[str, Any]:
        record = world_of(world, who)
        return {"memories": [n.to_dict() for n in memory.list_notes(record.key, None, min_importance, limit)]}

    @app.delete("/v1/worlds/{world}/memories/{note_id}", tags=["memories"], summary="Delete a shared memory")
    def delete_shared_note(
        world: str, note_id: Annotated[int, schemas.Field(ge=1, le=2**62)], who: Caller
    ) -> dict[str, bool]:
        who.require_admin("delete shared memories")
        record = world_of(world, who)
        memory.delete_note(record.key, note_id)
        return {"deleted": True}

    @app.post(
        "/v1/worlds/{world}/agents/{agent}/memories", status_code=201, tags=["memories"], summary="Add a private memory"
    )
    def add_private_note(world: str, agent: str, body: schemas.NoteIn, who: Caller) -> JSONResponse:
        world_id, agent_id = agent_of(world, agent, who)
        note = memory.add_note(world_id, agent=agent_id, **_note_args(body))
        return JSONResponse(note.to_dict(), status_code=201)

    @app.get(
        "/v1/worlds/{world}/agents/{agent}/memories", tags=["memories"], summary="Shared memories and the agent's own"
    )
    def list_agent_notes(
        world: str,
        agent: str,
        who: Caller,
        min_importance: Annotated[int, Query(ge=1, le=10)] = 1,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> dict[str, Any]:
        world_id, agent_id = agent_of(world, agent, who)
        return {"memories": [n.to_dict() for n in memory.list_notes(world_id, agent_id, min_importance, limit)]}

    @app.delete(
        "/v1/worlds/{world}/agents/{agent}/memories/{note_id}", tags=["memories"], summary="Delete one of its memories"
    )
    def delete_agent_note(
        world: str,
        agent: str,
        note_id: Annotated[int, schemas.Field(ge=1, le=2**62)],
        who: Caller,
    ) -> dict[str, bool]:
        world_id, agent_id = agent_of(world, agent, who)
        memory.delete_note(world_id, note_id, agent=agent_id)
        return {"deleted": True}

    # -- extraction ---------------------------------------------------------------------------

    @app.post(
        "/v1/worlds/{world}/agents/{agent}/extract",
        status_code=202,
        tags=["facts"],
        summary="Queue fact extraction from an agent's conversation (after its run)",
    )
    def extract(world: str, agent: str, body: schemas.ExtractIn, who: Caller) -> dict[str, Any]:
        record = world_of(world, who)
        world_id, agent_id = agent_of(world, agent, who)
        scope = None if body.scope is None else scope_of(body.scope, who)[0]
        return memory.extract(world_id, agent_id, body.chat_id, scope, record.tenant)

    @app.post("/v1/extraction/flush", tags=["facts"], summary="Run the caller's queued fact extractions now")
    async def flush_extraction(who: Caller) -> dict[str, int]:
        who.require_admin("flush the extraction queue")
        # Model calls take seconds: off the event loop, so waiting checks keep being answered.
        return {"extractions": await asyncio.to_thread(memory.flush_extraction, who.tenant)}

    # -- search -----------------------------------------------------------------------------

    @app.post("/v1/worlds/{world}/search", tags=["search"], summary="Search a world's messages, memories and facts")
    def search_world(world: str, body: schemas.SearchIn, who: Caller) -> dict[str, Any]:
        who.require_admin("search a whole world (agents search through their own route)")
        record = world_of(world, who)
        return _search(record.key, record.tenant, None, body)

    @app.post("/v1/worlds/{world}/agents/{agent}/search", tags=["search"], summary="Search what an agent may see")
    def search_agent(world: str, agent: str, body: schemas.SearchIn, who: Caller) -> dict[str, Any]:
        record = world_of(world, who)
        world_id, agent_id = agent_of(world, agent, who)
        return _search(world_id, record.tenant, agent_id, body)

    def _search(world_id: str, tenant: str, agent_id: str | None, body: schemas.SearchIn) -> dict[str, Any]:
        results = memory.search(
            world_id,
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
        )
        return {"results": [r.to_dict() for r in results]}


def _note_args(body: schemas.NoteIn) -> dict[str, Any]:
    return {
        "content": body.content,
        "type": body.type,
        "importance": body.importance,
        "chat_id": body.chat_id,
        "metadata": body.metadata,
    }

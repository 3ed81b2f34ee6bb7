"""Facts (`/v1/scopes/{scope}/facts…`) and a scope's summary sections.

A scope in a path is `user:ID`, `world:WORLD` or `agent:WORLD/AGENT` (the slash may be sent
as is or as %2F). Tenants: a user scope lives in the caller's tenant; world and agent scopes
must name a world of that tenant. A key bound to an agent reaches user and world scopes and
its own agent scope, never another agent's (`app/gate.py`, through `deps.FactScope`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request

from recall.app.gate import Principal
from recall.server import answers, schemas, views
from recall.server.deps import FactId, FactScope, facts_of, tenant_key

router = APIRouter(tags=["facts"])


@router.get(
    "/v1/scopes",
    summary="Scopes of the caller's tenant that hold facts",
    **answers.answering(answers.Scopes),
)
def list_scopes(request: Request, who: Annotated[Principal, tenant_key("list every scope")]) -> dict[str, Any]:
    return {"scopes": [{"scope": s, "facts": n} for s, n in facts_of(request).fact_scopes(who.tenant)]}


@router.get(
    "/v1/scopes/{scope:path}/facts/export",
    summary="Export a scope's facts and sections",
    **answers.answering(answers.FactsExport),
)
def export_facts(request: Request, scope: FactScope) -> dict[str, Any]:
    return facts_of(request).export_facts(*scope)


@router.post(
    "/v1/scopes/{scope:path}/facts/import",
    summary="Import facts (an export's JSON)",
    **answers.answering(answers.FactsImported),
)
def import_facts(request: Request, scope: FactScope, body: schemas.FactsImportIn) -> dict[str, int]:
    data = body.model_dump(exclude={"replace"})
    data["sections"] = {k: v for k, v in data["sections"].items() if v is not None}
    canonical, tenant = scope
    return facts_of(request).import_facts(canonical, data, body.replace, tenant)


@router.get(
    "/v1/scopes/{scope:path}/facts",
    summary="A scope's facts and summary sections",
    **answers.answering(answers.FactListing),
)
def list_facts(request: Request, scope: FactScope) -> dict[str, Any]:
    facts = facts_of(request)
    return views.facts(facts.list_facts(*scope), facts.sections(*scope), scope=scope[0])


@router.post(
    "/v1/scopes/{scope:path}/facts",
    status_code=201,
    summary="Add a fact",
    **answers.answering(answers.Fact, 201),
)
def add_fact(request: Request, scope: FactScope, body: schemas.FactIn) -> dict[str, Any]:
    canonical, tenant = scope
    return facts_of(request).add_facts(canonical, [body.model_dump()], tenant)[0].to_dict()


@router.delete(
    "/v1/scopes/{scope:path}/facts",
    summary="Clear a scope: every fact and section",
    **answers.answering(answers.FactsRemoved),
)
def clear_facts(request: Request, scope: FactScope) -> dict[str, int]:
    return {"removed": facts_of(request).clear_facts(*scope)}


@router.get(
    "/v1/scopes/{scope:path}/facts/{fact_id}",
    summary="One fact",
    **answers.answering(answers.Fact),
)
def get_fact(request: Request, scope: FactScope, fact_id: FactId) -> dict[str, Any]:
    canonical, tenant = scope
    return facts_of(request).get_fact(canonical, fact_id, tenant).to_dict()


@router.patch(
    "/v1/scopes/{scope:path}/facts/{fact_id}",
    summary="Change some fields of a fact",
    **answers.answering(answers.Fact),
)
def update_fact(request: Request, scope: FactScope, fact_id: FactId, body: schemas.FactPatch) -> dict[str, Any]:
    canonical, tenant = scope
    changes = body.model_dump(exclude_unset=True)
    return facts_of(request).update_fact(canonical, fact_id, changes, tenant).to_dict()


@router.delete(
    "/v1/scopes/{scope:path}/facts/{fact_id}",
    summary="Delete a fact",
    **answers.answering(answers.DeletedOne),
)
def delete_fact(request: Request, scope: FactScope, fact_id: FactId) -> dict[str, bool]:
    canonical, tenant = scope
    facts_of(request).delete_fact(canonical, fact_id, tenant)
    return views.deleted()


@router.get(
    "/v1/scopes/{scope:path}/sections",
    summary="A scope's summary sections",
    **answers.answering(answers.Sections),
)
def get_sections(request: Request, scope: FactScope) -> dict[str, str]:
    return facts_of(request).sections(*scope)


@router.put(
    "/v1/scopes/{scope:path}/sections",
    summary="Set sections (an empty text removes one)",
    **answers.answering(answers.Sections),
)
def set_sections(request: Request, scope: FactScope, body: schemas.SectionsIn) -> dict[str, str]:
    canonical, tenant = scope
    return facts_of(request).set_sections(canonical, body.model_dump(exclude_none=True), tenant)

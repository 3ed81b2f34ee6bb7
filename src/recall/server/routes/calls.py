"""Recorded model calls of an agent: listed newest first, read, replayed from the store and
compared (docs/context.md, "What the model saw"). An agent's key reads only its own calls."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from recall.server import answers, context_answers, schemas
from recall.server.deps import ActingAgent, state_of

router = APIRouter(tags=["calls"])

CallId = Annotated[str, "the id of a recorded call, c_…"]


@router.get(
    "/v1/worlds/{world}/agents/{agent}/calls",
    summary="The agent's recorded model calls",
    **answers.answering(context_answers.Calls),
)
def list_calls(
    request: Request,
    acting: ActingAgent,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    before: Annotated[datetime | None, Query(description="only calls made before this time")] = None,
) -> dict[str, Any]:
    """Newest first; each with its counts of items in and left out (`GET …/calls/{id}` has the
    items: ids, versions, scores, reasons), never its text."""
    calls = state_of(request).service.calls.list(acting.key, acting.agent, before=before, limit=limit)
    return {"calls": [call.to_dict() for call in calls]}


@router.get(
    "/v1/worlds/{world}/agents/{agent}/calls/{call_id}",
    summary="One recorded model call",
    **answers.answering(context_answers.Call),
)
def get_call(request: Request, acting: ActingAgent, call_id: str) -> dict[str, Any]:
    return state_of(request).service.calls.get(acting.key, acting.agent, call_id).to_dict()


@router.post(
    "/v1/worlds/{world}/agents/{agent}/calls/{call_id}/outcome",
    summary="Report what came of a call",
    **answers.answering(context_answers.Outcome),
)
def report_outcome(request: Request, acting: ActingAgent, call_id: str, body: schemas.OutcomeIn) -> dict[str, Any]:
    """The model answered (`error` null) or failed (`error` says how): shown with the call, in
    the inspector's timeline, and counted in /metrics (`recall_model_call_failures_total`). A
    runner reports each of its calls."""
    state = state_of(request)
    call = state.service.calls.report_outcome(acting.key, acting.agent, call_id, body.error)
    state.metrics.observe_outcome(call.outcome)
    return {"id": call.id, "outcome": call.outcome, "error": call.error}


@router.get(
    "/v1/worlds/{world}/agents/{agent}/calls/{call_id}/replay",
    summary="Rebuild a call from the store",
    **answers.answering(context_answers.Replay),
)
def replay_call(request: Request, acting: ActingAgent, call_id: str) -> dict[str, Any]:
    """The call's context rebuilt now (same trigger, same explicit settings): `identical` when
    the model would get the same bytes, else `diff` item by item with what the store says of
    each (deleted, edited, settings changed)."""
    return state_of(request).service.calls.replay(acting.key, acting.agent, call_id).to_dict()


@router.post(
    "/v1/worlds/{world}/agents/{agent}/calls/{call_id}/compare",
    summary="Compare a call",
    **answers.answering(context_answers.Replay),
)
def compare_call(request: Request, acting: ActingAgent, call_id: str, body: schemas.CompareIn) -> dict[str, Any]:
    """The call beside another recorded call (`other`), or beside its context rebuilt now with
    the settings given: what a settings change does to the context."""
    settings = body.model_dump(exclude={"other"}, exclude_none=True)
    return state_of(request).service.calls.compare(acting.key, acting.agent, call_id, body.other, **settings).to_dict()

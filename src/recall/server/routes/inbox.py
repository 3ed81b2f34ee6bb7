"""An agent's inbox: what it was sent, checking for new messages (long-poll), acknowledging."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from recall.server import answers, context_answers, schemas, views
from recall.server.deps import ActingAgent, state_of
from recall.server.inbox import MAX_WAIT_SECONDS, InboxQuery, run_check

router = APIRouter(tags=["agents"])


@router.get(
    "/v1/worlds/{world}/agents/{agent}/deliveries",
    summary="What the agent was sent",
    **answers.answering(answers.Deliveries),
)
def deliveries(
    request: Request,
    acting: ActingAgent,
    unread_only: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """Messages delivered to the agent, oldest first, each with whether it is read. Unlike the
    inbox check this only reads: nothing is marked read."""
    entries = state_of(request).service.deliveries.inbox(acting.key, acting.agent, unread_only, limit)
    return {"messages": [views.delivery(m, read) for m, read in entries]}


@router.get(
    "/v1/worlds/{world}/agents/{agent}/inbox",
    summary="Check for new messages",
    responses={200: {"model": context_answers.InboxCheck}},
)
async def check_inbox(
    request: Request,
    acting: ActingAgent,
    wait: Annotated[bool, Query(description="long-poll until a message arrives or timeout")] = False,
    timeout: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS)] = 30,
    mark_read: bool = False,
    include_context: bool = False,
    context_limit: Annotated[int | None, Query(ge=1, le=100)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    session: Annotated[str, Query(min_length=1, max_length=200)] = "default",
    chat_id: Annotated[str | None, Query(max_length=64)] = None,
    refresh: Annotated[bool, Query(description="send the whole context again")] = False,
    record: Annotated[
        bool, Query(description="with include_context: record the context as a model call (its id: call_id)")
    ] = True,
) -> Response:
    state = state_of(request)
    query = InboxQuery(
        limit, include_context, context_limit, session, chat_id, refresh, mark_read, wait, timeout, record
    )
    checked = await run_check(
        state.notifier,
        acting.key,
        acting.agent,
        query,
        state.checks,
        disconnected=_disconnected(request) if wait else None,
        metrics=state.metrics,
    )
    return Response(checked.body(), media_type="application/json")


@router.post(
    "/v1/worlds/{world}/agents/{agent}/inbox/ack",
    summary="Mark messages read",
    **answers.answering(answers.Acknowledged),
)
def ack(request: Request, acting: ActingAgent, body: schemas.AckIn) -> dict[str, int]:
    return {"acknowledged": state_of(request).service.deliveries.ack(acting.key, acting.agent, body.ids)}


async def _disconnected(request: Request) -> None:
    """Completes when the client closes the connection."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return

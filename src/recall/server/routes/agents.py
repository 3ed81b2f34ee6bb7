"""What an agent does: reply, decide whether to answer, count model calls, build its context,
record observations and actions (simulations)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from recall.app.posting import PostRequest
from recall.server import answers, context_answers, schemas, views
from recall.server.deps import ActingAgent, state_of
from recall.server.routes.messages import announce

router = APIRouter(tags=["agents"])


@router.post(
    "/v1/worlds/{world}/agents/{agent}/send",
    status_code=201,
    summary="Post as the agent",
    **answers.answering(answers.Sent, 201),
)
async def send(request: Request, acting: ActingAgent, body: schemas.SendIn) -> dict[str, Any]:
    state = state_of(request)
    post = PostRequest(
        acting.agent, body.content, body.chat_id, None, body.parent_id, None, body.idempotency_key, body.metadata
    )
    stored = await state.writer.post(acting.key, post)
    return {**views.sent(stored[0]), "delivered_to": announce(state, stored)["delivered_to"]}


@router.post(
    "/v1/worlds/{world}/agents/{agent}/tool-results",
    status_code=201,
    summary="Store a result of the agent's tool call",
    **answers.answering(answers.Sent, 201),
)
def tool_result(request: Request, acting: ActingAgent, body: schemas.ToolResultIn) -> dict[str, Any]:
    """The result of one of the agent's own tool calls, for that agent alone: its context shows
    it as the `tool` message answering `call_id`; no other agent's context, search or inbox
    shows it. The agent's own key may store it (a `system` post needs the tenant's)."""
    service = state_of(request).service
    message = service.posting.post_tool_result(
        acting.key, acting.agent, body.content, body.call_id, body.chat_id, body.parent_id
    )
    return {**views.sent(message), "delivered_to": list(service.worlds.recipients(acting.key, message))}


@router.post(
    "/v1/worlds/{world}/agents/{agent}/decide",
    summary="Would the agent answer now?",
    **answers.answering(answers.Decision),
)
def decide(request: Request, acting: ActingAgent, body: schemas.DecideIn) -> dict[str, Any]:
    """The live decision for one message, turn limit included (spec §2): a human or world
    message resets the agent's turn counter. When the limit stops the agent, `notice` is
    the text it posts instead of answering."""
    service = state_of(request).service
    made = service.agent_state.decide(acting.key, acting.agent, body.message_id)
    return views.decision(made, service.agent_state.turn_limit(service.worlds.get_world(acting.key)))


@router.post(
    "/v1/worlds/{world}/agents/{agent}/llm-calls",
    summary="Count one LLM call",
    **answers.answering(answers.TurnCount),
)
def llm_call(request: Request, acting: ActingAgent) -> dict[str, Any]:
    """Count one model call of the agent against its turn limit; the new count."""
    return {"turn_count": state_of(request).service.agent_state.record_llm_call(acting.key, acting.agent)}


@router.post(
    "/v1/worlds/{world}/agents/{agent}/context",
    summary="Build the agent's context",
    **answers.answering(context_answers.OpenAIContext | context_answers.AnthropicContext),
)
def context(request: Request, acting: ActingAgent, body: schemas.ContextIn) -> dict[str, Any]:
    state = state_of(request)
    built = state.service.contexts.build_context(
        acting.key,
        acting.agent,
        body.chat_id,
        max_tokens=body.max_tokens,
        history_limit=body.history_limit,
        message_id=body.message_id,
        channel=body.channel,
        recalled_max_tokens=body.recalled_max_tokens,
        model=body.model,
    )
    if body.record:
        built = state.service.calls.record(built, "rest")
    state.metrics.observe_context(built.report)
    return views.context(built, body.format)


@router.post(
    "/v1/worlds/{world}/agents/{agent}/observations",
    status_code=201,
    **answers.answering(answers.StoredId, 201),
)
def observe(request: Request, acting: ActingAgent, body: schemas.ObservationIn) -> dict[str, int]:
    """Store what the agent perceives (simulations); shown in its context in the first person."""
    return {"id": state_of(request).service.agent_state.observe(acting.key, acting.agent, body.model_dump())}


@router.post(
    "/v1/worlds/{world}/agents/{agent}/actions",
    status_code=201,
    **answers.answering(answers.StoredId, 201),
)
def act(request: Request, acting: ActingAgent, body: schemas.ActionIn) -> dict[str, int]:
    """Store what the agent did (simulations)."""
    return {"id": state_of(request).service.agent_state.act(acting.key, acting.agent, body.model_dump())}

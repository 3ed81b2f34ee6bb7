"""Posting to a world's chats and reading them back."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from recall.app.posting import PostRequest
from recall.core.models import Message
from recall.core.routing import would_respond
from recall.server import answers, schemas, views
from recall.server.deps import Caller, ServerState, WorldOf, state_of
from recall.server.writer import Posted

router = APIRouter(tags=["messages"])


@router.post(
    "/v1/worlds/{world}/messages",
    status_code=201,
    summary="Post a message",
    responses={201: {"model": answers.Posted}},
)
async def post_message(request: Request, world: str, body: schemas.MessageIn, who: Caller) -> JSONResponse:
    if who.agent is not None:
        who.require_agent(body.sender)
    state = state_of(request)
    post = PostRequest(
        body.sender,
        body.content,
        body.chat_id,
        body.channel,
        body.parent_id,
        body.created_at,
        body.idempotency_key,
        body.metadata,
    )
    # The world is looked up in the writer's worker thread, with the posts it commits together.
    stored = await state.writer.post(lambda: state.gate.world(who, world).key, post)
    return JSONResponse(announce(state, stored), status_code=201)


def announce(state: ServerState, stored: Posted) -> dict[str, Any]:
    """Wake the waiting checks a stored post is for; its answer, with `delivered_to`."""
    message, world_key, delivered = stored
    state.notifier.notify(world_key, message, delivered)
    state.metrics.observe_post(len(delivered))
    return views.posted(message, delivered)


@router.get(
    "/v1/worlds/{world}/messages",
    summary="A chat's messages, oldest first",
    **answers.answering(answers.MessagePage),
)
def list_messages(
    request: Request,
    who: Caller,
    record: WorldOf,
    chat_id: Annotated[str | None, Query(max_length=64)] = None,
    after: Annotated[int, Query(ge=0, le=2**62, description="cursor: only ids above this")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    all_chats: Annotated[bool, Query(description="every chat of the world, not one")] = False,
    detail: Annotated[
        bool, Query(description="add `delivered_to` and `would_respond` (the agents it addresses)")
    ] = False,
) -> dict[str, Any]:
    """With an agent's key, only what that agent heard or wrote: a page may then hold fewer than
    `limit` messages, and `next_after` still goes on from the last message read."""
    posting = state_of(request).service.posting
    page = posting.messages(record.key, chat_id, after, limit, all_chats)
    shown = page if who.agent is None else posting.heard(record.key, who.agent, page)
    delivered = posting.delivered_to(record.key, shown) if detail else {}
    return {
        "messages": [_detailed(m, delivered[m.id]) if detail else m.to_dict() for m in shown],
        "next_after": page[-1].id if len(page) == limit else None,
    }


def _detailed(message: Message, delivered: list[str]) -> dict[str, Any]:
    return views.detailed(message, delivered, [agent for agent in delivered if would_respond(agent, message)])

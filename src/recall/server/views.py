"""The JSON shapes REST and MCP both answer with, written once.

Each function turns what the service returned into the plain dict a route or a tool returns;
neither interface builds a body of its own, so a field cannot drift between them. The OpenAPI
schema describes these shapes in `answers.py` and `context_answers.py`: a field changed here is
changed there too (tests/server/test_response_schemas.py fails until it is).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

from recall.core.context_records import Context
from recall.core.inbox import CheckResult
from recall.core.models import Message
from recall.core.routing import Decision
from recall.server.json_body import JsonBody
from recall.store.records import WorldRecord


class Record(Protocol):
    """A stored thing that knows its JSON (a note, a fact, a memory, a search hit)."""

    def to_dict(self) -> dict[str, Any]: ...


def error(
    status: int,
    kind: str,
    message: str,
    field: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    **more: Any,
) -> JsonBody:
    """Every error body: `{"error": {"type", "message", "field"?, …}}`."""
    body: dict[str, Any] = {"type": kind, "message": message}
    if field is not None:
        body["field"] = field
    return JsonBody({"error": {**body, **more}}, status_code=status, headers=headers)


def each(records: Iterable[Record]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in records]


# -- worlds and participants --------------------------------------------------------------------


def world(record: WorldRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "name": record.name,
        "turn_limit": record.turn_limit,
        "created_at": record.created_at.isoformat(),
    }


def world_detail(
    record: WorldRecord, agents: Sequence[str], humans: Sequence[str], chats: Iterable[tuple[str | None, int]]
) -> dict[str, Any]:
    return {
        **world(record),
        "agents": list(agents),
        "humans": list(humans),
        "chats": [{"id": chat, "messages": count} for chat, count in chats],
    }


def participant(record: WorldRecord, participant_id: str, kind: str, **settings: Any) -> dict[str, Any]:
    return {"world_id": record.id, "id": participant_id, "kind": kind, **settings}


# -- messages and inboxes -----------------------------------------------------------------------


def posted(message: Message, delivered: Sequence[str]) -> dict[str, Any]:
    """A stored message with the agents it was delivered to."""
    return {**message.to_dict(), "delivered_to": list(delivered)}


def detailed(message: Message, delivered: Sequence[str], responders: Sequence[str]) -> dict[str, Any]:
    return {**posted(message, delivered), "would_respond": list(responders)}


def delivery(message: Message, read: bool) -> dict[str, Any]:
    return {**message.to_dict(), "read": read}


def sent(message: Message) -> dict[str, Any]:
    """What an agent's send answers (REST adds `delivered_to`)."""
    return {
        "message_id": message.id,
        "timestamp": message.created_at.isoformat(),
        "mentions": list(message.mentions),
        "thread_id": message.metadata.get("thread_id", message.id),
        "chat_id": message.chat_id,
    }


def check(result: CheckResult) -> dict[str, Any]:
    """An inbox check: `{new_mentions, context, context_metadata}`."""
    return result.to_dict()


def decision(made: Decision, turn_limit: int | None) -> dict[str, Any]:
    return {
        "respond": made.respond,
        "turn_count": made.turn_count,
        "turn_limit": turn_limit,
        "notice": made.notice,
        "reason": made.reason,
    }


def context(built: Context, format: Literal["openai", "anthropic"]) -> dict[str, Any]:
    """A model-ready context: `{messages, report}`, with `system` for the anthropic format."""
    report = built.report.to_dict()
    recorded = {} if built.call_id is None else {"call_id": built.call_id}
    if format == "anthropic":
        out = built.anthropic()
        return {"system": out["system"], "messages": out["messages"], "report": report, **recorded}
    return {"messages": built.openai(), "report": report, **recorded}


# -- notes, facts, memories, search -------------------------------------------------------------


def notes(items: Iterable[Record]) -> dict[str, Any]:
    """The agent's private key-value notes."""
    return {"items": each(items)}


def forgotten(done: bool) -> dict[str, bool]:
    return {"forgotten": done}


def facts(facts: Iterable[Record], sections: dict[str, str], scope: str | None = None) -> dict[str, Any]:
    """A scope's facts and summary sections (REST names the scope too)."""
    listing = {"facts": each(facts), "sections": sections}
    return listing if scope is None else {"scope": scope, **listing}


def memories(notes: Iterable[Record]) -> dict[str, Any]:
    """Long-term memories, most important first."""
    return {"memories": each(notes)}


def search_hits(results: Iterable[Record]) -> dict[str, Any]:
    return {"results": each(results)}


def deleted() -> dict[str, bool]:
    return {"deleted": True}

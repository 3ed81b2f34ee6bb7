"""Zep's users, sessions, messages and facts, read into one recall world.

Zep has no export file, so the file is its API's answers put together (`zep_cloud` SDK types:
`User`, `Session`/`Thread`, `Message`, `Fact`/`EntityEdge`), written with `json.dump`:

    {"users": [{"user_id", "first_name"?, "last_name"?, "email"?, "metadata"?, "created_at"?,
                "facts": [fact, …]?}],
     "sessions": [{"session_id" (or "thread_id"), "user_id"?, "metadata"?, "created_at"?,
                   "messages": [message, …] (or the {"messages": […]} page the API returns),
                   "facts": [fact, …]?}]}

A message is `{"uuid"?, "created_at"?, "role", "role_type"?, "name"?, "content", "metadata"?}`:
Zep v2 puts the kind in `role_type` (user, assistant, system, tool, function, norole) and a name
in `role`; v3 puts the kind in `role` and the name in `name`. A fact is
`{"uuid", "fact", "created_at", "valid_at"?, "invalid_at"?, "expired_at"?, "rating"?, …}`.

The world (`zep` by default) gets each user as a human and the assistant as an agent (`agent`,
or the name a message gives); each session is a chat of it (messages in order, with their times;
the Zep uuid is the message's idempotency key and is kept in its metadata). User and assistant
messages are the user's and the agent's; system, tool, function and norole messages are posted
by `system` (kept, never answered). A fact becomes a fact about its user (`user:ID`), with its
created_at and its uuid as the fact's source; a fact Zep marks no longer true (`invalid_at` or
`expired_at` set) is not imported, and fields recall has no place for are counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recall.api import Recall
from recall.app.posting import PostRequest
from recall.core.facts import NewFact
from recall.errors import InvalidInputError
from recall.importers.conversations import Conversation, slug
from recall.importers.json_file import at, ident, load_json, mapping, obj, objects, text, time
from recall.importers.plan import IMPORTED_FROM, ImportPlan, PlannedAgent, origin
from recall.importers.report import ImportReport
from recall.importers.storing import Progress, store_plan

SYSTEM = "zep"
ROLE_TYPES = ("user", "assistant", "system", "tool", "function", "norole")
#: Fields of a fact recall maps (the rest are counted as unmapped).
_FACT_FIELDS = {"uuid", "fact", "created_at", "invalid_at", "expired_at", "content"}
_MESSAGE_FIELDS = {"uuid", "created_at", "updated_at", "role", "role_type", "name", "content", "metadata"}
_USER_FIELDS = {"user_id", "created_at", "updated_at", "facts", "uuid", "id"}
_SESSION_FIELDS = {"session_id", "thread_id", "user_id", "created_at", "updated_at", "messages", "facts", "uuid", "id"}


def read_zep(path: str | Path, world_id: str = "zep", agent: str = "assistant") -> ImportPlan:
    """What importing the Zep file at `path` into `world_id` would write (nothing is stored);
    an InvalidInputError naming the place in the file for anything not in this shape."""
    data, _ = load_json(path, "a Zep export ({users, sessions})")
    data = obj(data, "")
    if "users" not in data and "sessions" not in data and "threads" not in data:
        raise InvalidInputError("file", 'a Zep file is {"users": [...], "sessions": [...]} (see docs/importing.md)')
    plan = ImportPlan(ImportReport(SYSTEM, Path(path).name))
    world = slug(world_id)
    plan.add_world(world, world_id)
    default_agent = slug(agent)
    conversation = Conversation(world_id=world, name=world_id)
    plan.conversations.append(conversation)
    for where, user in objects(data.get("users", []), "users"):
        user_id = _id(user, "user_id", where)
        assert user_id is not None
        plan.add_human(world, user_id)
        _unmapped_fields(plan, user, _USER_FIELDS, "user")
        _read_facts(plan, user_id, user.get("facts", []), at(where, "facts"))
    sessions_key = "sessions" if "sessions" in data else "threads"
    for where, session in objects(data.get(sessions_key, []), sessions_key):
        _read_session(plan, conversation, session, where, default_agent)
    return plan


def _read_session(
    plan: ImportPlan, conversation: Conversation, session: dict[str, Any], where: str, default_agent: str
) -> None:
    world = conversation.world_id
    chat = _id(session, "session_id" if "session_id" in session else "thread_id", where)
    user = _id(session, "user_id", where, required=False)
    if user is not None:
        plan.add_human(world, user)
    _unmapped_fields(plan, session, _SESSION_FIELDS, "session")
    messages = session.get("messages", [])
    if isinstance(messages, dict):  # the page the API returns: {"messages": [...], "total_count": ...}
        messages = messages.get("messages", [])
        where = at(where, "messages")
    for number, (place, message) in enumerate(objects(messages, at(where, "messages"))):
        request = _message(plan, world, message, place, chat, user, default_agent, number)
        if request is not None:
            conversation.messages.append(request)
    if user is not None:
        _read_facts(plan, user, session.get("facts", []), at(where, "facts"))
    elif session.get("facts"):
        raise InvalidInputError(at(where, "facts"), "facts of a session without a user_id have no one to be about")


def _message(
    plan: ImportPlan,
    world: str,
    message: dict[str, Any],
    where: str,
    chat: str | None,
    user: str | None,
    default_agent: str,
    number: int,
) -> PostRequest | None:
    role = text(message, "role", where)
    role_type = text(message, "role_type", where, required=False)
    kind, name = (role_type, role) if role_type is not None else (role, text(message, "name", where, required=False))
    if kind not in ROLE_TYPES:
        raise InvalidInputError(
            at(where, "role_type" if role_type is not None else "role"),
            f"must be one of {', '.join(ROLE_TYPES)}, got {kind!r}",
        )
    content = message.get("content")
    if not isinstance(content, str):
        raise InvalidInputError(at(where, "content"), "must be text")
    uuid = ident(message, "uuid", where, required=False)
    created = time(message, "created_at", where, required=False)
    metadata = mapping(message, "metadata", where)
    _unmapped_fields(plan, message, _MESSAGE_FIELDS, "message")
    if not content.strip():
        plan.report.leave_out("messages with no text (recall stores no empty message)")
        return None
    named = slug(name) if name and name.strip() and name.strip().lower() not in ROLE_TYPES else None
    if kind == "user":
        sender = user or named or "user"
        plan.add_human(world, sender)
    elif kind == "assistant":
        sender = named or default_agent
        plan.add_agent(PlannedAgent(world, sender))
    else:
        sender = "system"
    kept = origin(SYSTEM, uuid, session_id=chat, role=name, role_type=kind)
    return PostRequest(
        sender=sender,
        content=content,
        chat_id=chat,
        created_at=created,
        metadata={**metadata, IMPORTED_FROM: kept},
        idempotency_key=f"zep {uuid}" if uuid else f"zep {chat} {number}",
    )


def _read_facts(plan: ImportPlan, user: str, facts: Any, where: str) -> None:
    for place, fact in objects(facts if facts is not None else [], where):
        uuid = ident(fact, "uuid", place)
        # Zep v2 calls the sentence `fact` (older answers `content`).
        sentence = text(fact, "fact" if "fact" in fact else "content", place)
        created = time(fact, "created_at", place)
        assert uuid is not None and sentence is not None and created is not None
        ended = time(fact, "invalid_at", place, required=False) or time(fact, "expired_at", place, required=False)
        _unmapped_fields(plan, fact, _FACT_FIELDS, "fact")
        if ended is not None:
            plan.report.leave_out("facts Zep marks no longer true (invalid_at or expired_at set)")
            continue
        new = NewFact(sentence, category="knowledge", confidence=1.0, source=f"zep:{uuid}")
        plan.add_fact(f"user:{user}", new, created, place)


def _id(parent: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = ident(parent, key, where, required=required)
    if value is None:
        return None
    try:
        return slug(value)
    except InvalidInputError:
        raise InvalidInputError(at(where, key), f"cannot make a recall id from {value!r}") from None


def _unmapped_fields(plan: ImportPlan, record: dict[str, Any], known: set[str], kind: str) -> None:
    """Count the fields of a user, session, message or fact that recall keeps nowhere."""
    for name in sorted(set(record) - known):
        if record[name] not in (None, "", [], {}):
            plan.report.leave_out(f"{kind} field {name!r} (no equivalent in recall)")


def import_zep(
    mem: Recall, path: str | Path, world_id: str = "zep", agent: str = "assistant", progress: Progress | None = None
) -> ImportReport:
    """Import the Zep file at `path` into `world_id` (`read_zep`); what was stored, skipped
    (imported before) and had no equivalent. Nothing is stored when the file is not in the shape."""
    return store_plan(mem, read_zep(path, world_id, agent), progress)

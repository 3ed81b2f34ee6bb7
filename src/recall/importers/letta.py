"""Letta's Agent File (`.af`): its agents, their system prompts, memory blocks and messages, read
into one recall world.

Two versions of the format are read (letta-ai/agent-file; the schemas are Letta's
`letta/schemas/agent_file.py` and, before it, `letta/serialize_schemas/pydantic_agent_schema.py`):

- the current one, `{"agents": [agent, …], "blocks": [block, …], "tools": […], "groups": […],
  "files", "sources", "mcp_servers", "metadata", "created_at"}`, where an agent names its blocks
  by `block_ids` and its messages have ids (`message-0`, …);
- the first one, a single agent at the top level with its blocks in `core_memory` and a
  `version` (`0.6.x`).

An agent is `{"name", "system", "messages": [message, …], …}`; a message
`{"id"?, "role" (system, user, assistant, tool, approval), "content": [{"type": "text", "text"},
…], "tool_calls"?: [OpenAI tool call, …], "tool_call_id"?, "tool_returns"?, "created_at"}`; a
block `{"label", "value", "limit", "description"?, …}`. No version carries archival memory
(Letta's passages: the agent-file README says so); a list of them, as Letta's API returns it,
may be given beside the file (`letta_passages.py`).

Every agent becomes an agent of the world (the first agent's name by default) with its `system`
as its system prompt, and each memory block a fact about it (`agent:WORLD/AGENT`, its label in
the fact's source, so a block edited since an earlier import is updated in place). Messages keep
their times: a user message is the human's (`human`, `user` by default; Letta's own events —
login, heartbeat, system alerts — are posted by `system`), an assistant message is the agent's
reply (the text of its `send_message` call, else its text) with its inner thoughts in the
metadata and its other tool calls as tool calls, a tool message that answers one of them is that
tool's result for the agent alone, and what has no place in recall (the compiled system message,
`send_message`'s receipts, tools, tool rules, model settings, …) is counted in the report.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recall import limits
from recall.api import Recall
from recall.app.posting import MAX_CALL_ID, PostRequest
from recall.core.facts import NewFact
from recall.core.routing import TOOL_CALL_ID, TOOL_RESULT_FOR
from recall.errors import InvalidInputError
from recall.importers.conversations import Conversation, slug
from recall.importers.json_file import at, ident, items, load_json, obj, objects, text, time
from recall.importers.letta_passages import read_passages
from recall.importers.plan import IMPORTED_FROM, ImportPlan, PlannedAgent, origin
from recall.importers.report import ImportReport
from recall.importers.storing import Progress, store_plan

SYSTEM = "letta"
REPLY_TOOL = "send_message"
ROLES = ("system", "user", "assistant", "tool", "approval")
#: Letta's own events, sent to the agent as user messages holding JSON of this `type`.
EVENTS = ("login", "heartbeat", "system_alert")
#: What of a file, or of an agent, has no place in recall (counted when present and not empty).
_FILE_PARTS = {
    "tools": "tools (their code and JSON schemas: recall's runner takes tools from code)",
    "groups": "multi-agent groups (recall's agents share a world instead)",
    "files": "files attached to agents",
    "sources": "data sources",
    "mcp_servers": "MCP servers",
    "skills": "skills",
}
_AGENT_PARTS = {
    "tool_rules": "tool rules",
    "llm_config": "model settings (llm_config)",
    "embedding_config": "embedding settings (embedding_config)",
    "tool_exec_environment_variables": "tool environment variables",
    "tags": "agent tags",
    "in_context_message_ids": "in-context message lists (recall builds each context itself)",
    "in_context_message_indices": "in-context message lists (recall builds each context itself)",
}


def read_letta(
    path: str | Path,
    world_id: str | None = None,
    human: str = "user",
    passages: str | Path | None = None,
    passages_agent: str | None = None,
) -> ImportPlan:
    """What importing the Agent File at `path` would write (nothing is stored); the world is
    `world_id`, else the first agent's name. `passages`: a file of the agent's archival memory
    (`letta_passages.py`), the agent being `passages_agent` (needed when the file has several).
    An InvalidInputError names the place in the file for anything not in the format."""
    data, _ = load_json(path, "a Letta Agent File (.af)")
    if isinstance(data, str):  # some files hold the export as one JSON string (the agent-file repository's)
        data = _json_inside(data)
    data = obj(data, "")
    plan = ImportPlan(ImportReport(SYSTEM, Path(path).name))
    if "agents" in data:
        agents = objects(data["agents"], "agents")
        blocks = {
            _block_id(block, where): (where, block) for where, block in objects(data.get("blocks") or [], "blocks")
        }
        for key, what in _FILE_PARTS.items():
            plan.report.leave_out(what, len(data.get(key) or []))
    elif "messages" in data and "name" in data:  # the first version: one agent, its blocks inside
        agents, blocks = [("", data)], {}
        plan.report.leave_out(_FILE_PARTS["tools"], len(data.get("tools") or []))
    else:
        raise InvalidInputError(
            "file", 'a Letta Agent File has "agents" (or, in its first version, an agent\'s "name" and "messages")'
        )
    if not agents:
        raise InvalidInputError("agents", "the file has no agent")
    first_name = text(agents[0][1], "name", agents[0][0])
    assert first_name is not None
    world = slug(world_id or first_name)
    plan.add_world(world, world_id or first_name)
    human_id = slug(human)
    plan.add_human(world, human_id)
    conversation = Conversation(world_id=world, name=world_id or first_name, trusted=True)
    plan.conversations.append(conversation)
    file_time = time(data, "created_at", "", required=False)
    for where, agent in agents:
        _read_agent(plan, conversation, agent, where, blocks, human_id, file_time)
    if passages is not None:
        read_passages(plan, passages, world, _passages_agent(plan, passages_agent))
    return plan


def _passages_agent(plan: ImportPlan, named: str | None) -> str:
    """The agent whose archival memory the passages are: the one named, or the file's only one."""
    ids = [agent.agent_id for agent in plan.agents]
    if named is None:
        if len(ids) != 1:
            raise InvalidInputError(
                "passages_agent", f"the file has {len(ids)} agents ({', '.join(ids)}): name the one the passages are of"
            )
        return ids[0]
    found = [agent_id for agent_id in ids if agent_id.lower() == slug(named).lower()]
    if not found:
        raise InvalidInputError(
            "passages_agent", f"{named!r} is not an agent of the file; its agents: {', '.join(ids)}"
        )
    return found[0]


def _json_inside(value: str) -> Any:
    """The JSON a file's one string holds, or the string (refused as it is not an object)."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def _block_id(block: dict[str, Any], where: str) -> str:
    block_id = ident(block, "id", where)
    assert block_id is not None
    return block_id


def _read_agent(
    plan: ImportPlan,
    conversation: Conversation,
    agent: dict[str, Any],
    where: str,
    blocks: dict[str, tuple[str, dict[str, Any]]],
    human: str,
    file_time: datetime | None,
) -> None:
    world = conversation.world_id
    name = text(agent, "name", where)
    assert name is not None
    agent_id = slug(name)
    system = text(agent, "system", where, required=False) or ""
    limits.check_text(at(where, "system"), system, limits.MAX_PROFILE_TEXT)  # as add_agent will
    plan.add_agent(PlannedAgent(world, agent_id, {"system_prompt": system.strip()} if system.strip() else {}))
    for key, what in _AGENT_PARTS.items():
        value = agent.get(key)
        if value:
            plan.report.leave_out(what, 1 if isinstance(value, dict) else len(value))
    since = time(agent, "created_at", where, required=False) or file_time or datetime.now(UTC)
    if "core_memory" in agent:
        agent_blocks = objects(agent["core_memory"], at(where, "core_memory"))
    else:
        agent_blocks = []
        for i, block_id in enumerate(items(agent.get("block_ids") or [], at(where, "block_ids"))):
            if block_id not in blocks:
                raise InvalidInputError(at(at(where, "block_ids"), i), f"names no block of the file: {block_id!r}")
            agent_blocks.append(blocks[block_id])
    for place, block in agent_blocks:
        _read_block(plan, f"agent:{world}/{agent_id}", block, place, since)
    replies: set[str] = set()
    for place, message in objects(agent.get("messages") or [], at(where, "messages")):
        request = _message(plan, agent_id, name, human, message, place, replies)
        if request is not None:
            conversation.messages.append(request)


def _read_block(plan: ImportPlan, scope: str, block: dict[str, Any], where: str, since: datetime) -> None:
    """A block as facts about the agent: one, or, for a block longer than a fact holds, one per
    part of it (split between lines), their sources `letta:block:LABEL`, `…#2`, … Those are all
    the facts of the block: one an earlier import left that the block no longer has goes."""
    label = text(block, "label", where)
    value = block.get("value")
    if not isinstance(value, str):
        raise InvalidInputError(at(where, "value"), "must be text")
    created = time(block, "created_at", where, required=False) or since
    assert label is not None
    source = f"letta:block:{label}"
    plan.own_sources(scope, source)
    if not value.strip():
        plan.report.leave_out("empty memory blocks (a fact needs text)")
        return
    for key in ("description", "limit", "read_only", "metadata", "metadata_"):
        if block.get(key) not in (None, "", {}, False):
            plan.report.leave_out(f"memory block field {key!r} (a fact has no such field)")
    for number, part in enumerate(split_text(value.strip(), limits.MAX_FACT_CHARS), start=1):
        named = source if number == 1 else f"{source}#{number}"
        plan.add_fact(scope, NewFact(part, source=named), created, at(where, "value"))


def split_text(value: str, most: int) -> list[str]:
    """`value` in parts of at most `most` characters, split between lines where it can be."""
    parts: list[str] = []
    current = ""
    for line in value.splitlines(keepends=True):
        while len(line) > most:  # a line longer than a part: cut it
            if current:
                parts.append(current)
                current = ""
            parts.append(line[:most])
            line = line[most:]
        if len(current) + len(line) > most:
            parts.append(current)
            current = ""
        current += line
    if current:
        parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def _text_parts(message: dict[str, Any], where: str) -> tuple[str, str]:
    """The message's text and its reasoning text, from `content` (parts, or text)."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content or "", ""
    texts, reasoning = [], []
    for place, part in objects(content, at(where, "content")):
        kind = part.get("type")
        if kind == "text":
            texts.append(text(part, "text", place, required=False) or "")
        elif kind in ("reasoning", "omitted_reasoning", "redacted_reasoning"):
            reasoning.append(str(part.get("reasoning") or ""))
    return "\n".join(t for t in texts if t), "\n".join(r for r in reasoning if r)


def _message(
    plan: ImportPlan,
    agent_id: str,
    agent_name: str,
    human: str,
    message: dict[str, Any],
    where: str,
    replies: set[str],
) -> PostRequest | None:
    role = text(message, "role", where)
    if role not in ROLES:
        raise InvalidInputError(at(where, "role"), f"must be one of {', '.join(ROLES)}, got {role!r}")
    created = time(message, "created_at", where)
    body, reasoning = _text_parts(message, where)
    message_id = ident(message, "id", where, required=False)
    metadata: dict[str, Any] = {}
    kept = origin(SYSTEM, message_id, agent=agent_name, role=role)
    sender, content = human, body
    if role == "system":
        plan.report.leave_out("system messages (Letta's compiled system prompt; the agent's `system` is kept)")
        return None
    if role == "approval":
        plan.report.leave_out("approval messages (recall has no tool approvals)")
        return None
    if role == "user":
        sender, content = _user_message(body, human)
    elif role == "assistant":
        sender = agent_id
        calls = _tool_calls(message, where)
        said = [_said(call, at(where, "tool_calls")) for call in calls if _name(call) == REPLY_TOOL]
        replies.update(str(call.get("id")) for call in calls if _name(call) == REPLY_TOOL)
        others = [call for call in calls if _name(call) != REPLY_TOOL]
        thoughts = "\n".join(t for t in (body if said or others else "", reasoning) if t)
        content = "\n\n".join(said) if said else ("" if others else body)
        if others:
            metadata["tool_calls"] = others
        if thoughts:
            kept["inner_thoughts"] = thoughts
        if not content.strip() and not others:
            plan.report.leave_out("assistant messages with neither text nor tool calls")
            return None
    else:  # a tool's result
        call_id = text(message, "tool_call_id", where)
        assert call_id is not None
        limits.check_text(at(where, "tool_call_id"), call_id, MAX_CALL_ID)  # as a tool result posted live
        if call_id in replies:
            plan.report.leave_out("send_message results (Letta's delivery receipts)")
            return None
        sender = "system"
        content = body or _tool_return(message) or "(no output)"
        metadata.update({TOOL_RESULT_FOR: agent_id, TOOL_CALL_ID: call_id})
    if not content.strip() and "tool_calls" not in metadata:
        plan.report.leave_out("messages with no text (recall stores no empty message)")
        return None
    metadata[IMPORTED_FROM] = kept
    return PostRequest(
        sender=sender,
        content=content,
        created_at=created,
        metadata=metadata,
        idempotency_key=_key(agent_name, message),
        private_for=agent_id if role == "tool" else None,
    )


def _user_message(body: str, human: str) -> tuple[str, str]:
    """Who sent a user message and its text: Letta wraps what a person typed in JSON
    (`{"type": "user_message", "message": …}`) and sends its own events the same way."""
    try:
        wrapped = json.loads(body)
    except ValueError:
        return human, body
    if isinstance(wrapped, dict) and wrapped.get("type") == "user_message" and isinstance(wrapped.get("message"), str):
        return human, wrapped["message"]
    if isinstance(wrapped, dict) and wrapped.get("type") in EVENTS:
        return "system", body
    return human, body


def _tool_calls(message: dict[str, Any], where: str) -> list[dict[str, Any]]:
    calls = []
    for place, call in objects(message.get("tool_calls") or [], at(where, "tool_calls")):
        function = obj(call.get("function"), at(place, "function"))
        name = text(function, "name", at(place, "function"))
        arguments = function.get("arguments", "")
        calls.append(
            {"id": str(call.get("id") or ""), "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return calls


def _name(call: dict[str, Any]) -> str:
    return str(call["function"]["name"])


def _said(call: dict[str, Any], where: str) -> str:
    """What a `send_message` call said: its `message` argument."""
    try:
        arguments = json.loads(call["function"]["arguments"] or "{}")
    except (TypeError, ValueError):
        raise InvalidInputError(
            where, f"send_message's arguments are not JSON: {call['function']['arguments']!r}"
        ) from None
    said = arguments.get("message") if isinstance(arguments, dict) else None
    if not isinstance(said, str):
        raise InvalidInputError(where, 'send_message\'s arguments have no "message" text')
    return said


def _tool_return(message: dict[str, Any]) -> str:
    returns = message.get("tool_returns") or []
    parts = [str(r.get("func_response") or r.get("stdout") or "") for r in returns if isinstance(r, dict)]
    return "\n".join(p for p in parts if p)


def _key(agent_name: str, message: dict[str, Any]) -> str:
    """A message's idempotency key: its agent, role, time and content, not its id (a later
    export of the same agent numbers its messages again, `message-0` from its first)."""
    what = {k: message.get(k) for k in ("role", "created_at", "content", "tool_calls", "tool_call_id")}
    digest = hashlib.sha256(json.dumps([agent_name, what], sort_keys=True, default=str).encode()).hexdigest()
    return f"letta {digest[:32]}"


def import_letta(
    mem: Recall,
    path: str | Path,
    world_id: str | None = None,
    human: str = "user",
    passages: str | Path | None = None,
    passages_agent: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the Agent File at `path`, and the archival `passages` of one of its agents
    (`read_letta`); what was stored, skipped (imported before) and had no equivalent. Nothing is
    stored when a file is not in its format."""
    return store_plan(mem, read_letta(path, world_id, human, passages, passages_agent), progress)

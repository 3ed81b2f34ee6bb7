"""The MCP tools of an agent's long-term memories: remember, recall, forget and memories.

Every tool here works on the same records, the agent's long-term memories (`app/memories.py`),
and says so: what a model remembers reaches its context (the long-term block of every context of
the agent, when relevant to the conversation or among its most important), which the older
remember/recall/forget, keeping key-value notes no context shows, never did
(`app/remembering.py` keeps their `key` form working). Facts, the other thing a context shows,
have their own tool (`facts`, in `mcp.py`).

No `from __future__ import annotations`: the SDK reads the tools' annotations at registration.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from recall.app.memories import MAX_NOTE_CHARS, memory_changes
from recall.app.remembering import NO_VALUE, Remembering
from recall.app.service import RecallService
from recall.server import views
from recall.server.mcp_caller import ToolCaller, ToolContext, as_tool_error
from recall.server.schemas import MAX_TTL_SECONDS

#: What every tool of this module says reaches the context, once.
IN_CONTEXT = (
    "Every context of the agent built after (context, messages check) shows its memories relevant to the"
    " conversation, or the most important."
)


def add_memory_tools(server: MCPServer[Any], gate: ToolCaller, service: RecallService, World: Any, Agent: Any) -> None:
    """Register remember, recall, forget and memories on `server` (`World` and `Agent`: the
    annotated argument types of the world and agent a call acts on)."""
    remembering = Remembering(service.store, service.memories, service.agent_state)
    # The older key form's arguments are accepted but left out of the tools' schemas: no model
    # should pick them, and each advertised argument costs every conversation tokens.
    OldKey = Annotated[SkipJsonSchema[str | None], Field(max_length=200)]
    Ttl = Annotated[
        float | None,
        Field(description="Seconds until it expires and is deleted (default: never)", gt=0, le=MAX_TTL_SECONDS),
    ]

    @server.tool(
        name="remember",
        description=f"Keep a long-term memory of the agent (its own, or shared in the world). {IN_CONTEXT}"
        " Returns the memory (its id is what forget takes).",
    )
    def remember(
        ctx: ToolContext,
        content: Annotated[
            str | None,
            Field(
                description="What to remember, e.g. 'Maria is a VIP customer'",
                max_length=MAX_NOTE_CHARS,
            ),
        ] = None,
        importance: Annotated[int, Field(description="1 (trivia) to 10 (crucial)", ge=1, le=10)] = 5,
        shared: Annotated[bool, Field(description="Shared with every agent of the world")] = False,
        ttl: Ttl = None,
        world: World = None,
        agent: Agent = None,
        key: OldKey = None,
        value: SkipJsonSchema[Any] = None,
    ) -> dict[str, Any]:
        with as_tool_error():
            world_id, agent_id = gate.enter(ctx, world, agent)
            # A null value is a value only in the key form without content (the older call).
            kept = value if value is not None or (key is not None and content is None) else NO_VALUE
            return remembering.remember(
                world_id, agent_id, content, importance=importance, shared=shared, ttl=ttl, key=key, value=kept
            )

    @server.tool(
        name="recall",
        description="Search the memories remember keeps (the agent's and the world's shared ones, which its"
        " contexts show): {results: [{source_id, score, text, …}]}, best first; source_id is the memory's id.",
    )
    def recall(
        ctx: ToolContext,
        query: Annotated[str | None, Field(description="What to look for", min_length=1, max_length=10_000)] = None,
        k: Annotated[int, Field(description="How many memories at most", ge=1, le=100)] = 5,
        world: World = None,
        agent: Agent = None,
        key: OldKey = None,
    ) -> dict[str, Any]:
        with as_tool_error():
            world_id, agent_id = gate.enter(ctx, world, agent)
            if key is not None:
                return remembering.recall_key(world_id, agent_id, key)
            if query is None:
                raise ToolError("query: say what to look for among the agent's memories")
            results = service.searcher.search(
                world_id,
                query,
                tenant=service.worlds.get_world(world_id).tenant,
                kinds=("memory",),
                k=k,
                agent=agent_id,
            )
            return views.search_hits(results)

    @server.tool(
        name="forget",
        description="Delete one of the agent's own memories by id; its contexts no longer show it."
        " {forgotten: false} when it has none of that id.",
    )
    def forget(
        ctx: ToolContext,
        memory_id: Annotated[int | None, Field(description="The memory's id", ge=1)] = None,
        world: World = None,
        agent: Agent = None,
        key: OldKey = None,
    ) -> dict[str, Any]:
        with as_tool_error():
            world_id, agent_id = gate.enter(ctx, world, agent)
            if key is not None:
                return views.forgotten(remembering.forget_key(world_id, agent_id, key))
            if memory_id is None:
                raise ToolError("memory_id: name the memory to forget (the id remember returned)")
            return views.forgotten(remembering.forget_id(world_id, agent_id, memory_id))

    @server.tool(name="memories")
    def memories(
        ctx: ToolContext,
        action: Annotated[Literal["add", "list", "update", "delete"], Field(description="What to do")],
        world: World = None,
        agent: Agent = None,
        content: Annotated[
            str | None, Field(description="add: what to remember; update: its new text", max_length=20_000)
        ] = None,
        type: Annotated[
            str | None, Field(description="add, update: a kind of memory, e.g. note, episode, preference (add: note)")
        ] = None,
        importance: Annotated[
            int | None, Field(description="add, update: 1 (trivia) to 10 (crucial) (add: 5)", ge=1, le=10)
        ] = None,
        shared: Annotated[bool, Field(description="add: shared with every agent of the world, not private")] = False,
        min_importance: Annotated[int, Field(description="list: the least importance", ge=1, le=10)] = 1,
        memory_id: Annotated[int | None, Field(description="update, delete: the memory's id", ge=1)] = None,
        ttl: Annotated[
            float | None,
            Field(description="add, update: seconds until it expires and is deleted", gt=0, le=MAX_TTL_SECONDS),
        ] = None,
        expires_at: Annotated[
            datetime | None, Field(description="add, update: when it expires (ISO 8601), instead of ttl")
        ] = None,
        clear_expiry: Annotated[bool, Field(description="update: it never expires")] = False,
    ) -> dict[str, Any]:
        """The agent's long-term memories (what remember keeps; its contexts show the relevant ones): add one
        (private unless shared; with ttl or expires_at it expires), list its own and the world's shared ones
        (most important first), update one of its own in place (what is given changes), or delete one of its own."""
        with as_tool_error():
            world_id, agent_id = gate.enter(ctx, world, agent)
            memory = service.memories
            if action == "add":
                note = memory.add_memory(
                    world_id,
                    content or "",
                    type=type or "note",
                    importance=5 if importance is None else importance,
                    agent=None if shared else agent_id,
                    expires_at=expires_at,
                    ttl=ttl,
                )
                return note.to_dict()
            if action == "list":
                return views.memories(memory.list_memories(world_id, agent_id, min_importance))
            if memory_id is None:
                raise ToolError(f"memory_id: {action} needs the id of the memory")
            if action == "update":
                changes = memory_changes(
                    content=content,
                    type=type,
                    importance=importance,
                    expires_at=expires_at,
                    ttl=ttl,
                    clear_expiry=clear_expiry,
                )
                return memory.update_memory(world_id, memory_id, changes, agent=agent_id).to_dict()
            memory.delete_memory(world_id, memory_id, agent=agent_id)
            return views.deleted()

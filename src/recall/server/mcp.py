"""recall's agent operations as MCP tools: over stdio (`recall mcp`) and streamable HTTP at `/mcp`.

A tool is the gate plus a view: it turns its caller into a `Principal` (`deps.KeyRing`, as REST
does), asks `app/gate.py` for the agent it acts as and the scope it names, calls the same
`RecallService` methods as the REST routes and answers with the same shapes (`views.py`), so
the two never disagree. Over HTTP every call is checked like a REST request (API key, tenant,
agent-bound key, rate limit; `mcp_http.py` serves it); over stdio whoever runs the command owns
the store file, so there is no key. As with REST, nothing that reads the store or calls a model
runs on the event loop: the tools are plain functions, which the SDK runs in worker threads,
except `messages`, which may wait and sends each of its store calls to a worker thread.

No `from __future__ import annotations` here: the SDK reads the tools' annotations at
registration, and the argument types are built inside `build_mcp_server` (their descriptions
name the command's default world and agent), which string annotations could not resolve.
"""

from typing import Annotated, Any, Literal

from anyio import to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from recall.app.service import RecallService
from recall.app.validation import MAX_CONTEXT_TOKENS
from recall.server import views
from recall.server.deps import KeyRing
from recall.server.inbox import MAX_WAIT_SECONDS, InboxChecks, InboxQuery, Notifier, run_check
from recall.server.mcp_answers import Answer, answer
from recall.server.mcp_caller import ToolCaller, ToolContext, as_tool_error
from recall.server.mcp_memory import add_memory_tools
from recall.server.ratelimit import RateLimiter
from recall.version import __version__

INSTRUCTIONS = (
    "recall keeps everything each participant of a world heard. As an agent: call `messages` with "
    "action='check' (wait=true to long-poll) for messages addressed to you, `context` for the model-ready "
    "context of a chat, `messages` with action='send' to reply. What you `remember` is a long-term memory "
    "that your contexts show when relevant (`recall` searches them, `forget` deletes one, `memories` lists and "
    "edits them); `facts` are what is known about a user, an agent or the world, also shown in your contexts; "
    "`search` finds earlier messages, memories and facts."
)

#: How often a waiting check over stdio looks at the store for posts by other processes.
STDIO_POLL_SECONDS = 1.0


def build_mcp_server(
    service: RecallService,
    notifier: Notifier,
    *,
    keys: KeyRing | None = None,
    limiter: RateLimiter | None = None,
    world: str | None = None,
    agent: str | None = None,
    poll_interval: float | None = None,
    tenant: str | None = None,
) -> MCPServer[Any]:
    """An MCP server with the tools messages, context, remember, recall, forget, facts, memories
    and search.

    `keys` and `limiter` are the HTTP server's (None on stdio); `world` and `agent` are what
    the tools act on when a call leaves them out, and without keys `tenant` is whose worlds
    they name (None: the only world of an id in any tenant). `notifier` wakes waiting checks on a send;
    with `poll_interval` a waiting check also looks again every that many seconds, for posts
    that reach the store without passing this process's notifier.
    """
    gate = ToolCaller(service, keys or KeyRing(()), limiter, world, agent, tenant)
    checks = InboxChecks(service)  # the checks one post wakes run together
    server: MCPServer[Any] = MCPServer("recall", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    world_help = "World id" + (f" (default {world!r})" if world else "")
    agent_help = "The agent to act as" + (f" (default {agent!r})" if agent else "")
    World = Annotated[str | None, Field(description=world_help, max_length=64)]
    Agent = Annotated[str | None, Field(description=agent_help, max_length=64)]
    ChatId = Annotated[str | None, Field(description="Chat id (default: the world's default chat)", max_length=64)]

    @server.tool(name="messages")
    async def messages(
        ctx: ToolContext,
        action: Annotated[
            Literal["check", "send"],
            Field(description="check: new messages addressed to the agent; send: post a message as the agent"),
        ],
        world: World = None,
        agent: Agent = None,
        wait: Annotated[bool, Field(description="check: wait until a message for the agent arrives")] = False,
        timeout: Annotated[float, Field(description="check: seconds to wait at most", ge=0, le=MAX_WAIT_SECONDS)] = 30,
        mark_read: Annotated[bool, Field(description="check: mark the returned messages read")] = False,
        include_context: Annotated[
            bool, Field(description="check: add the chat's earlier messages the agent has not been sent yet")
        ] = False,
        context_limit: Annotated[
            int | None, Field(description="check: at most this many context messages", ge=1, le=100)
        ] = None,
        limit: Annotated[int, Field(description="check: at most this many new messages", ge=1, le=1000)] = 10,
        session: Annotated[
            str, Field(description="check: context is sent once per session", min_length=1, max_length=200)
        ] = "default",
        chat_id: ChatId = None,
        refresh: Annotated[bool, Field(description="check: send the whole context again")] = False,
        record: Annotated[
            bool, Field(description="check, with include_context: record the context as a model call (call_id)")
        ] = True,
        content: Annotated[str | None, Field(description="send: the message text")] = None,
        parent_id: Annotated[int | None, Field(description="send: id of the message this replies to", ge=1)] = None,
        idempotency_key: Annotated[
            str | None, Field(description="send: the same key never posts twice", min_length=1, max_length=200)
        ] = None,
    ) -> Answer:
        """Check the agent's inbox for messages addressed to it, or send a message as the agent.

        check returns {new_mentions, context, context_metadata}: the new messages to answer, oldest first.
        send returns {message_id, timestamp, mentions, thread_id, chat_id}."""
        with as_tool_error():
            world_id, agent_id = await to_thread.run_sync(gate.enter, ctx, world, agent)
            if action == "send":
                message = await to_thread.run_sync(
                    service.deliveries.send, world_id, agent_id, content or "", chat_id, parent_id, idempotency_key
                )
                # A post wakes the waiting checks of the agents it is for (see inbox.py).
                notifier.notify(world_id, message)
                return answer(views.sent(message), shrink="a shorter message")
            query = InboxQuery(
                limit, include_context, context_limit, session, chat_id, refresh, mark_read, wait, timeout, record
            )
            checked = await run_check(notifier, world_id, agent_id, query, checks, poll_interval=poll_interval)
            return answer(checked.answer, shrink="a smaller context_limit or limit")

    @server.tool(name="context")
    def context(
        ctx: ToolContext,
        world: World = None,
        agent: Agent = None,
        chat_id: ChatId = None,
        max_tokens: Annotated[
            int | None,
            Field(
                description="Token budget (default: the model's window minus a reply reserve)",
                ge=1,
                le=MAX_CONTEXT_TOKENS,
            ),
        ] = None,
        history_limit: Annotated[
            int | None, Field(description="Messages of history (default: the agent's setting)", ge=0, le=10_000)
        ] = None,
        message_id: Annotated[
            int | None, Field(description="The message being answered; the incoming part ends with it", ge=1)
        ] = None,
        channel: Annotated[
            Literal["chat", "call", "sms", "email"] | None, Field(description="Channel guidelines to add")
        ] = None,
        format: Annotated[Literal["openai", "anthropic"], Field(description="Message format")] = "openai",
        recalled_max_tokens: Annotated[
            int | None,
            Field(description="Tokens of recalled past (0: none; default: the agent's setting)", ge=0, le=1_000_000),
        ] = None,
        record: Annotated[
            bool, Field(description="Record it as a model call (for a context sent to a model): its id is call_id")
        ] = False,
    ) -> Answer:
        """The context for the agent's next model call in a chat, with a report of what was left out and why.

        Returns {messages, report}, plus {system} for the anthropic format and {call_id} when recorded."""
        with as_tool_error():
            world_id, agent_id = gate.enter(ctx, world, agent)
            built = service.contexts.build_context(
                world_id,
                agent_id,
                chat_id,
                max_tokens=max_tokens,
                history_limit=history_limit,
                message_id=message_id,
                channel=channel,
                recalled_max_tokens=recalled_max_tokens,
            )
            if record:
                built = service.calls.record(built, "mcp")
            return answer(views.context(built, format), shrink="a smaller max_tokens")

    Scope = Annotated[
        str,
        Field(description="Whose facts: 'user:ID', 'agent:WORLD/AGENT' or 'world:ID'", min_length=3, max_length=300),
    ]

    @server.tool(name="facts")
    def facts(
        ctx: ToolContext,
        action: Annotated[
            Literal["list", "add", "update", "delete", "clear", "export", "import", "set_sections"],
            Field(description="What to do with the scope's facts"),
        ],
        scope: Scope,
        world: World = None,
        agent: Agent = None,
        content: Annotated[str | None, Field(description="add/update: the fact", max_length=10_000)] = None,
        category: Annotated[
            Literal["preference", "knowledge", "context", "behavior", "goal", "correction"] | None,
            Field(description="add/update: the fact's category (default knowledge)"),
        ] = None,
        confidence: Annotated[float | None, Field(description="add/update: 0 to 1 (default 1)", ge=0, le=1)] = None,
        avoid: Annotated[str | None, Field(description="add/update: for corrections, what to avoid")] = None,
        fact_id: Annotated[int | None, Field(description="update/delete: the fact's id", ge=1)] = None,
        sections: Annotated[
            dict[str, str] | None,
            Field(
                description="set_sections: e.g. {work_context, personal_context, top_of_mind, recent_months, "
                "earlier_context, long_term_background}; an empty text removes one"
            ),
        ] = None,
        data: Annotated[dict[str, Any] | None, Field(description="import: an export's JSON")] = None,
        replace: Annotated[bool, Field(description="import: clear the scope first")] = False,
    ) -> dict[str, Any]:
        """Read and change the facts of a scope (a user, an agent, a world) and its summary sections.

        list returns {facts, sections}; add/update return the fact; export returns JSON that import takes."""
        with as_tool_error():
            canonical, tenant = gate.scope(ctx, scope, world, agent)
            facts = service.facts
            fields = {
                k: v
                for k, v in {"content": content, "category": category, "confidence": confidence, "avoid": avoid}.items()
                if v is not None
            }
            if action == "list":
                return views.facts(facts.list_facts(canonical, tenant), facts.sections(canonical, tenant))
            if action == "add":
                return facts.add_facts(canonical, [fields], tenant)[0].to_dict()
            if action in ("update", "delete") and fact_id is None:
                raise ToolError(f"fact_id: {action} needs the id of the fact")
            if action == "update":
                return facts.update_fact(canonical, fact_id or 0, fields, tenant).to_dict()
            if action == "delete":
                facts.delete_fact(canonical, fact_id or 0, tenant)
                return views.deleted()
            if action == "clear":
                return {"removed": facts.clear_facts(canonical, tenant)}
            if action == "export":
                return facts.export_facts(canonical, tenant)
            if action == "import":
                return facts.import_facts(canonical, data or {}, replace, tenant)
            return facts.set_sections(canonical, sections or {}, tenant)

    add_memory_tools(server, gate, service, World, Agent)

    @server.tool(name="search")
    def search(
        ctx: ToolContext,
        query: Annotated[str, Field(description="What to look for", min_length=1, max_length=10_000)],
        world: World = None,
        agent: Agent = None,
        k: Annotated[int, Field(description="How many results", ge=1, le=1000)] = 10,
        kinds: Annotated[
            list[Literal["message", "memory", "fact"]] | None,
            Field(description="What to search (default: messages, memories and facts)"),
        ] = None,
        method: Annotated[
            Literal["hybrid", "bm25", "vector"], Field(description="hybrid fuses keywords and meaning")
        ] = "hybrid",
        chat_id: ChatId = None,
        sender: Annotated[str | None, Field(description="Only messages from this sender", max_length=64)] = None,
        min_importance: Annotated[int | None, Field(description="Only memories this important", ge=1, le=10)] = None,
        min_score: Annotated[
            float | None, Field(description="Leave out hits scoring under this (a score is 0..1 relevance)", ge=0, le=1)
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(
                description="Only messages and memories whose metadata has each key equal to its value"
                ' ({"channel": "sms"}), or passing its operators ({"priority": {"$gte": 2}}, {"$in": [...]},'
                " $ne, $gt, $gte, $lt, $lte); facts have no metadata"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Search what the agent may see in its world: messages, the shared and its own memories, and
        facts (the world's, its own and its people's). Returns {results: [{kind, source_id, score, text,
        scope, chat_id, sender, created_at, …}]}, best first; score is the hit's relevance, 0..1; scope
        says whose a fact is (user:ID, agent:WORLD/AGENT, world:ID)."""
        with as_tool_error():
            world_id, agent_id = gate.enter(ctx, world, agent)
            results = service.searcher.search(
                world_id,
                query,
                tenant=service.worlds.get_world(world_id).tenant,
                kinds=kinds or ("message", "memory", "fact"),
                k=k,
                method=method,
                agent=agent_id,
                chat_id=chat_id,
                sender=sender,
                min_importance=min_importance,
                min_score=min_score,
                metadata=metadata,
            )
            return views.search_hits(results)

    return server


async def run_stdio(
    service: RecallService, world: str | None = None, agent: str | None = None, tenant: str | None = None
) -> None:
    """Serve the tools over stdin/stdout until the client closes them."""
    # The process's own notifier: the session runs calls concurrently, so a `send` wakes a
    # waiting check at once. Posts by other processes (the CLI, a server on the same file)
    # never pass it, so a waiting check also looks at the store every second.
    server = build_mcp_server(
        service, Notifier(), world=world, agent=agent, poll_interval=STDIO_POLL_SECONDS, tenant=tenant
    )
    await server.run_stdio_async()

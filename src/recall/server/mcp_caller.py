"""Who calls an MCP tool, and how recall's errors reach the client: what every tool of `mcp.py`
and `mcp_memory.py` shares.

A call's caller becomes a `Principal` (`deps.KeyRing`, as REST does); `app/gate.py` says which
agent it may act as and which fact scopes it reaches. Kept apart from the tools so that the tool
modules import it, never each other.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from recall.app.gate import Gate, Principal
from recall.app.service import RecallService
from recall.errors import RecallError
from recall.server.deps import KeyRing
from recall.server.ratelimit import RateLimiter
from recall.store.records import WorldRecord

#: Errors whose message is meant for the caller; anything else is a bug and stays hidden.
CALLER_ERRORS = (RecallError,)

ToolContext = Context[Any, Any]


@contextmanager
def as_tool_error() -> Iterator[None]:
    """Turn recall's typed errors into tool errors the client sees with the same message."""
    try:
        yield
    except CALLER_ERRORS as exc:
        raise ToolError(str(exc)) from exc


@dataclass
class ToolCaller:
    """The caller of a tool and the defaults it acts on; what it may do is `app/gate.py`'s."""

    service: RecallService
    #: The HTTP server's keys; none over stdio.
    keys: KeyRing = field(default_factory=lambda: KeyRing(()))
    limiter: RateLimiter | None = None
    world: str | None = None
    agent: str | None = None
    #: The tenant of `world` (and of worlds calls name) when there are no keys; None: any.
    tenant: str | None = None

    def _principal(self, ctx: ToolContext) -> Principal:
        return self.keys.principal((ctx.headers or {}).get("authorization"), self.tenant)

    def enter(self, ctx: ToolContext, world: str | None, agent: str | None) -> tuple[str, str]:
        """The (world key, agent id) the call acts on, once the caller may act as that agent."""
        record, agent_id = self._enter(ctx, world, agent)
        return record.key, agent_id

    def _enter(self, ctx: ToolContext, world: str | None, agent: str | None) -> tuple[WorldRecord, str]:
        who = self._principal(ctx)
        world = world or self.world
        # A key bound to an agent acts as that agent unless the call names one.
        agent = agent or self.agent or who.agent
        if not world:
            raise ToolError("world: name the world (no default world was configured)")
        if not agent:
            raise ToolError("agent: name the agent to act as (no default agent was configured)")
        return Gate(self.service, self.limiter).agent(who, world, agent)

    def scope(self, ctx: ToolContext, scope: str, world: str | None, agent: str | None) -> tuple[str, str]:
        """(canonical scope, tenant) of a facts call: the caller acts as its agent, which reaches
        user and world scopes and its own agent scope, never another agent's."""
        acting = self._enter(ctx, world, agent)
        return Gate(self.service).scope(self._principal(ctx), scope, acting)

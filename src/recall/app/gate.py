"""Who may do what: the ONE place that resolves a world, an agent or a fact scope for a caller.

Every interface (the Python API, REST, MCP, the CLI) turns its caller into a `Principal` and asks
the `Gate` for what the call names, so they cannot disagree about who may do what. A tenant's
world ids are its own: another tenant's world of that id does not exist for the caller (404,
never 403). An agent's key acts only as its agent and reaches only its own agent facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from recall.core.facts import parse_scope
from recall.errors import PermissionDeniedError

if TYPE_CHECKING:
    from recall.app.facts import Facts
    from recall.app.worlds import Worlds
    from recall.store.records import Memory, WorldRecord


@dataclass(frozen=True)
class Principal:
    """The caller. Without configured keys everyone is the open principal (tenant '')."""

    tenant: str = ""
    #: An agent-bound key acts only as this agent.
    agent: str | None = None
    #: No key was needed (a keyless server, stdio MCP, the embedded Python API).
    open: bool = True
    #: An operator's key (`admin = true`): may read what covers every tenant, like /metrics.
    admin: bool = False
    #: An open caller that named its tenant (`Recall.world(id, tenant=)`, `recall mcp --tenant`):
    #: its ids name that tenant's worlds, as a key's do.
    pinned: bool = False

    @classmethod
    def local(cls, tenant: str | None = None) -> Principal:
        """The embedded user (Python API, CLI, stdio MCP): every tenant's worlds, or `tenant`'s."""
        return cls(tenant=tenant or "", pinned=tenant is not None)

    @property
    def world_tenant(self) -> str | None:
        """The tenant whose worlds this caller's ids name; None: any tenant's (the only one)."""
        return self.tenant if (not self.open or self.pinned) else None

    def may_act_as(self, agent_id: str) -> bool:
        return self.agent is None or self.agent.lower() == agent_id.lower()

    def require_agent(self, agent_id: str) -> None:
        if not self.may_act_as(agent_id):
            raise PermissionDeniedError(f"this API key acts only as agent {self.agent!r}, not {agent_id!r}")

    def require_admin(self, what: str) -> None:
        """Tenant-wide acts (register agents, create worlds): not for an agent's key."""
        if self.agent is not None:
            raise PermissionDeniedError(f"an agent's API key cannot {what}; use a tenant key")

    def require_operator(self, what: str) -> None:
        """Only a keyless server's callers and admin keys (`admin = true` in [[keys]])."""
        if not self.open and not self.admin:
            raise PermissionDeniedError(f"only an admin key (admin = true in [[keys]]) may {what}")


class Limiter(Protocol):
    """Counts a request against an agent's allowance; raises RateLimitedError past it."""

    def hit(self, world_id: str, agent_id: str) -> None: ...


class Resolver(Protocol):
    """What the gate resolves names with: a `RecallService` (the gate sits below it, so that
    the use cases it composes may ask the gate)."""

    @property
    def worlds(self) -> Worlds: ...

    @property
    def facts(self) -> Facts: ...


class Gate:
    """Resolves what a call names for its caller, or raises (unknown: 404, not allowed: 403)."""

    def __init__(self, service: Resolver, limiter: Limiter | None = None) -> None:
        self.service = service
        self.limiter = limiter

    def world(self, who: Principal, world_id: str) -> WorldRecord:
        """The caller's world `world_id`; handlers pass on its key."""
        return self.service.worlds.resolve_world(world_id, who.world_tenant)

    def worlds(self, who: Principal) -> list[WorldRecord]:
        return self.service.worlds.list_worlds(tenant=who.world_tenant)

    def agent(self, who: Principal, world_id: str, agent_id: str) -> tuple[WorldRecord, str]:
        """(world, agent id) of an agent the caller may act as; counts the request against the
        agent's rate limit."""
        world = self.world(who, world_id)
        agent = self.service.worlds.get_agent(world.key, agent_id).id
        who.require_agent(agent)
        if self.limiter is not None:
            self.limiter.hit(world.key, agent)
        return world, agent

    def scope(self, who: Principal, scope: str, acting: tuple[WorldRecord, str] | None = None) -> tuple[str, str]:
        """(canonical scope, tenant) of a facts call. A world or agent scope must name the
        caller's world; an agent scope only the agent the caller acts as (`acting`, or its key's
        agent): another agent's facts are private."""
        kind, _, rest = parse_scope(scope).partition(":")  # a malformed scope is refused first (422)
        tenant = who.tenant
        if acting is not None:
            tenant = acting[0].tenant
        elif kind in ("world", "agent"):
            tenant = self.world(who, rest.partition("/")[0]).tenant
        canonical = self.service.facts.scope(scope, tenant)
        if canonical.startswith("agent:"):
            owner = canonical.partition("/")[2]
            if acting is not None and canonical != f"agent:{acting[0].id.lower()}/{acting[1].lower()}":
                raise PermissionDeniedError(f"agent {acting[1]!r} cannot reach another agent's facts ({canonical})")
            if not who.may_act_as(owner):
                raise PermissionDeniedError(
                    f"this API key acts only as agent {who.agent!r}: another agent's facts are private"
                )
        return canonical, tenant


def require_may_delete_memory(world: WorldRecord, memory: Memory, agent: str) -> None:
    """An agent (`agent`, '' for a tenant's caller) deletes only its own long-term memories:
    what every agent of the world shares is deleted with a tenant's key."""
    if agent and not memory.owner:
        raise PermissionDeniedError(
            f"memory {memory.id} is shared by every agent of world {world.id!r}: an agent deletes only its "
            "own memories (a tenant key deletes shared ones: DELETE /v1/worlds/{world}/memories/{id})"
        )


def require_may_update_memory(world: WorldRecord, memory: Memory, agent: str) -> None:
    """As for deleting (`require_may_delete_memory`): an agent changes only its own long-term
    memories, and what every agent of the world shares is changed with a tenant's key."""
    if agent and not memory.owner:
        raise PermissionDeniedError(
            f"memory {memory.id} is shared by every agent of world {world.id!r}: an agent updates only its "
            "own memories (a tenant key updates shared ones: PATCH /v1/worlds/{world}/memories/{id})"
        )

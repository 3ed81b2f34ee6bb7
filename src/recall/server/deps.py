"""Who is calling and what a request names, for REST and MCP alike.

`KeyRing.principal` is the ONE place an `Authorization` header becomes a `Principal`; what the
principal may do is `app/gate.py`'s. The FastAPI dependencies below hand a route its caller,
the world it names, or the agent it acts as (counted against that agent's rate limit), all
resolved by the gate. They are plain functions, so FastAPI runs them (and the store reads the
gate makes) in its worker threads, never on the event loop.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Header, Request
from pydantic import Field

from recall.app.gate import Gate, Principal
from recall.app.service import RecallService
from recall.errors import AuthenticationError
from recall.server.collector import CrowdHold
from recall.server.config import ApiKey, ServerConfig
from recall.server.inbox import InboxChecks, Notifier
from recall.server.metrics import Metrics
from recall.server.ratelimit import RateLimiter
from recall.server.writer import PostWriter
from recall.store.records import WorldRecord

if TYPE_CHECKING:
    from recall.app.facts import Facts
    from recall.app.memories import Memories


class KeyRing:
    """The configured API keys; without any, every caller is the open principal."""

    def __init__(self, keys: tuple[ApiKey, ...]) -> None:
        self._keys = keys

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    def principal(self, authorization: str | None, tenant: str | None = None) -> Principal:
        """The caller named by an `Authorization: Bearer <key>` header. Without keys: the open
        principal, of `tenant`'s worlds when one is named (`recall mcp --tenant`)."""
        if not self._keys:
            return Principal.local(tenant)
        if not authorization or not authorization.lower().startswith("bearer "):
            raise AuthenticationError("missing API key: send the header 'Authorization: Bearer <key>'")
        given = authorization[7:].strip().encode()
        for key in self._keys:
            # Constant-time comparison: a key cannot be guessed a character at a time.
            if hmac.compare_digest(key.key.encode(), given):
                return Principal(key.tenant, key.agent, open=False, admin=key.admin)
        raise AuthenticationError("unknown API key")


@dataclass
class ServerState:
    """What every request of one app shares: `app.state.recall`."""

    service: RecallService
    config: ServerConfig
    keys: KeyRing
    limiter: RateLimiter
    writer: PostWriter
    checks: InboxChecks
    #: A post that wakes a crowd holds the collector off while they are answered.
    notifier: Notifier = field(default_factory=lambda: Notifier(on_wake=CrowdHold()))
    metrics: Metrics = field(default_factory=Metrics)

    @classmethod
    def build(cls, service: RecallService, config: ServerConfig) -> ServerState:
        # A store that keeps rate-limit buckets (PostgreSQL) shares them among the replicas.
        limiter = RateLimiter(config.rate_limit, service.shared_rate_limits())
        return cls(service, config, KeyRing(config.keys), limiter, PostWriter(service), InboxChecks(service))

    @property
    def gate(self) -> Gate:
        return Gate(self.service, self.limiter)


@dataclass(frozen=True)
class Acting:
    """The agent a request acts as, in the world it names."""

    world: WorldRecord
    agent: str

    @property
    def key(self) -> str:
        """The world's key, which the service's calls take."""
        return self.world.key


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.recall
    return state


def facts_of(request: Request) -> Facts:
    """Facts and their sections, on the app's service."""
    return state_of(request).service.facts


def memories_of(request: Request) -> Memories:
    """Long-term memories, on the app's service."""
    return state_of(request).service.memories


def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> Principal:
    return state_of(request).keys.principal(authorization)


#: The caller of a route, from its `Authorization: Bearer` header.
Caller = Annotated[Principal, Depends(_caller)]


def tenant_key(what: str) -> Any:
    """The caller, once it is not an agent's key: for tenant-wide acts (`what`: "register agents").
    Declared before a route's world, so such a key learns 403 before any lookup."""

    def require(who: Caller) -> Principal:
        who.require_admin(what)
        return who

    return Depends(require)


def operator_key(what: str) -> Any:
    """The caller, once it may read what covers every tenant (a keyless server's, an admin key)."""

    def require(who: Caller) -> Principal:
        who.require_operator(what)
        return who

    return Depends(require)


def _world(request: Request, world: str, who: Caller) -> WorldRecord:
    return state_of(request).gate.world(who, world)


#: The caller's world named by the path's `{world}` (404 for another tenant's).
WorldOf = Annotated[WorldRecord, Depends(_world)]


def tenant_world(what: str) -> Any:
    """The path's `{world}` for a tenant-wide act (`what`: "register agents"): an agent's key
    learns 403 before the world is looked up."""

    def resolve(request: Request, world: str, who: Caller) -> WorldRecord:
        who.require_admin(what)
        return state_of(request).gate.world(who, world)

    return Depends(resolve)


def _acting(request: Request, world: str, agent: str, who: Caller) -> Acting:
    record, agent_id = state_of(request).gate.agent(who, world, agent)
    return Acting(record, agent_id)


#: The agent named by the path's `{world}` and `{agent}`, once the caller may act as it; the
#: request counts against its rate limit.
ActingAgent = Annotated[Acting, Depends(_acting)]


def _scope(request: Request, scope: str, who: Caller) -> tuple[str, str]:
    return state_of(request).gate.scope(who, scope)


#: (canonical scope, tenant) of the path's `{scope}`, once the caller may reach it.
FactScope = Annotated[tuple[str, str], Depends(_scope)]


# -- what a path names after its world and agent ------------------------------------------------
# Dependencies rather than plain parameters so that they come after `{world}`/`{agent}`/`{scope}`
# (themselves dependencies) in the OpenAPI schema's parameters, in path order, as they always did.

StoredId = Annotated[int, Field(ge=1, le=2**62)]


def _note_key(key: str) -> str:
    return key


def _fact_id(fact_id: StoredId) -> int:
    return fact_id


def _memory_id(note_id: StoredId) -> int:
    return note_id


#: The key of one of an agent's notes.
NoteKey = Annotated[str, Depends(_note_key)]
FactId = Annotated[int, Depends(_fact_id)]
#: A long-term memory's id.
MemoryId = Annotated[int, Depends(_memory_id)]

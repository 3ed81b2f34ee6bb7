"""Who may do what, through REST and MCP alike: ONE table, run over both interfaces of one real
server (uvicorn on loopback; the official MCP client over streamable HTTP), on SQLite and
PostgreSQL.

Rows are the operations both interfaces have; columns are callers; a cell is what the call
answers: `ok`, or the error class (401 unauthenticated, 403 forbidden, 404 unknown). REST
answers with the status, MCP with a tool error whose message names the class (401: /mcp refuses
the connection). A cell `rest|mcp` is one where the two calls are not the same act: REST's
scope and world routes act as the key itself, while an MCP tool always acts as an agent, which
the gate (`app/gate.py`) confines to that agent's own agent facts and own memories, and which
must be an agent of a world of the key's tenant.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.types import TextContent

from recall import Recall
from recall.app.service import RecallService
from recall.server.app import create_app
from recall.server.config import ApiKey, ServerConfig
from recall.server.mcp_http import mount_mcp
from recall.settings import Settings
from tests.server.conftest import running
from tests.server.test_mcp import mcp_session


@dataclass(frozen=True)
class Caller:
    name: str
    key: str | None
    #: The agent the call acts as (REST: in the path; MCP: the `agent` argument).
    agent: str = "agent-a"


CALLERS = (
    Caller("tenant key", "acme-admin"),
    Caller("other tenant's key", "globex-admin"),
    Caller("agent key as itself", "acme-a"),
    Caller("agent key as another", "acme-a", "agent-b"),
    Caller("admin key", "acme-ops"),
    Caller("another tenant's admin key", "ops"),
    Caller("no key", None),
    Caller("unknown key", "nope"),
)
KEYS = (
    ApiKey("acme-admin", "acme"),
    ApiKey("acme-a", "acme", "agent-a"),
    ApiKey("acme-ops", "acme", admin=True),
    ApiKey("globex-admin", "globex"),
    ApiKey("ops", "ops", admin=True),
)


@dataclass(frozen=True)
class Call:
    """What one cell's call names: its acting agent and, for deletes, a memory made for it."""

    agent: str
    memory_id: int = 0

    @property
    def path(self) -> str:
        return f"/v1/worlds/w/agents/{self.agent}"

    @property
    def other(self) -> str:
        return "agent-b" if self.agent == "agent-a" else "agent-a"

    def tool(self, **args: Any) -> dict[str, Any]:
        return {"world": "w", "agent": self.agent, **args}


Rest = tuple[str, str, dict[str, Any] | None]
Mcp = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Op:
    rest: Callable[[Call], Rest]
    mcp: Callable[[Call], Mcp]
    #: A memory to make before each call: the acting agent's own, or a shared one.
    memory: str | None = None


def facts_op(action: str, scope: Callable[[Call], str]) -> Op:
    if action == "list":
        return Op(
            lambda c: ("GET", f"/v1/scopes/{scope(c)}/facts", None),
            lambda c: ("facts", c.tool(action="list", scope=scope(c))),
        )
    return Op(
        lambda c: ("POST", f"/v1/scopes/{scope(c)}/facts", {"content": "Likes tea"}),
        lambda c: ("facts", c.tool(action="add", scope=scope(c), content="Likes tea")),
    )


def _user(c: Call) -> str:
    return "user:maria"


def _world(c: Call) -> str:
    return "world:w"


def _own(c: Call) -> str:
    return f"agent:w/{c.agent}"


def _other(c: Call) -> str:
    return f"agent:w/{c.other}"


OPS: dict[str, Op] = {
    "inbox check": Op(
        lambda c: ("GET", f"{c.path}/inbox", None),
        lambda c: ("messages", c.tool(action="check")),
    ),
    "send": Op(
        lambda c: ("POST", f"{c.path}/send", {"content": "@maria done"}),
        lambda c: ("messages", c.tool(action="send", content="@maria done")),
    ),
    "context": Op(
        lambda c: ("POST", f"{c.path}/context", {}),
        lambda c: ("context", c.tool()),
    ),
    "notes remember": Op(
        lambda c: ("PUT", f"{c.path}/notes/r", {"value": 1}),
        lambda c: ("remember", c.tool(key="r", value=1)),
    ),
    "notes recall": Op(
        lambda c: ("GET", f"{c.path}/notes/k", None),
        lambda c: ("recall", c.tool(key="k")),
    ),
    "notes forget": Op(
        lambda c: ("DELETE", f"{c.path}/notes/f", None),
        lambda c: ("forget", c.tool(key="f")),
    ),
    "facts list, user scope": facts_op("list", _user),
    "facts add, user scope": facts_op("add", _user),
    "facts list, world scope": facts_op("list", _world),
    "facts add, world scope": facts_op("add", _world),
    "facts list, own agent scope": facts_op("list", _own),
    "facts add, own agent scope": facts_op("add", _own),
    "facts list, other agent scope": facts_op("list", _other),
    "facts add, other agent scope": facts_op("add", _other),
    "memories list": Op(
        lambda c: ("GET", f"{c.path}/memories", None),
        lambda c: ("memories", c.tool(action="list")),
    ),
    "memories add": Op(
        lambda c: ("POST", f"{c.path}/memories", {"content": "Maria tips well"}),
        lambda c: ("memories", c.tool(action="add", content="Maria tips well")),
    ),
    "memories add shared": Op(
        lambda c: ("POST", "/v1/worlds/w/memories", {"content": "Be kind"}),
        lambda c: ("memories", c.tool(action="add", content="Be kind", shared=True)),
    ),
    "memories delete own": Op(
        lambda c: ("DELETE", f"{c.path}/memories/{c.memory_id}", None),
        lambda c: ("memories", c.tool(action="delete", memory_id=c.memory_id)),
        memory="own",
    ),
    "memories delete shared": Op(
        lambda c: ("DELETE", f"/v1/worlds/w/memories/{c.memory_id}", None),
        lambda c: ("memories", c.tool(action="delete", memory_id=c.memory_id)),
        memory="shared",
    ),
    "memories update own": Op(
        lambda c: ("PATCH", f"{c.path}/memories/{c.memory_id}", {"content": "Maria tips very well"}),
        lambda c: ("memories", c.tool(action="update", memory_id=c.memory_id, content="Maria tips very well")),
        memory="own",
    ),
    "memories update shared": Op(
        lambda c: ("PATCH", f"/v1/worlds/w/memories/{c.memory_id}", {"content": "Be very kind"}),
        lambda c: ("memories", c.tool(action="update", memory_id=c.memory_id, content="Be very kind")),
        memory="shared",
    ),
    "search": Op(
        lambda c: ("POST", f"{c.path}/search", {"query": "invoice"}),
        lambda c: ("search", c.tool(query="invoice")),
    ),
}

# fmt: off
#: One row per operation, one cell per caller (in CALLERS' order); `rest|mcp` where the two differ.
TABLE: dict[str, tuple[str, ...]] = {
    #                                 tenant     other      agent   agent as   admin      other      no     unknown
    #                                 key        tenant     itself  another    key        admin      key    key
    "inbox check":                   ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "send":                          ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "context":                       ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "notes remember":                ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "notes recall":                  ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "notes forget":                  ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "facts list, user scope":        ("ok",     "ok|404",  "ok",   "ok|403",  "ok",      "ok|404",  "401", "401"),
    "facts add, user scope":         ("ok",     "ok|404",  "ok",   "ok|403",  "ok",      "ok|404",  "401", "401"),
    "facts list, world scope":       ("ok",     "404",     "ok",   "ok|403",  "ok",      "404",     "401", "401"),
    "facts add, world scope":        ("ok",     "404",     "ok",   "ok|403",  "ok",      "404",     "401", "401"),
    "facts list, own agent scope":   ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "facts add, own agent scope":    ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "facts list, other agent scope": ("ok|403", "404",     "403",  "ok|403",  "ok|403",  "404",     "401", "401"),
    "facts add, other agent scope":  ("ok|403", "404",     "403",  "ok|403",  "ok|403",  "404",     "401", "401"),
    "memories list":                 ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "memories add":                  ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "memories add shared":           ("ok",     "404",     "ok",   "ok|403",  "ok",      "404",     "401", "401"),
    "memories delete own":           ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "memories delete shared":        ("ok|403", "404",     "403",  "403",     "ok|403",  "404",     "401", "401"),
    "memories update own":           ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
    "memories update shared":        ("ok|403", "404",     "403",  "403",     "ok|403",  "404",     "401", "401"),
    "search":                        ("ok",     "404",     "ok",   "403",     "ok",      "404",     "401", "401"),
}
# fmt: on

#: What an MCP tool error says, by class (every message of recall's errors that a cell can meet).
MCP_ERRORS = {
    "404": re.compile(r"^unknown (world|agent|memory|fact)\b|^no memory under"),
    "403": re.compile(
        r"acts only as agent|cannot reach another agent's facts|an agent's API key cannot|"
        r"only an admin key|an agent (deletes|updates) only its own memories"
    ),
}


def expected(row: str, column: int, interface: str) -> str:
    rest, _, mcp = TABLE[row][column].partition("|")
    return mcp if interface == "mcp" and mcp else rest


def rest_outcome(status: int) -> str:
    return "ok" if status < 300 else str(status)


def mcp_outcome(message: str) -> str:
    message = re.sub(r"^Error executing tool \S+: ", "", message)
    found = [kind for kind, pattern in MCP_ERRORS.items() if pattern.search(message)]
    assert len(found) == 1, f"an MCP error of no known class: {message!r}"
    return found[0]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Served:
    url: str
    service: RecallService

    def prepare(self, op: Op, agent: str) -> Call:
        """Seed what a call needs: a note under `k` to recall, a memory to delete."""
        world = self.service.worlds.resolve_world("w", "acme").key
        memory = self.service.memories
        if op.memory is None:
            return Call(agent)
        owner = agent if op.memory == "own" else None
        return Call(agent, memory.add_memory(world, f"{op.memory} memory", agent=owner).id)


@pytest.fixture
def served(store_location: str) -> Iterator[Served]:
    with Recall(store_location, Settings()) as mem:
        app = create_app(mem.service, ServerConfig(keys=KEYS, rate_limit=0))
        mount_mcp(app)
        with running(app) as url:
            with httpx.Client(base_url=url, headers={"Authorization": "Bearer acme-admin"}) as c:
                c.post("/v1/worlds", json={"id": "w"}).raise_for_status()
                for agent in ("agent-a", "agent-b"):
                    c.post("/v1/worlds/w/agents", json={"id": agent}).raise_for_status()
                    c.put(f"/v1/worlds/w/agents/{agent}/notes/k", json={"value": 1}).raise_for_status()
                c.post("/v1/worlds/w/humans", json={"id": "maria"}).raise_for_status()
                c.post("/v1/worlds/w/messages", json={"sender": "maria", "content": "@agent-a my invoice?"})
            yield Served(url, mem.service)


@asynccontextmanager
async def session_of(url: str, key: str | None) -> AsyncIterator[ClientSession | None]:
    """An MCP session with the key; None when /mcp refuses the key (every call is then a 401)."""
    async with httpx.AsyncClient(base_url=url) as http:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        answer = await http.post("/mcp", json={}, headers=headers)
    if answer.status_code == 401:
        yield None
        return
    async with mcp_session(url, key) as session:
        yield session


async def mcp_call(session: ClientSession | None, op: Op, call: Call) -> str:
    if session is None:
        return "401"
    tool, args = op.mcp(call)
    result = await session.call_tool(tool, args)
    if not result.is_error:
        return "ok"
    first = result.content[0]
    assert isinstance(first, TextContent)
    return mcp_outcome(first.text)


@pytest.mark.anyio
async def test_rest_and_mcp_agree_with_the_permission_table(served: Served) -> None:
    assert all(len(cells) == len(CALLERS) for cells in TABLE.values()) and set(TABLE) == set(OPS)
    wrong: list[str] = []
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        for column, caller in enumerate(CALLERS):
            headers = {"Authorization": f"Bearer {caller.key}"} if caller.key else {}
            async with session_of(served.url, caller.key) as session:
                for row, op in OPS.items():
                    method, path, body = op.rest(served.prepare(op, caller.agent))
                    answer = await http.request(method, path, json=body, headers=headers)
                    got = {
                        "rest": rest_outcome(answer.status_code),
                        "mcp": await mcp_call(session, op, served.prepare(op, caller.agent)),
                    }
                    wrong += [
                        f"{row} / {caller.name} over {interface}: {outcome}, the table says {want}"
                        for interface, outcome in got.items()
                        if outcome != (want := expected(row, column, interface))
                    ]
    assert not wrong, "\n".join(wrong)

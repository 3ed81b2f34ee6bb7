"""Deleting and exporting over REST, on SQLite and PostgreSQL: who may (a tenant's admin act:
an agent's key is 403, another tenant's world is 404 and reveals nothing), what a bad request
answers (and that it loses nothing), and an export streamed from one server and imported into
another. MCP has no tool for any of it (every MCP tool acts as an agent)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from recall import Recall, Settings
from recall.app.service import RecallService
from recall.server.app import create_app
from recall.server.config import ApiKey, ServerConfig
from recall.server.mcp_http import mount_mcp
from tests.pg import new_database
from tests.server.conftest import LiveServer, create_world_w, post, running, start_server, stop_server
from tests.server.test_mcp import mcp_session

KEYS = (
    ApiKey("acme-admin", "acme"),
    ApiKey("acme-a", "acme", "agent-a"),
    ApiKey("acme-ops", "acme", admin=True),
    ApiKey("globex-admin", "globex"),
    ApiKey("ops", "ops", admin=True),
)
#: (caller, key), in the order of the table's cells.
CALLERS = (
    ("tenant key", "acme-admin"),
    ("other tenant's key", "globex-admin"),
    ("agent key", "acme-a"),
    ("admin key", "acme-ops"),
    ("another tenant's admin key", "ops"),
    ("no key", None),
    ("unknown key", "nope"),
)
QUICK = Settings(index_interval=0, embeddings="none")


@dataclass
class Fixture:
    """Makes, through the service, what each call deletes, exports or imports."""

    service: RecallService
    world_key: str
    empty_export: bytes

    def message(self) -> str:
        world = self.service.worlds.resolve_world("w", "acme")
        from recall.app.posting import PostRequest

        posted = self.service.posting.post(world.key, PostRequest("maria", "to be deleted"))
        return f"/v1/worlds/w/messages/{posted.id}"

    def participant(self, kind: str) -> str:
        world = self.service.worlds.resolve_world("w", "acme")
        name = f"temp-{kind}"
        if kind == "agent":
            self.service.worlds.add_agent(world.key, name, exist_ok=True)
        else:
            self.service.worlds.add_human(world.key, name, exist_ok=True)
        return f"/v1/worlds/w/{kind}s/{name}"

    def doomed(self) -> str:
        try:
            self.service.worlds.resolve_world("doomed", "acme")
        except LookupError:
            self.service.worlds.create_world("doomed", tenant="acme")
        return "/v1/worlds/doomed"

    def no_import_yet(self) -> None:
        for world in self.service.worlds.list_worlds():
            if world.id == "imported":
                self.service.lifecycle.delete_world(world.key)


#: Each operation: (method, path maker, body maker).
OPS: dict[str, Callable[[Fixture], tuple[str, str, bytes | None]]] = {
    "delete message": lambda f: ("DELETE", f.message(), None),
    "delete agent": lambda f: ("DELETE", f.participant("agent"), None),
    "delete human": lambda f: ("DELETE", f.participant("human"), None),
    "erase human": lambda f: ("DELETE", f.participant("human") + "?erase=true", None),
    "delete world": lambda f: ("DELETE", f.doomed(), None),
    "export world": lambda f: ("GET", "/v1/worlds/w/export", None),
    "import world": lambda f: (f.no_import_yet(), ("POST", "/v1/worlds/import", f.empty_export))[1],
}
# fmt: off
TABLE: dict[str, tuple[str, ...]] = {
    #                 tenant  other   agent   admin   other   no     unknown
    "delete message": ("ok",  "404",  "403",  "ok",   "404",  "401", "401"),
    "delete agent":   ("ok",  "404",  "403",  "ok",   "404",  "401", "401"),
    "delete human":   ("ok",  "404",  "403",  "ok",   "404",  "401", "401"),
    "erase human":    ("ok",  "404",  "403",  "ok",   "404",  "401", "401"),
    "delete world":   ("ok",  "404",  "403",  "ok",   "404",  "401", "401"),
    "export world":   ("ok",  "404",  "403",  "ok",   "404",  "401", "401"),
    "import world":   ("ok",  "ok",   "403",  "ok",   "ok",   "401", "401"),
}
# fmt: on


def empty_world_export(tmp_path: Path) -> bytes:
    """The export of a world 'imported' with a human and no message (it keeps no id, so every
    tenant may import it into the same store)."""
    with Recall(tmp_path / "scratch.db", QUICK) as mem:
        world = mem.world("imported", create=True)
        world.add_human("ann")
        return "".join(json.dumps(r) + "\n" for r in world.export()).encode()


@pytest.fixture
def secured(store_location: str, tmp_path: Path) -> Iterator[tuple[str, Fixture]]:
    with Recall(store_location, QUICK) as mem:
        app = create_app(mem.service, ServerConfig(keys=KEYS, rate_limit=0))
        mount_mcp(app)
        with running(app) as url:
            with httpx.Client(base_url=url, headers={"Authorization": "Bearer acme-admin"}) as c:
                create_world_w(c)
            key = mem.service.worlds.resolve_world("w", "acme").key
            yield url, Fixture(mem.service, key, empty_world_export(tmp_path))


def test_deleting_and_exporting_are_a_tenants_admin_acts(secured: tuple[str, Fixture]) -> None:
    url, fixture = secured
    wrong = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for column, (caller, key) in enumerate(CALLERS):
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            for row, op in OPS.items():
                method, path, body = op(fixture)
                answer = http.request(method, path, content=body, headers=headers)
                got = "ok" if answer.status_code < 300 else str(answer.status_code)
                if got != TABLE[row][column]:
                    wrong.append(f"{row} / {caller}: {got}, the table says {TABLE[row][column]} ({answer.text[:200]})")
    assert not wrong, "\n".join(wrong)
    with httpx.Client(base_url=url, headers={"Authorization": "Bearer globex-admin"}) as other:
        # Another tenant's world answers exactly as a world that never existed.
        theirs = other.delete("/v1/worlds/w").json()["error"]["message"]
        never = other.delete("/v1/worlds/zzz").json()["error"]["message"]
        assert theirs == never.replace("zzz", "w")


def test_mcp_has_no_tool_to_delete_or_export(secured: tuple[str, Fixture]) -> None:
    import anyio

    async def names() -> set[str]:
        async with mcp_session(secured[0], "acme-admin") as session:
            return {tool.name for tool in (await session.list_tools()).tools}

    tools = anyio.run(names)
    assert tools == {"messages", "context", "remember", "recall", "forget", "facts", "memories", "search"}


@pytest.fixture
def second_store(request: pytest.FixtureRequest, store_location: str, tmp_path: Path) -> str:
    """Another fresh store of the same backend."""
    if store_location.startswith("postgresql://"):
        return new_database(request.getfixturevalue("postgres_server"))
    return str(tmp_path / "second.db")


def test_a_world_exported_from_one_server_is_imported_by_another(live: LiveServer, second_store: str) -> None:
    with live.client() as c:
        first = post(c, "maria", "@agent-a my parcel is late")
        reply = post(c, "agent-a", "@maria it ships tomorrow", parent_id=first["id"])
        c.post("/v1/scopes/user:maria/facts", json={"content": "Lives in Lisbon"}).raise_for_status()
        answer = c.get("/v1/worlds/w/export")
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/x-ndjson")
        assert answer.headers["content-disposition"] == 'attachment; filename="w.jsonl"'
        lines = answer.text.splitlines()
        assert json.loads(lines[0])["format"] == "recall.world/1" and json.loads(lines[-1])["record"] == "end"
        messages = c.get("/v1/worlds/w/messages").json()["messages"]
    other = start_server(second_store, ServerConfig(rate_limit=0), QUICK)
    try:
        with other.client() as c:
            created = c.post(
                "/v1/worlds/import", content=answer.content, headers={"content-type": "application/x-ndjson"}
            )
            assert created.status_code == 201, created.text
            assert created.json()["id"] == "w" and created.json()["imported"]["message"] == 2
            assert c.get("/v1/worlds/w/messages").json()["messages"] == messages
            assert c.get("/v1/scopes/user:maria/facts").json()["facts"][0]["content"] == "Lives in Lisbon"
            hits = c.post("/v1/worlds/w/search", json={"query": "parcel", "method": "bm25"}).json()["results"]
            # The reply too, by the turn before it (its context), below the message itself.
            assert [h["source_id"] for h in hits if h["kind"] == "message"] == [first["id"], reply["id"]]
            again = c.post("/v1/worlds/import", content=answer.content)
            assert again.status_code == 409 and "already exists" in again.json()["error"]["message"]
            broken = c.post("/v1/worlds/import", content=answer.content.replace(b'"record": "chat"', b'"record": "x"'))
            assert broken.status_code == 422 and broken.json()["error"]["field"].startswith("line ")
            empty = c.post("/v1/worlds/import", content=b"")
            assert empty.status_code == 422 and "empty" in empty.json()["error"]["message"]
    finally:
        stop_server(other)


def test_bad_deletions_say_what_and_lose_nothing(client: httpx.Client) -> None:
    kept = post(client, "maria", "@agent-a hello")
    missing = client.delete("/v1/worlds/w/messages/999999")
    assert missing.status_code == 404
    assert missing.json()["error"]["message"].startswith("no message 999999 in world 'w': nothing was deleted")
    assert client.delete("/v1/worlds/w/messages/0").status_code == 422
    assert client.delete("/v1/worlds/w/agents/maria").status_code == 404  # a human, not an agent
    assert client.delete("/v1/worlds/w/humans/nobody").json()["error"]["message"].startswith("unknown human 'nobody'")
    assert client.delete("/v1/worlds/nowhere").status_code == 404
    assert client.delete("/v1/worlds/w/humans/maria?erase=maybe").status_code == 422
    assert [m["id"] for m in client.get("/v1/worlds/w/messages").json()["messages"]] == [kept["id"]]
    assert len(client.get("/v1/worlds/w").json()["humans"]) == 1


def test_erasing_a_person_over_rest(client: httpx.Client) -> None:
    said = post(client, "maria", "@agent-a my parcel to Lisbon is late")
    answer = post(client, "agent-a", "@maria sorry, it ships tomorrow", parent_id=said["id"])
    client.post("/v1/scopes/user:maria/facts", json={"content": "Lives in Lisbon"}).raise_for_status()
    erased = client.delete("/v1/worlds/w/humans/maria", params={"erase": "true"})
    assert erased.status_code == 200, erased.text
    assert erased.json() | {"deliveries": 0} == {
        "deleted": True, "participants": 1, "messages": 1, "deliveries": 0, "memories": 0, "facts": 1,
        "notes": 0, "observations": 0, "reparented": 1,
    }  # fmt: skip
    assert erased.json()["deliveries"] == 2
    left = client.get("/v1/worlds/w/messages").json()["messages"]
    assert [(m["id"], m["parent_id"]) for m in left] == [(answer["id"], None)]
    assert client.get("/v1/scopes/user:maria/facts").json()["facts"] == []
    hits = client.post("/v1/worlds/w/search", json={"query": "parcel Lisbon", "method": "bm25"}).json()["results"]
    assert hits == []
    assert client.delete("/v1/worlds/w").json()["participants"] == 2
    assert client.get("/v1/worlds").json()["worlds"] == []

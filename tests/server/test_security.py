"""Defects an outside review found (issue 12), each pinned over real HTTP (spec §8).

Non-finite numbers, a shared memory deleted with an agent's key, open /metrics and /readyz,
DNS rebinding, unbounded and NUL-carrying fields, the README's curl tour and an offline /docs.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from recall.demo import build_demo_world
from recall.server.config import ServerConfig
from recall.store import is_postgres_url
from recall.store.sqlite import sqlite3 as sqlite_module
from tests.server.conftest import LiveServer, post, start_server, stop_server

A_INBOX = "/v1/worlds/w/agents/agent-a/inbox"
JSON = {"content-type": "application/json"}


def raw(c: httpx.Client, method: str, path: str, body: str) -> httpx.Response:
    """Send `body` as it is: httpx's `json=` refuses NaN, a hand-written client does not."""
    return c.request(method, path, content=body.encode(), headers=JSON)


def refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_input"
    assert error["field"] == field, error


def write_raw(location: str, statement: str) -> None:
    """Change stored rows behind the service's back, as an older recall or a hand edit might."""
    if is_postgres_url(location):
        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(statement)  # a fixed statement of the test, not input
        return
    # The store's own SQLite library: two libraries on one WAL file need not see each other's writes.
    with closing(sqlite_module.connect(location, isolation_level=None)) as conn:
        conn.execute(statement)


# -- 1. non-finite numbers ---------------------------------------------------------------------

NON_FINITE = [
    ("POST", "/v1/worlds/w/agents/agent-b/send", '{"content": "@agent-a hello", "metadata": {"score": NaN}}',
     "metadata.score"),
    ("POST", "/v1/worlds/w/messages", '{"sender": "maria", "content": "@agent-a hi", "metadata": {"x": [1, Infinity]}}',
     "metadata.x[1]"),
    ("PUT", "/v1/worlds/w/agents/agent-a/memory/k", '{"value": -Infinity}', "value"),
    ("PUT", "/v1/worlds/w/agents/agent-a/memory/k", '{"value": {"deep": [{"n": 1e999}]}}', "value.deep[0].n"),
    ("POST", "/v1/worlds/w/agents/agent-a/observations", '{"time": NaN}', "time"),
    ("POST", "/v1/worlds/w/agents/agent-a/actions", '{"time": 1, "kind": "move", "position": [Infinity, 0]}',
     "position[0]"),
    ("POST", "/v1/worlds/w/memories", '{"content": "rule", "metadata": {"w": NaN}}', "metadata.w"),
    ("POST", "/v1/scopes/user:maria/facts", '{"content": "Likes tea", "confidence": NaN}', "confidence"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "field"), NON_FINITE)
def test_non_finite_numbers_are_refused_and_nothing_is_stored(
    live: LiveServer, client: httpx.Client, method: str, path: str, body: str, field: str
) -> None:
    refused(raw(client, method, path, body), field)
    assert client.get("/v1/worlds/w/messages").json()["messages"] == []
    assert client.get("/v1/worlds/w/agents/agent-a/memory").json()["items"] == []
    assert client.get("/v1/worlds/w/memories").json()["memories"] == []
    assert client.get("/v1/scopes/user:maria/facts").json()["facts"] == []
    store = live.mem.service.store
    assert store.recent_observations("w", "agent-a", "observation", 10) == []
    assert store.recent_observations("w", "agent-a", "action", 10) == []


def test_a_refused_nan_send_leaves_the_inbox_working(client: httpx.Client) -> None:
    # The review's sequence: NaN metadata was stored, then every check of agent-a answered 500.
    body = '{"content": "@agent-a hello", "metadata": {"score": NaN}}'
    refused(raw(client, "POST", "/v1/worlds/w/agents/agent-b/send", body), "metadata.score")
    assert client.get(A_INBOX, params={"mark_read": True}).json()["new_mentions"] == []
    sent = client.post("/v1/worlds/w/agents/agent-b/send", json={"content": "@agent-a hello", "metadata": {"s": 1.5}})
    assert sent.status_code == 201, sent.text
    checked = client.get(A_INBOX, params={"mark_read": True, "include_context": True})
    assert checked.status_code == 200, checked.text
    assert [(m["id"], m["metadata"]) for m in checked.json()["new_mentions"]] == [
        (sent.json()["message_id"], {"s": 1.5})
    ]


def test_a_stored_non_finite_value_is_still_delivered_once(
    live: LiveServer, client: httpx.Client, store_location: str
) -> None:
    """Whatever an older version (or a hand edit) left in the store, reading it never fails, and
    a message is marked read only with an answer that carries it."""
    message = post(client, "agent-b", "@agent-a hello", metadata={"score": 1})
    write_raw(store_location, f"UPDATE messages SET metadata = '{{\"score\": NaN}}' WHERE id = {message['id']}")
    assert client.put("/v1/worlds/w/agents/agent-a/memory/k", json={"value": 1}).status_code == 200
    write_raw(store_location, "UPDATE agent_memory SET value = '[Infinity, -Infinity, NaN]'")

    first = client.get(A_INBOX, params={"mark_read": True, "include_context": True})
    assert first.status_code == 200, first.text
    assert [(m["id"], m["metadata"]) for m in first.json()["new_mentions"]] == [(message["id"], {"score": None})]
    assert client.get(A_INBOX, params={"mark_read": True}).json()["new_mentions"] == []
    listed = client.get("/v1/worlds/w/messages")
    assert listed.status_code == 200 and listed.json()["messages"][0]["metadata"] == {"score": None}
    assert client.get("/v1/worlds/w/agents/agent-a/memory/k").json()["value"] == [None, None, None]
    assert client.post("/v1/worlds/w/agents/agent-a/context", json={}).status_code == 200


# -- 4. an agent's key and shared memories -----------------------------------------------------


def test_an_agent_key_cannot_delete_a_shared_memory(secured: LiveServer) -> None:
    with secured.client("acme-admin") as admin:
        shared = admin.post("/v1/worlds/w/memories", json={"content": "Deliveries on Monday"}).json()["id"]
    with secured.client("acme-a") as a:
        own = a.post("/v1/worlds/w/agents/agent-a/memories", json={"content": "Maria tips well"}).json()["id"]
        denied = a.delete(f"/v1/worlds/w/agents/agent-a/memories/{shared}")
        assert denied.status_code == 403, denied.text
        assert denied.json()["error"]["type"] == "forbidden"
        assert a.delete(f"/v1/worlds/w/memories/{shared}").status_code == 403
        assert a.delete(f"/v1/worlds/w/agents/agent-a/memories/{own}").json() == {"deleted": True}
        listed = a.get("/v1/worlds/w/agents/agent-a/memories").json()["memories"]
        assert [m["id"] for m in listed] == [shared]
    with secured.client("acme-admin") as admin:
        assert admin.delete(f"/v1/worlds/w/memories/{shared}").json() == {"deleted": True}


# -- 5. /metrics and /readyz with keys ---------------------------------------------------------


def test_metrics_and_readyz_need_a_key_and_metrics_an_admin_key(secured: LiveServer) -> None:
    with secured.client() as anonymous:
        for path in ("/metrics", "/readyz"):
            response = anonymous.get(path)
            assert response.status_code == 401, path
            assert response.json()["error"]["type"] == "unauthorized"
        assert anonymous.get("/healthz").json() == {"status": "ok"}
    for key in ("acme-admin", "acme-a", "globex-admin"):
        with secured.client(key) as tenant:
            assert tenant.get("/readyz").json() == {"status": "ready"}
            denied = tenant.get("/metrics")
            assert denied.status_code == 403, key
            assert "admin" in denied.json()["error"]["message"]
    with secured.client("ops") as ops:
        assert "recall_messages_posted_total" in ops.get("/metrics").text
        assert ops.get("/readyz").json() == {"status": "ready"}


# -- 6. DNS rebinding --------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["rebind.attacker.example", "rebind.attacker.example:8765", "10.0.0.1", "[::2]:80"])
def test_a_keyless_server_answers_only_loopback_host_names(client: httpx.Client, host: str) -> None:
    for path in ("/v1/worlds", "/healthz", "/ui/", "/mcp"):
        response = client.get(path, headers={"Host": host})
        assert response.status_code == 421, (path, response.text)
        assert "loopback" in response.json()["error"]["message"]


@pytest.mark.parametrize("host", ["localhost", "localhost:8765", "127.0.0.1", "127.1.2.3:99", "[::1]", "[::1]:8765"])
def test_loopback_host_names_are_answered(client: httpx.Client, host: str) -> None:
    response = client.get("/v1/worlds", headers={"Host": host})
    assert response.status_code == 200, response.text
    assert [w["id"] for w in response.json()["worlds"]] == ["w"]


def test_a_server_with_keys_answers_any_host(secured: LiveServer) -> None:
    with secured.client("acme-admin") as c:
        response = c.get("/v1/worlds", headers={"Host": "recall.example.com"})
        assert response.status_code == 200 and [w["id"] for w in response.json()["worlds"]] == ["w"]


# -- 7. caps and NUL ---------------------------------------------------------------------------

#: Over every field's cap (100,000 characters at most), under the body's (8 MiB): the field is
#: named. A larger body is 413 before it is read (tests/server/test_request_limits.py).
OVER_CAPS = "x" * 1_000_001

TOO_BIG_OR_NUL: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "metadata": {"blob": OVER_CAPS}}, "metadata"),
    ("POST", "/v1/worlds/w/agents/agent-a/observations", {"time": 1, "note": OVER_CAPS}, "note"),
    ("POST", "/v1/worlds/w/agents/agent-a/actions", {"time": 1, "kind": "say", "utterance": OVER_CAPS}, "utterance"),
    ("POST", "/v1/worlds/w/agents", {"id": "agent-c", "system_prompt": "be\x00evil"}, "system_prompt"),
    ("POST", "/v1/worlds/w/agents", {"id": "agent-c", "goals": ["ok", "x" * 10_001]}, "goals[1]"),
    ("POST", "/v1/worlds/w/agents", {"id": "agent-c", "model": "gpt\x00"}, "model"),
    ("POST", "/v1/worlds", {"id": "other", "name": "a\x00b"}, "name"),
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "metadata": {"a": {"b\x00": 1}}}, "metadata.a"),
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "metadata": {"a": ["ok", "b\x00"]}},
     "metadata.a[1]"),
    ("POST", "/v1/worlds/w/messages", {"sender": "maria", "content": "hi", "idempotency_key": "k\x00"}, "idempotency_key"),
    ("POST", "/v1/worlds/w/agents/agent-b/send", {"content": "hi", "idempotency_key": "k\x00"}, "idempotency_key"),
    ("PUT", "/v1/worlds/w/agents/agent-a/memory/a%00b", {"value": 1}, "key"),
    ("PUT", "/v1/worlds/w/agents/agent-a/memory/k", {"value": {"x": "a\x00"}}, "value.x"),
    ("POST", "/v1/worlds/w/agents/agent-a/observations", {"time": 1, "agents": ["bob\x00"]}, "agents[0].id"),
    ("POST", "/v1/worlds/w/agents/agent-a/observations", {"time": 1, "items": {"coin\x00": [[1, 2]]}}, "items"),
    ("POST", "/v1/worlds/w/memories", {"content": "rule", "metadata": {"a": "\x00"}}, "metadata.a"),
    ("POST", "/v1/worlds/w/memories", {"content": "rule", "metadata": {"blob": OVER_CAPS}}, "metadata"),
    ("POST", "/v1/scopes/user:maria/facts", {"content": "Likes tea", "source": "a\x00"}, "source"),
    ("POST", "/v1/scopes/user:maria/facts", {"content": "Likes tea", "avoid": "a\x00"}, "avoid"),
    ("PUT", "/v1/scopes/user:maria/sections", {"top_of_mind": "a\x00"}, "top_of_mind"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "field"), TOO_BIG_OR_NUL)
def test_oversized_and_nul_fields_are_refused_naming_the_field(
    live: LiveServer, client: httpx.Client, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    refused(client.request(method, path, json=body), field)
    world = client.get("/v1/worlds/w").json()
    assert (world["agents"], world["humans"]) == (["agent-a", "agent-b"], ["maria"])
    assert [w["id"] for w in client.get("/v1/worlds").json()["worlds"]] == ["w"]
    assert client.get("/v1/worlds/w/messages").json()["messages"] == []
    assert client.get("/v1/worlds/w/agents/agent-a/memory").json()["items"] == []
    assert client.get("/v1/worlds/w/memories").json()["memories"] == []
    facts = client.get("/v1/scopes/user:maria/facts").json()
    assert (facts["facts"], facts["sections"]) == ([], {})
    store = live.mem.service.store
    assert store.recent_observations("w", "agent-a", "observation", 10) == []
    assert store.recent_observations("w", "agent-a", "action", 10) == []


def test_a_nul_in_the_inbox_session_is_refused(client: httpx.Client) -> None:
    refused(client.get(A_INBOX, params={"session": "s\x00", "include_context": True}), "session")


def test_fields_at_their_cap_are_stored(client: httpx.Client) -> None:
    from recall import limits

    metadata = {"blob": "x" * (limits.MAX_METADATA_CHARS - len('{"blob": ""}'))}
    message = post(client, "maria", "hi", metadata=metadata, idempotency_key="k" * limits.MAX_IDEMPOTENCY_KEY)
    assert message["metadata"] == metadata
    note = "n" * limits.MAX_OBSERVATION_TEXT
    assert client.post("/v1/worlds/w/agents/agent-a/observations", json={"time": 1, "note": note}).status_code == 201
    over = client.post(
        "/v1/worlds/w/messages", json={"sender": "maria", "content": "hi", "metadata": {**metadata, "y": 1}}
    )
    refused(over, "metadata")
    assert f"{limits.MAX_METADATA_CHARS:,}" in over.json()["error"]["message"]


# -- 21. the README's curl tour, /docs offline -------------------------------------------------


def readme_tour() -> str:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The HTTP API", 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[LiveServer]:
    """What `make run` starts: `recall serve --demo` on a fresh store."""
    server = start_server(tmp_path / "run.db", ServerConfig())
    build_demo_world(server.mem)
    yield server
    stop_server(server)


def test_the_readme_curl_tour_works_step_by_step_after_make_run(demo_server: LiveServer) -> None:
    port = demo_server.url.rsplit(":", 1)[1]
    script = readme_tour().replace("localhost:8765", f"localhost:{port}")
    # Every step must answer 2xx: curl exits non-zero otherwise, and `set -e` stops the tour there.
    prelude = 'set -euo pipefail\ncurl() { command curl --silent --show-error --fail-with-body --max-time 20 "$@"; }\n'
    done = subprocess.run(["bash", "-c", prelude + script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    team = demo_server.mem.world("team").messages()
    assert [(m.sender, m.content) for m in team] == [("maria", "@triage my invoice is wrong"), ("triage", "On it!")]
    assert team[1].parent_id == team[0].id


def test_docs_page_loads_only_local_assets(client: httpx.Client) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", page.text)
    urls += re.findall(r"""url:\s*["']([^"']+)["']""", page.text)
    assert urls, page.text
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
        assert client.get(url).status_code == 200, url
    assert "https://" not in page.text and "http://" not in page.text
    assert client.get("/docs/assets/../../pyproject.toml").status_code == 404
    assert client.get("/redoc").status_code == 404


# -- the startup refusal names [[keys]] --------------------------------------------------------


def test_serve_refusal_and_help_print_keys_in_brackets(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from recall.cli import app

    runner = CliRunner()
    wide = {"COLUMNS": "200", "RECALL_API_KEYS": "", "RECALL_CONFIG": ""}
    result = runner.invoke(app, ["--db", str(tmp_path / "x.db"), "serve", "--host", "0.0.0.0"], env=wide)
    assert result.exit_code == 1
    assert "add keys (RECALL_API_KEYS or [[keys]] in the config file)" in result.output, result.output
    helped = runner.invoke(app, ["serve", "--help"], env=wide)
    assert "[[keys]] tables in --config" in helped.output, helped.output
    assert "admin = true also reads /metrics" in helped.output

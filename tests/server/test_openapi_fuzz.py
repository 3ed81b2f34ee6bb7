"""Property-based test of the whole REST API against its own OpenAPI schema: no input makes a 5xx,
and every answer, an error's too, is the one the schema documents."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import response_schema_conformance

from recall.api import Recall
from recall.server.app import create_app
from recall.server.config import ServerConfig
from recall.settings import Settings


def _app() -> Any:
    # Built at import: schemathesis needs the schema to make one test per operation, which xdist
    # spreads over the workers (a fixture-loaded schema runs them all as one test). Each worker
    # that imports this module closes its store and removes its folder when it exits.
    folder = Path(tempfile.mkdtemp(prefix="recall-fuzz-"))
    mem = Recall(folder / "fuzz.db", Settings())
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    atexit.register(mem.close)
    world = mem.world("w", create=True)
    world.add_agent("agent-a", system_prompt="You are A.")
    world.add_agent("agent-b")
    world.add_human("maria")
    world.post("maria", "@agent-a hello")
    return create_app(mem.service, ServerConfig(rate_limit=0))


#: A keyless server answers only loopback host names (schemathesis' default is `testserver`).
LOOPBACK = {"Host": "127.0.0.1"}
schema = schemathesis.openapi.from_asgi("/openapi.json", _app(), headers=LOOPBACK)


def _aim_at_real_names(case: Any) -> None:
    """Half the generated names point at the real world and agent, so deep paths are reached too."""
    params = case.path_parameters or {}
    if "world" in params and len(str(params["world"])) % 2 == 0:
        params["world"] = "w"
    if "agent" in params and len(str(params["agent"])) % 2 == 0:
        params["agent"] = "agent-a"


@schema.parametrize()
@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_request_makes_a_server_error_and_every_answer_is_as_documented(case: Any) -> None:
    _aim_at_real_names(case)
    if isinstance(case.query, dict) and case.query.get("wait") not in (None, False, "false"):
        case.query["timeout"] = 0.01  # long-polls end at once; waking is tested elsewhere
    response = case.call(headers=LOOPBACK)
    assert response.status_code != 421, "the fuzzer must reach the routes, not the host-name check"
    assert response.status_code < 500, f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text}"
    if response.status_code >= 400 and response.headers.get("content-type", [""])[0].startswith("application/json"):
        assert "error" in response.json(), response.text
    # Whatever the generated request held (metadata, notes' values, odd names), the answer, an
    # error's too, is what /openapi.json says (test_response_schemas.py walks each route on purpose).
    case.validate_response(response, checks=[response_schema_conformance])


#: Times at the calendar's edges and past it (issue 23: each made a 500 somewhere), put into
#: every time-like field a generated request has.
EDGE_TIMES: list[Any] = [
    "9999-12-31T23:00:00-05:00",
    "0001-01-01T00:30:00+01:00",
    "9999-06-01T00:00:00Z",
    "0001-01-05T00:00:00Z",
    1e18,
    -1e12,
]
TIME_FIELDS = ("created_at", "now", "since", "until", "time", "expires_at")
#: Long texts: a query just under and just over its cap, full of dates; a page of dates as content.
LONG_TEXTS = ["jan 1 " * 660, "jan 1 " * 700, "may 5 2023 " * 2000]


def _push_to_the_edges(case: Any) -> None:
    """Put an edge time into each time-like field and a long text into each text a request
    searches for or stores (chosen from the path, so the run stays deterministic)."""
    pick = sum(map(ord, case.formatted_path + case.method))
    for fields in (case.body, case.query):
        if not isinstance(fields, dict):
            continue
        for name in TIME_FIELDS:
            if name in fields:
                fields[name] = EDGE_TIMES[pick % len(EDGE_TIMES)]
        for name in ("query", "content", "q"):
            if name in fields and isinstance(fields[name], str):
                fields[name] = LONG_TEXTS[pick % len(LONG_TEXTS)]


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_edge_times_and_long_texts_make_no_server_error(case: Any) -> None:
    _aim_at_real_names(case)
    _push_to_the_edges(case)
    if isinstance(case.query, dict) and case.query.get("wait") not in (None, False, "false"):
        case.query["timeout"] = 0.01
    response = case.call(headers=LOOPBACK)
    assert response.status_code < 500, f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text}"

"""`recall.telemetry.setup`: the SDK set up from the standard OTEL_* variables. A process that
asks for OTLP sends its spans and metrics over the real protocol (protobuf over HTTP) to a
receiver on loopback, which decodes them; bad settings get an error that names them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from typer.testing import CliRunner

from recall.cli import app
from recall.errors import InvalidInputError
from recall.telemetry.setup import configure_from_env, exporter_names, wanted

#: A process that sets up telemetry from its environment, builds a context and exits.
TRACED = """
import sys
from recall import Recall, Settings
from recall.telemetry.setup import configure_from_env
configured = configure_from_env()
with Recall(sys.argv[1], Settings(index_interval=0)) as mem:
    world = mem.world("w", create=True)
    world.add_human("maria")
    world.add_agent("agent-b")
    world.post("maria", "@agent-b where is my parcel, the one with the secret pumpkin?")
    world.agent("agent-b").context(max_tokens=500)
configured.shutdown()  # exports what is buffered, as at exit
"""


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP endpoint: each request's body decoded by its path's protobuf message."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.content_types: set[str] = set()


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802 - the handler's name is http.server's
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.content_types.add(self.headers["Content-Type"])
        if self.path == "/v1/traces":
            self.server.traces.append(ExportTraceServiceRequest.FromString(body))
        elif self.path == "/v1/metrics":
            self.server.metrics.append(ExportMetricsServiceRequest.FromString(body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def test_otlp_over_http_reaches_a_collector_with_the_service_and_recalls_spans(
    tmp_path: Path, receiver: Receiver
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        "PYTHONPATH": os.pathsep.join(sys.path),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}",
        "OTEL_SERVICE_NAME": "recall-under-test",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
        "OTEL_TRACES_SAMPLER": "always_on",
        "OTEL_TRACES_EXPORTER": "console,otlp",  # each span printed as JSON too
    }
    done = subprocess.run(
        [sys.executable, "-c", TRACED, str(tmp_path / "recall.db")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert receiver.content_types == {"application/x-protobuf"}
    assert '"name": "recall.context.packing"' in done.stdout and "pumpkin" not in done.stdout

    spans = [
        (r, s) for request in receiver.traces for r in request.resource_spans for ss in r.scope_spans for s in ss.spans
    ]
    names = {s.name for _, s in spans}
    assert {"recall.context", "recall.context.scan", "recall.context.search", "recall.context.packing"} <= names
    assert "recall.post" in names
    resource = {a.key: a.value.string_value for a in spans[0][0].resource.attributes}
    assert resource["service.name"] == "recall-under-test" and resource["deployment.environment"] == "test"
    context = next(s for _, s in spans if s.name == "recall.context")
    attributes = {a.key: a.value for a in context.attributes}
    assert (
        attributes["recall.context.budget"].int_value == 500 and attributes["recall.agent.id"].string_value == "agent-b"
    )

    metrics = {m.name for request in receiver.metrics for r in request.resource_metrics for sm in r.scope_metrics
               for m in sm.metrics}  # fmt: skip
    assert {"recall.context.duration", "recall.context.tokens", "recall.post.duration"} <= metrics
    assert "pumpkin" not in str(receiver.traces) + str(receiver.metrics)


def test_nothing_is_set_up_unless_an_exporter_or_endpoint_is_named() -> None:
    assert not wanted({})
    assert not wanted({"OTEL_SERVICE_NAME": "recall"})
    assert wanted({"OTEL_TRACES_EXPORTER": "console"})
    assert wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert not wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"})
    configured = configure_from_env({"OTEL_SERVICE_NAME": "recall"})
    assert (configured.tracer_provider, configured.meter_provider) == (None, None)


def test_exporter_names_follow_the_standard_variables() -> None:
    assert exporter_names("traces", {}) == ["otlp_proto_http"]  # otlp, over HTTP by default
    assert exporter_names("traces", {"OTEL_TRACES_EXPORTER": "console,otlp"}) == ["console", "otlp_proto_http"]
    assert exporter_names("metrics", {"OTEL_METRICS_EXPORTER": "none"}) == []
    grpc = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert exporter_names("traces", grpc) == ["otlp_proto_grpc"]
    assert exporter_names("metrics", {**grpc, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"}) == [
        "otlp_proto_http"
    ]


@pytest.mark.parametrize(
    ("environ", "field", "says"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin-ish"}, "OTEL_TRACES_EXPORTER", "no traces exporter named 'zipkin-ish'"),
        ({"OTEL_METRICS_EXPORTER": "prometheus"}, "OTEL_METRICS_EXPORTER", "installed: console, none, otlp"),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_TRACES_EXPORTER",
         "needs opentelemetry-exporter-otlp-proto-grpc"),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL",
         "must be http/protobuf or grpc, got 'http/json'"),
    ],
)  # fmt: skip
def test_a_bad_setting_is_refused_before_anything_is_set_up(environ: dict[str, str], field: str, says: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        configure_from_env(environ)
    assert raised.value.field == field and says in str(raised.value)


def test_recall_serve_refuses_a_bad_exporter_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "bogus")
    result = CliRunner().invoke(app, ["serve", "--db", str(tmp_path / "recall.db")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: OTEL_TRACES_EXPORTER: no traces exporter named 'bogus' is installed; installed: console, none, otlp,"
        " otlp_proto_http"
    ]

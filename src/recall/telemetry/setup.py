"""`recall serve`, `recall mcp`, `recall agent run` and the index worker set up OpenTelemetry's SDK
from the standard `OTEL_*` variables, so their spans and metrics reach a collector.

Offline by default: nothing is set up (and nothing is sent anywhere) until an exporter or an
OTLP endpoint is named (`OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`,
`OTEL_EXPORTER_OTLP_ENDPOINT` or its per-signal variant), and never when `OTEL_SDK_DISABLED`
is true or the process already has providers (an application embedding recall set up its own).
The SDK reads the rest itself: the service name and resource attributes, the sampler, the OTLP
endpoint, headers and timeouts, the batch and export intervals. Only the exporter names are
read here, as OpenTelemetry's own auto-configuration reads them, except that `otlp` means OTLP
over HTTP (http/protobuf, what the `otel` extra installs) unless the protocol says `grpc`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from recall.errors import InvalidInputError
from recall.extras import missing_modules

logger = logging.getLogger("recall.telemetry")

#: Any of these set means "export": the standard default exporter (otlp) goes to the endpoint.
TRIGGERS = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
_GROUPS = {"traces": "opentelemetry_traces_exporter", "metrics": "opentelemetry_metrics_exporter"}
_OTLP_BY_PROTOCOL = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}


@dataclass
class Configured:
    """What `configure_from_env` set up: the providers it made (None: it made none)."""

    tracer_provider: Any = None
    meter_provider: Any = None
    exporters: dict[str, list[str]] = field(default_factory=dict)

    def shutdown(self) -> None:
        """Export what is buffered and stop the exporters' threads."""
        for provider in (self.tracer_provider, self.meter_provider):
            if provider is not None:
                provider.shutdown()


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for telemetry to be exported."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name, "").strip() for name in TRIGGERS)


def exporter_names(signal: str, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The exporters named for `signal` ("traces" or "metrics"), as entry point names: `otlp`
    becomes the OTLP exporter of the configured protocol; `none` (or nothing left) is none."""
    raw = environ.get(f"OTEL_{signal.upper()}_EXPORTER", "otlp")
    names = [n.strip() for n in raw.split(",") if n.strip() and n.strip().lower() != "none"]
    protocol = (
        environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip() or "http/protobuf"
    out = []
    for name in names:
        if name == "otlp":
            if protocol not in _OTLP_BY_PROTOCOL:
                raise InvalidInputError(
                    "OTEL_EXPORTER_OTLP_PROTOCOL", f"must be http/protobuf or grpc, got {protocol!r}"
                )
            name = _OTLP_BY_PROTOCOL[protocol]
        out.append(name)
    return out


def _entry_point(signal: str, name: str) -> Any:
    """The exporter class installed under `name` for `signal`; InvalidInputError if none is."""
    from importlib.metadata import entry_points  # not on `recall --help`'s path: ~25 ms to import

    found = entry_points(group=_GROUPS[signal], name=name)
    if not found:
        installed = sorted({e.name for e in entry_points(group=_GROUPS[signal])} | {"otlp", "none"})
        hint = " (OTLP over gRPC needs opentelemetry-exporter-otlp-proto-grpc)" if name == "otlp_proto_grpc" else ""
        raise InvalidInputError(
            f"OTEL_{signal.upper()}_EXPORTER",
            f"no {signal} exporter named {name!r} is installed{hint}; installed: {', '.join(installed)}",
        )
    return next(iter(found)).load()


def configure_from_env(environ: Mapping[str, str] = os.environ) -> Configured:
    """Set the global tracer and meter providers from the `OTEL_*` variables, when they ask for
    it and the process has none yet. A bad exporter name or protocol raises InvalidInputError;
    OTEL variables without the `otel` extra are logged once and ignored (recall runs as before)."""
    if not wanted(environ):
        return Configured()
    missing = missing_modules("otel")
    if missing:
        logger.warning(
            "OTEL_* variables are set but the 'otel' extra is not installed: no telemetry is exported"
            ' (pip install "recall-memory[otel]"; missing: %s)',
            ", ".join(missing),
        )
        return Configured()
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    names = {signal: exporter_names(signal, environ) for signal in _GROUPS}
    for signal, signal_names in names.items():  # every name checked before anything is set
        for name in signal_names:
            _entry_point(signal, name)
    named = "OTEL_SERVICE_NAME" in environ or "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES itself.
    resource = Resource.create(None if named else {"service.name": "recall"})
    done = Configured(exporters=names)
    # The API's proxies stand for "nothing set yet": a provider someone else set stays theirs.
    if names["traces"] and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        tracer_provider = TracerProvider(resource=resource)  # the sampler from OTEL_TRACES_SAMPLER
        for name in names["traces"]:
            tracer_provider.add_span_processor(BatchSpanProcessor(_entry_point("traces", name)()))
        trace.set_tracer_provider(tracer_provider)
        done.tracer_provider = tracer_provider
    if names["metrics"] and type(metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider":
        readers = [PeriodicExportingMetricReader(_entry_point("metrics", n)()) for n in names["metrics"]]
        meter_provider = MeterProvider(metric_readers=readers, resource=resource)
        metrics.set_meter_provider(meter_provider)
        done.meter_provider = meter_provider
    return done

"""`otel`: recall's spans and metrics go to OpenTelemetry's in-memory exporter and metric reader
for one test. The providers are the test's own (`recall.telemetry.use_providers`), never the
process's global ones: the global providers can be set once per process, and the other tests
of this worker must not record into them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from recall import telemetry


@dataclass
class Recorded:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.spans(name)
        assert len(found) == 1, (name, [s.name for s in self.exporter.get_finished_spans()])
        return found[0]

    def points(self) -> dict[str, list[Any]]:
        """Each metric's data points (histograms' and counters'), by name."""
        data = self.reader.get_metrics_data()
        out: dict[str, list[Any]] = {}
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


@pytest.fixture
def otel() -> Iterator[Recorded]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    telemetry.use_providers(tracer_provider, meter_provider)
    try:
        yield Recorded(exporter, reader)
    finally:
        telemetry.use_providers()  # the global providers again (no-ops: nothing sets them in tests)
        tracer_provider.shutdown()
        meter_provider.shutdown()


def all_attribute_values(recorded: Recorded) -> list[str]:
    """Every attribute value of every span, span event and metric data point, as text."""
    values = [str(v) for s in recorded.spans() for v in (s.attributes or {}).values()]
    values += [str(v) for s in recorded.spans() for e in s.events for v in (e.attributes or {}).values()]
    values += [str(s.name) for s in recorded.spans()]
    values += [str(v) for points in recorded.points().values() for p in points for v in p.attributes.values()]
    return values

"""OpenTelemetry traces and metrics of what recall does (docs/opentelemetry.md): context builds
and their phases, searches, posts, inbox waits, extraction calls and the index worker.

recall's code calls only this module. With the `otel` extra installed, it goes through the
OpenTelemetry API to the global providers (an application that set up its own gets recall's
spans and metrics; `recall serve` sets them up from the standard `OTEL_*` variables:
`recall.telemetry.setup`). Without it (or before anything imported the API), every call here is
a no-op on one shared object and nothing else changes. What goes out are ids, counts, tokens
and durations: never the text of a message, a query, a fact or a memory.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from recall.telemetry.instruments import INSTRUMENTS
from recall.version import __version__

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider


#: An attribute's value: what OpenTelemetry accepts, and all recall sends.
Value = str | bool | int | float
INSTRUMENTATION_NAME = "recall"


class Span:
    """What recall's code holds of a span: set attributes, when anyone records them."""

    __slots__ = ("_labels", "_span")

    def __init__(self, span: Any = None, labels: dict[str, Value] | None = None) -> None:
        self._span = span
        #: The metric's labels, when the span is `timed`: `label` adds to them.
        self._labels = labels

    @property
    def recording(self) -> bool:
        """Whether the attributes go anywhere: count what they say only when they do."""
        return self._span is not None and bool(self._span.is_recording())

    def set(self, attributes: Mapping[str, Value | None]) -> None:
        if self._span is not None:
            self._span.set_attributes({k: v for k, v in attributes.items() if v is not None})

    def fail(self, kind: str) -> None:
        """Mark the span failed, `kind` saying how (`error.type`): an HTTP request answered with
        a 5xx, which no exception carried out of the handler."""
        if self._span is not None:
            _mark_failed(self._span, kind)

    def rename(self, name: str) -> None:
        """Name the span anew (an HTTP request's, once its route is known)."""
        if self._span is not None:
            self._span.update_name(name)

    def label(self, key: str, value: Value) -> None:
        """An attribute of the span that is also a label of its duration's metric (`timed`): an
        outcome known only at the end, such as whether an inbox wait was woken."""
        if self._span is not None:
            self._span.set_attribute(key, value)
        if self._labels is not None:
            self._labels[key] = value


_MAKING = threading.Lock()

#: The span of every call while nothing records (no extra, or no provider).
_NULL_SPAN = Span()


class _Telemetry:
    """The tracer and the instruments, from the global providers or from the ones `use_providers`
    was given (a test's in-memory ones).

    OpenTelemetry's API is imported only once something else imported it (an application or
    `recall.telemetry.setup` setting a provider, an instrumentation): until then no provider can
    be set, so there is nothing to send to, and `import recall` stays as fast as without it
    (importing the API takes tens of milliseconds)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Back to waiting for the API to be imported."""
        self.tracer: Any = None
        self.instruments: dict[str, Any] = {}
        #: Whether `tracer` and `instruments` are made (not while nothing imported the API).
        self.ready = False

    def resolve(self) -> Any:
        """The tracer, made on the first call after the API is imported; None before."""
        if not self.ready and "opentelemetry.trace" in sys.modules:
            with _MAKING:  # threads that get here at once make the instruments once
                if not self.ready:
                    self.use(None, None)
        return self.tracer

    def use(self, tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None) -> None:
        from opentelemetry import metrics, trace

        # Before a global provider is set, the API's proxies forward to it once it is.
        self.tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(INSTRUMENTATION_NAME, __version__)
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(INSTRUMENTATION_NAME, __version__)
        made: dict[str, Any] = {}
        for name, (kind, unit, description) in INSTRUMENTS.items():
            create = meter.create_counter if kind == "counter" else meter.create_histogram
            made[name] = create(name, unit=unit, description=description)
        self.instruments = made
        self.ready = True


_state = _Telemetry()


def active() -> bool:
    """Whether spans and metrics go to OpenTelemetry's API (imported, so a provider may be set):
    compute what only they need when this is true."""
    return _state.resolve() is not None


def current() -> Any:
    """The current trace context, for work another thread does on this one's behalf (`within`):
    a request's context built in a batch thread; None while nothing records."""
    if _state.resolve() is None:
        return None
    from opentelemetry import context

    return context.get_current()


@contextmanager
def within(carried: Any) -> Iterator[None]:
    """Run the block in a trace context `current` gave (its spans are that context's children);
    None: in this thread's own."""
    if carried is None:
        yield
        return
    from opentelemetry import context

    token = context.attach(carried)
    try:
        yield
    finally:
        context.detach(token)


def use_providers(tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None) -> None:
    """Send recall's spans and metrics to these providers instead of the global ones (None: the
    global ones again). For tests and for an application that keeps recall's telemetry apart."""
    if tracer_provider is None and meter_provider is None and "opentelemetry.trace" not in sys.modules:
        _state.reset()
        return
    _state.use(tracer_provider, meter_provider)


@contextmanager
def span(name: str, attributes: Mapping[str, Value | None] | None = None) -> Iterator[Span]:
    """A span named `name`, current inside the block (children nest under it); an exception
    leaving the block marks it failed, with the exception's type (`error.type`) but not its
    message, which may quote what was posted."""
    clean = {k: v for k, v in attributes.items() if v is not None} if attributes else None
    with _started(name, attributes=clean) as current:
        yield current


@contextmanager
def _started(name: str, **options: Any) -> Iterator[Span]:
    """A span of recall's tracer started with `options` (start_as_current_span's), current inside
    the block and marked failed by an exception leaving it; the null span while nothing records."""
    tracer = _state.resolve()
    if tracer is None:
        yield _NULL_SPAN
        return
    with tracer.start_as_current_span(
        name, record_exception=False, set_status_on_exception=False, **options
    ) as current:
        try:
            yield Span(current)
        except BaseException as exc:
            _failed(current, exc)
            raise


def _failed(current: Any, exc: BaseException) -> None:
    _mark_failed(current, type(exc).__name__)


def _mark_failed(current: Any, kind: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    current.set_attribute("error.type", kind)
    current.set_status(Status(StatusCode.ERROR, kind))


@contextmanager
def incoming_request(method: str, headers: Mapping[str, str]) -> Iterator[Span]:
    """A server span for an HTTP request, child of the caller's trace when its headers carry one
    (W3C `traceparent`, or what OTEL_PROPAGATORS names), current inside the block."""
    if not active():
        yield _NULL_SPAN
        return
    from opentelemetry import propagate, trace

    parent = propagate.extract(headers)
    attributes = {"http.request.method": method}
    with _started(method, context=parent, kind=trace.SpanKind.SERVER, attributes=attributes) as current:
        yield current


def record(name: str, value: float, attributes: Mapping[str, Value] | None = None) -> None:
    """Record `value` on the histogram, or add it to the counter, named `name` (`INSTRUMENTS`)."""
    _state.resolve()
    instrument = _state.instruments.get(name)
    if instrument is None:
        return
    if INSTRUMENTS[name][0] == "counter":
        instrument.add(value, attributes)
    else:
        instrument.record(value, attributes)


def finished(name: str, started_ns: int, attributes: Mapping[str, Value | None]) -> None:
    """A span of work that began at `started_ns` (`time.time_ns()`) and ends now: for work
    worth a span only once it turns out there was some (an index batch that found nothing to
    do every few seconds is not traced)."""
    tracer = _state.resolve()
    if tracer is not None:
        clean = {k: v for k, v in attributes.items() if v is not None}
        tracer.start_span(name, attributes=clean, start_time=started_ns).end()


@contextmanager
def timed(
    name: str,
    metric: str,
    attributes: Mapping[str, Value | None] | None = None,
    labels: Mapping[str, Value] | None = None,
) -> Iterator[Span]:
    """A span named `name`, and its duration in seconds recorded on the histogram `metric` with
    `labels` (few values each: a metric's attributes are its series), failed or not."""
    if _state.resolve() is None:
        yield _NULL_SPAN
        return
    start = time.perf_counter()
    series: dict[str, Value] = {**(labels or {}), "recall.outcome": "ok"}
    try:
        with span(name, attributes) as current:
            yield Span(current._span, series)
    except BaseException as exc:
        series["recall.outcome"] = type(exc).__name__
        raise
    finally:
        record(metric, time.perf_counter() - start, series)

"""Counters for `/metrics`, in the Prometheus text format (spec §6).

Handlers run in worker threads, so every change and the rendering hold one lock: `+=` and
`Counter.update` are not atomic, and a Counter must not change while it is being listed.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from recall.core.context_parts import ContextReport
from recall.core.inbox import CheckResult


@dataclass
class Metrics:
    messages_posted: int = 0
    deliveries: int = 0
    checks: int = 0
    waiting_checks: int = 0
    mentions_returned: int = 0
    context_messages_sent: int = 0
    #: Checks answered with only the context not sent before (context once).
    delta_checks: int = 0
    context_builds: int = 0
    context_tokens: Counter[str] = field(default_factory=Counter)
    excluded: Counter[str] = field(default_factory=Counter)
    #: Outcomes runners reported of their model calls ("answered", "failed").
    call_outcomes: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def observe_post(self, deliveries: int) -> None:
        with self._lock:
            self.messages_posted += 1
            self.deliveries += deliveries

    def observe_waiting_check(self) -> None:
        with self._lock:
            self.waiting_checks += 1

    def observe_check(self, result: CheckResult) -> None:
        with self._lock:
            self.checks += 1
            self.mentions_returned += len(result.new_mentions)
            self.context_messages_sent += len(result.context)
            self.delta_checks += int(result.delta)

    def observe_context(self, report: ContextReport) -> None:
        with self._lock:
            self.context_builds += 1
            self.context_tokens.update(report.sections)
            self.excluded.update(report.excluded)

    def observe_outcome(self, outcome: str | None) -> None:
        if outcome is not None:
            with self._lock:
                self.call_outcomes[outcome] += 1

    def render(self, *, waiting: int, rate_limited: int, extraction_queue: int = 0) -> str:
        with self._lock:
            return self._render(waiting, rate_limited, extraction_queue)

    def _render(self, waiting: int, rate_limited: int, extraction_queue: int) -> str:
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: dict[str, float] | float) -> None:
            lines.append(f"# HELP recall_{name} {help_text}")
            lines.append(f"# TYPE recall_{name} {kind}")
            if isinstance(samples, dict):
                for label, value in sorted(samples.items()):
                    lines.append(f"recall_{name}{{{label}}} {value}")
            else:
                lines.append(f"recall_{name} {samples}")

        metric("messages_posted_total", "counter", "Messages stored through the API.", self.messages_posted)
        metric("deliveries_total", "counter", "Inbox entries created by those messages.", self.deliveries)
        metric("inbox_checks_total", "counter", "Inbox checks answered.", self.checks)
        metric("inbox_waiting_checks_total", "counter", "Checks that long-polled.", self.waiting_checks)
        metric("inbox_waiting", "gauge", "Checks asleep until a message arrives, right now.", waiting)
        metric("inbox_mentions_returned_total", "counter", "New mentions returned by checks.", self.mentions_returned)
        metric(
            "context_once_messages_sent_total",
            "counter",
            "Context messages sent by checks.",
            self.context_messages_sent,
        )
        metric("context_once_delta_checks_total", "counter", "Checks that sent only unsent context.", self.delta_checks)
        metric("context_builds_total", "counter", "Contexts built.", self.context_builds)
        metric(
            "context_tokens_total",
            "counter",
            "Tokens of built contexts by section.",
            {f'section="{k}"': v for k, v in self.context_tokens.items()},
        )
        metric(
            "context_excluded_total",
            "counter",
            "Messages left out of built contexts by reason.",
            {f'reason="{k}"': v for k, v in self.excluded.items()},
        )
        metric(
            "model_calls_answered_total", "counter", "Model calls reported answered.", self.call_outcomes["answered"]
        )
        metric(
            "model_call_failures_total",
            "counter",
            "Model calls reported failed (the model server down, refusing or timing out).",
            self.call_outcomes["failed"],
        )
        metric("rate_limited_total", "counter", "Requests refused by the per-agent rate limit.", rate_limited)
        metric(
            "extraction_queue_depth", "gauge", "Conversation snapshots waiting for fact extraction.", extraction_queue
        )
        return "\n".join(lines) + "\n"

"""What a context build tells OpenTelemetry (docs/opentelemetry.md): its budget, the tokens it
used, the items it considered, took and left out by kind, and the evidence the budget left out.
Counts and names only: the report's items carry no text, and none is read here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from recall import telemetry
from recall.core.context import Scan
from recall.core.context_parts import ContextBlock, ContextReport
from recall.core.recalled import RecallRequest

#: Why an item left out was left out for the budget (docs/context.md's reasons).
BUDGET_REASONS = ("over-budget", "outranked")


def scan_attributes(scan: Scan) -> dict[str, telemetry.Value]:
    """The scan's span: the messages of the chat it read, and where they went."""
    return {
        "recall.scan.read": scan.read_in_chat,
        "recall.scan.incoming": len(scan.incoming),
        "recall.scan.history": len(scan.history),
        "recall.scan.excluded": len(scan.items),
    }


def search_attributes(blocks: Sequence[ContextBlock], recalled: RecallRequest | None) -> dict[str, telemetry.Value]:
    """The search's span: the facts and memories found for the blocks, the recalled past's candidates."""
    out: dict[str, telemetry.Value] = {f"recall.search.{b.section}.items": len(b.items) for b in blocks}
    out["recall.search.recalled.candidates"] = len(recalled.candidates) if recalled is not None else 0
    return out


def report_attributes(report: ContextReport) -> dict[str, telemetry.Value]:
    """The span attributes of a built context."""
    taken = Counter(i.kind for i in report.items if i.included)
    # An item listed twice (left out of the recent conversation and of the recalled past) counts once.
    left = {(i.kind, i.id, i.reason) for i in report.items if not i.included and i.reason != "in-history"}
    left_out = Counter(kind for kind, _, _ in left)
    dropped = sum(1 for _, _, reason in left if reason in BUDGET_REASONS)
    unlisted = sum(report.unlisted.values())
    out: dict[str, telemetry.Value] = {
        "recall.context.budget": report.budget,
        "recall.context.tokens": report.total_tokens,
        "recall.context.items.considered": sum(taken.values()) + len(left) + unlisted,
        "recall.context.items.in": sum(taken.values()),
        "recall.context.items.out": len(left) + unlisted,
        "recall.context.dropped_for_budget": dropped,
        "recall.context.incoming": report.incoming_count,
    }
    out.update({f"recall.context.items.in.{kind}": n for kind, n in taken.items()})
    out.update({f"recall.context.items.out.{kind}": n for kind, n in left_out.items()})
    out.update({f"recall.context.tokens.{section}": n for section, n in report.sections.items()})
    return out


def record_report(span: telemetry.Span, report: ContextReport) -> None:
    """The built context on its span and in the context metrics."""
    if not telemetry.active():
        return
    if span.recording:
        span.set(report_attributes(report))
    telemetry.record("recall.context.tokens", report.total_tokens)
    telemetry.record("recall.context.budget", report.budget)
    telemetry.record("recall.context.budget_used", report.total_tokens / report.budget)
    dropped = Counter(
        kind
        for kind, _, reason in {(i.kind, i.id, i.reason) for i in report.items if not i.included}
        if reason in BUDGET_REASONS
    )
    for kind, n in dropped.items():
        telemetry.record("recall.context.dropped", n, {"recall.item.kind": kind})

"""The context's blocks (spec §3): the system messages between the prompt and the history.

A caller's blocks (facts, long-term memories, observations, its own) are optional: each goes
in, in order, while it fits the budget the messages left, and the recalled past takes its place
among them. The report lists each block and the candidates inside it, blocks first in their
output order. `core/context.py` builds the rest of the context around them.
"""

from __future__ import annotations

from collections.abc import Sequence

from recall.core.context_parts import MESSAGE_SECTIONS, SECTIONS, ContextBlock, ContextMessage, ReportItem
from recall.core.context_records import ContextRequest
from recall.errors import InvalidInputError


def section_names(blocks: Sequence[ContextBlock]) -> list[str]:
    """The report's sections in output order: the standard ones, and the names of the
    caller's own blocks before `observations` (where the service places a caller's blocks)."""
    names = list(SECTIONS)
    for block in blocks:
        section = block.section
        if not isinstance(section, str) or not section.strip() or section in MESSAGE_SECTIONS:
            raise InvalidInputError(
                "blocks",
                f"a block needs a name of its own, not empty and not one of {', '.join(MESSAGE_SECTIONS)}; "
                f"got {section!r}",
            )
        if section not in names:
            names.insert(names.index("observations"), section)
    return names


def fit_blocks(req: ContextRequest, used: int) -> tuple[list[ContextMessage], list[ReportItem], int]:
    """Context blocks are optional: keep them in order while they fit after `used` tokens."""
    blocks: list[ContextMessage] = []
    items: list[ReportItem] = []
    for block in req.blocks:
        if not block.content:
            continue
        message = ContextMessage("system", block.content, block.section, req.counter.message("system", block.content))
        fits = used + message.tokens <= req.max_tokens
        if fits:
            blocks.append(message)
            used += message.tokens
        items.append(
            ReportItem("block", block.section, fits, block.section, None if fits else "over-budget", message.tokens)
        )
        items.extend(_block_items(block, fits))
    return blocks, items, used


def _block_items(block: ContextBlock, block_fits: bool) -> list[ReportItem]:
    """The candidates inside a block (facts, memories, similar messages): each in or out, and why.

    An item dict carries `kind`, `id`, optionally `included` (False when it did not fit the
    block's own budget, e.g. a fact beyond `max_injection_tokens`) and its scores."""
    out = []
    for item in block.items:
        included = block_fits and bool(item.get("included", True))
        reason = None if included else "over-budget"
        scores = {k: v for k, v in item.items() if k not in ("kind", "id", "included")}
        out.append(ReportItem(str(item["kind"]), item["id"], included, block.section, reason, score=scores or None))
    return out


def report_order(item: ReportItem, names: Sequence[str]) -> tuple[int, int]:
    """Blocks first in their order, each followed by its candidates; then messages oldest first."""
    if item.kind == "block" or (item.section is not None and item.section not in MESSAGE_SECTIONS):
        section = str(item.id) if item.kind == "block" else str(item.section)
        return (0, 2 * (names.index(section) if section in names else len(names)) + (item.kind != "block"))
    return (1, int(item.id) if isinstance(item.id, int) else 0)


def insert_recalled(blocks: list[ContextMessage], recalled: ContextMessage | None) -> None:
    """The recalled past goes after the facts and long-term memories, before the caller's
    blocks and observations."""
    if recalled is not None:
        blocks.insert(sum(1 for b in blocks if b.section in ("memory", "long_term")), recalled)

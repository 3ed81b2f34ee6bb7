"""What an import from another memory system did: what it stored, what an earlier run of the same
file had stored already (skipped), and what of the file recall has no place for (`unmapped`),
each counted. `recall import mem0|zep|letta` prints it; the Python functions return it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: The kinds of record an import writes, in the order a report names them.
KINDS = ("humans", "agents", "messages", "memories", "facts")


@dataclass
class ImportReport:
    """`stored`, `skipped`, `updated` and `removed` count records by kind (KINDS): new, imported
    before, changed in the file since, and gone from it since (a part of a Letta block);
    `unmapped` counts what had no equivalent in recall, by a line saying what it is and why it
    was left out."""

    system: str
    file: str
    worlds: list[str] = field(default_factory=list)
    stored: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    updated: Counter[str] = field(default_factory=Counter)
    removed: Counter[str] = field(default_factory=Counter)
    unmapped: Counter[str] = field(default_factory=Counter)

    def leave_out(self, what: str, count: int = 1) -> None:
        """Count something of the file that recall keeps nowhere (`what` says what and why)."""
        if count:
            self.unmapped[what] += count

    def to_dict(self) -> dict[str, Any]:
        def ordered(counts: Counter[str]) -> dict[str, int]:
            return {kind: counts[kind] for kind in KINDS if counts[kind]}

        return {
            "system": self.system,
            "file": self.file,
            "worlds": list(self.worlds),
            "stored": ordered(self.stored),
            "skipped": ordered(self.skipped),
            "updated": ordered(self.updated),
            "removed": ordered(self.removed),
            "unmapped": dict(sorted(self.unmapped.items())),
        }

    def lines(self) -> list[str]:
        """The report for people: one line of what was stored, then what was not."""
        worlds = ", ".join(self.worlds) or "no world"
        lines = [f"imported from {self.system} ({self.file}) into {worlds}: {_counts(self.stored) or 'nothing new'}"]
        if any(self.updated.values()):
            lines.append(f"updated (changed in the file since an earlier import): {_counts(self.updated)}")
        if any(self.removed.values()):
            lines.append(f"removed (gone from the file since an earlier import): {_counts(self.removed)}")
        if any(self.skipped.values()):
            lines.append(f"already imported before, skipped: {_counts(self.skipped)}")
        if self.unmapped:
            lines.append("no equivalent in recall, not imported:")
            lines += [f"  {count} × {what}" for what, count in sorted(self.unmapped.items())]
        return lines


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{counts[kind]} {kind}" for kind in KINDS if counts[kind])

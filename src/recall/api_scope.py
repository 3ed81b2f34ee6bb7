"""`Scope`: the facts and summary sections of one scope (`user:ID`, `world:ID` or
`agent:WORLD/AGENT`), as `Recall.scope`, `World.facts` and `Agent.facts` return it. It sits below
the other handles (`api.py` re-exports it) because each of them makes one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recall.app.service import RecallService
from recall.core.facts import Fact, NewFact
from recall.off_loop import off_loop


class Scope:
    """A scope's facts and summary sections (spec §4)."""

    def __init__(self, service: RecallService, scope: str, tenant: str = "") -> None:
        self.service = service
        self.id = scope
        self.tenant = tenant

    def __repr__(self) -> str:
        return f"Scope({self.id!r})"

    def add(
        self,
        content: str,
        *,
        category: str = "knowledge",
        confidence: float = 1.0,
        source: str = "manual",
        avoid: str | None = None,
    ) -> Fact:
        return self.service.facts.add_facts(
            self.id, [NewFact(content, category, confidence, source, avoid)], self.tenant
        )[0]

    def list(self) -> list[Fact]:
        return self.service.facts.list_facts(self.id, self.tenant)

    def get(self, fact_id: int) -> Fact:
        return self.service.facts.get_fact(self.id, fact_id, self.tenant)

    def update(self, /, fact_id: int, **changes: Any) -> Fact:
        """Change some of content, category, confidence, source, avoid."""
        return self.service.facts.update_fact(self.id, fact_id, changes, self.tenant)

    def delete(self, fact_id: int) -> None:
        self.service.facts.delete_fact(self.id, fact_id, self.tenant)

    def clear(self) -> int:
        """Delete every fact and section of the scope; returns how many facts went."""
        return self.service.facts.clear_facts(self.id, self.tenant)

    @property
    def sections(self) -> dict[str, str]:
        return self.service.facts.sections(self.id, self.tenant)

    def set_sections(self, /, **sections: str) -> dict[str, str]:
        """e.g. `set_sections(work_context="…", top_of_mind="…")`; an empty text removes one."""
        return self.service.facts.set_sections(self.id, sections, self.tenant)

    def export(self) -> dict[str, Any]:
        return self.service.facts.export_facts(self.id, self.tenant)

    def import_facts(self, data: Mapping[str, Any], *, replace: bool = False) -> dict[str, int]:
        return self.service.facts.import_facts(self.id, data, replace, self.tenant)

    # Coroutine forms for asyncio and trio programs (`recall.off_loop`).
    aadd = off_loop(add)
    alist = off_loop(list)
    aget = off_loop(get)
    aupdate = off_loop(update)
    adelete = off_loop(delete)
    aclear = off_loop(clear)
    aset_sections = off_loop(set_sections)
    aexport = off_loop(export)
    aimport_facts = off_loop(import_facts)

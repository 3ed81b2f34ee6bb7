"""Facts and their scope's summary sections (spec §4): add, change, list, export and import them,
keeping the search index in step.

Scopes are checked against the caller's tenant: a world or agent scope must name a world of that
tenant, so one tenant never reads another's facts (`gate.Gate.scope` decides the tenant).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recall.app.call_writer import CallWriter
from recall.app.worlds import Worlds
from recall.core.extraction_plan import FactChanges
from recall.core.facts import Fact, NewFact, parse_scope, validate_new_fact, validate_sections
from recall.errors import InvalidInputError, UnknownFactError
from recall.limits import check_time
from recall.store.base import Store
from recall.store.records import FactWrite

if TYPE_CHECKING:
    from recall.search.index import SearchIndex

EXPORT_FORMAT = "recall.facts/1"


def _same(text: str) -> str:
    return " ".join(text.lower().split())


def _space(scope: str) -> tuple[str, str]:
    """(space, owner) of a fact scope in the search index: a world's space is its id in its
    tenant, as for its messages and memories."""
    kind, _, rest = scope.partition(":")
    if kind == "user":
        return scope, ""
    world_id, _, agent_id = rest.partition("/")
    return world_id, agent_id


@dataclass(frozen=True, eq=False)
class Facts:
    """The facts and sections of a scope ('user:ID', 'world:ID', 'agent:WORLD/AGENT') in a tenant."""

    store: Store
    worlds: Worlds
    index: SearchIndex | None = None
    #: The recorded calls' writer: a deleted fact's text leaves their copies too.
    calls: CallWriter | None = None

    def scope(self, scope: object, tenant: str = "") -> str:
        """The canonical scope, after checking a world or agent scope names a world (and agent)
        of `tenant`; another tenant's world is reported as unknown, never as forbidden."""
        canonical = parse_scope(scope)
        kind, _, rest = canonical.partition(":")
        if kind == "user":
            return canonical
        world_id, _, agent_id = rest.partition("/")
        world = self.worlds.resolve_world(world_id, tenant)
        if kind == "world":
            return f"world:{world.id.lower()}"
        return f"agent:{world.id.lower()}/{self.worlds.get_agent(world.key, agent_id).id.lower()}"

    # -- facts ----------------------------------------------------------------------------

    def list_facts(self, scope: str, tenant: str = "") -> list[Fact]:
        return self.store.list_facts(tenant, self.scope(scope, tenant))

    def get_fact(self, scope: str, fact_id: int, tenant: str = "") -> Fact:
        canonical = self.scope(scope, tenant)
        fact = self.store.get_fact(tenant, canonical, fact_id) if isinstance(fact_id, int) else None
        if fact is None:
            raise UnknownFactError(canonical, fact_id)
        return fact

    def add_facts(self, scope: str, facts: Sequence[NewFact | Mapping[str, Any]], tenant: str = "") -> list[Fact]:
        canonical = self.scope(scope, tenant)
        checked = [validate_new_fact(f) for f in facts]
        written = self.store.change_facts(tenant, canonical, datetime.now(UTC), add=checked)
        self._index(tenant, written.added)
        return list(written.added)

    def add_dated_facts(self, scope: str, facts: Sequence[tuple[NewFact, datetime]], tenant: str = "") -> list[Fact]:
        """Facts known since a time of their own (an importer's: when Zep learnt them), each
        stored with that time as its created_at and updated_at. All are checked first (a bad one
        stores nothing); those of one time are written in one transaction. Their vectors are left
        to the background indexer, as `import_facts` leaves them."""
        canonical = self.scope(scope, tenant)
        checked: dict[datetime, list[NewFact]] = {}
        for i, (fact, at) in enumerate(facts):
            try:
                checked.setdefault(check_time("created_at", at), []).append(validate_new_fact(fact))
            except InvalidInputError as e:
                raise InvalidInputError(f"facts[{i}].{e.field}", e.problem) from None
        added: list[Fact] = []
        for at, group in sorted(checked.items()):
            added += self.store.change_facts(tenant, canonical, at, add=group).added
        self._index(tenant, added, embed=False)
        return added

    def update_fact(self, scope: str, fact_id: int, changes: Mapping[str, Any], tenant: str = "") -> Fact:
        current = self.get_fact(scope, fact_id, tenant)
        merged = {
            "content": current.content,
            "category": current.category,
            "confidence": current.confidence,
            "source": current.source,
            "avoid": current.avoid,
            **changes,
        }
        new = validate_new_fact(merged)
        written = self.store.change_facts(tenant, current.scope, datetime.now(UTC), update={current.id: new})
        if not written.updated:  # deleted meanwhile
            raise UnknownFactError(current.scope, fact_id)
        self._index(tenant, written.updated)
        return written.updated[0]

    def delete_fact(self, scope: str, fact_id: int, tenant: str = "") -> None:
        current = self.get_fact(scope, fact_id, tenant)
        self._change(tenant, current.scope, remove_ids=[current.id])

    def clear_facts(self, scope: str, tenant: str = "") -> int:
        return len(self._change(tenant, self.scope(scope, tenant), clear=True).removed)

    def _change(self, tenant: str, scope: str, **changes: Any) -> FactWrite:
        """`store.change_facts` now, the removed facts out of the search index. When facts may
        go, no recorded call keeps a copy of their text either: a fact may be quoted in any
        world of the tenant, so every record of the tenant's with a copy is looked at."""
        removing = bool(changes.get("clear") or changes.get("remove_ids"))
        scrubbing = self.calls.scrubbing() if removing and self.calls is not None else nullcontext()
        with scrubbing as scrub:

            def then(db: Any, removed: Sequence[int]) -> None:
                if scrub is not None:
                    scrub.forget_copies(db, None, [("fact", i) for i in removed], tenant)

            written = self.store.change_facts(tenant, scope, datetime.now(UTC), then=then, **changes)
        self._unindex(written.removed)
        return written

    def fact_scopes(self, tenant: str = "") -> list[tuple[str, int]]:
        return self.store.list_fact_scopes(tenant)

    # -- sections -------------------------------------------------------------------------

    def sections(self, scope: str, tenant: str = "") -> dict[str, str]:
        return self.store.get_sections(tenant, self.scope(scope, tenant))

    def set_sections(self, scope: str, sections: Mapping[str, Any], tenant: str = "") -> dict[str, str]:
        """Replace the named sections; an empty text removes one."""
        canonical = self.scope(scope, tenant)
        if not isinstance(sections, Mapping):
            raise InvalidInputError("sections", "must be an object of section name to text")
        checked = validate_sections(sections)
        self.store.change_facts(tenant, canonical, datetime.now(UTC), sections=checked)
        return self.store.get_sections(tenant, canonical)

    # -- export and import ----------------------------------------------------------------

    def export_facts(self, scope: str, tenant: str = "") -> dict[str, Any]:
        canonical = self.scope(scope, tenant)
        return {
            "format": EXPORT_FORMAT,
            "scope": canonical,
            "exported_at": datetime.now(UTC).isoformat(),
            "sections": self.store.get_sections(tenant, canonical),
            "facts": [
                {k: v for k, v in f.to_dict().items() if k not in ("id", "scope")}
                for f in self.store.list_facts(tenant, canonical)
            ],
        }

    def import_facts(
        self, scope: str, data: Mapping[str, Any], replace: bool = False, tenant: str = ""
    ) -> dict[str, int]:
        """Add the facts of an export (skipping case-insensitive duplicates of facts already
        there) and its sections; `replace` clears the scope first. All or nothing."""
        canonical = self.scope(scope, tenant)
        if not isinstance(data, Mapping) or not isinstance(data.get("facts", []), list):
            raise InvalidInputError("facts", "an import is an object with a list of facts (as `export` writes)")
        checked = []
        for i, raw in enumerate(data.get("facts", [])):
            if not isinstance(raw, Mapping):
                raise InvalidInputError(f"facts[{i}]", "must be an object")
            fields = {k: raw[k] for k in ("content", "category", "confidence", "source", "avoid") if k in raw}
            try:
                checked.append(validate_new_fact(fields))
            except InvalidInputError as e:
                raise InvalidInputError(f"facts[{i}].{e.field}", e.problem) from None
        sections = data.get("sections") or {}
        if not isinstance(sections, Mapping):
            raise InvalidInputError("sections", "must be an object of section name to text")
        checked_sections = validate_sections(sections)
        seen = set() if replace else {_same(f.content) for f in self.store.list_facts(tenant, canonical)}
        fresh = []
        for fact in checked:
            if _same(fact.content) not in seen:
                seen.add(_same(fact.content))
                fresh.append(fact)
        written = self._change(tenant, canonical, add=fresh, sections=checked_sections, clear=replace)
        self._index(tenant, written.added, embed=False)
        return {"added": len(written.added), "skipped": len(checked) - len(fresh), "removed": len(written.removed)}

    # -- what extraction reads and writes -------------------------------------------------

    def current(self, tenant: str, scope: str) -> tuple[list[Fact], dict[str, str]]:
        """A canonical scope's facts and sections, as an extraction starts from them."""
        return self.store.list_facts(tenant, scope), self.store.get_sections(tenant, scope)

    def apply_changes(self, tenant: str, scope: str, changes: FactChanges) -> bool:
        """Store what an extraction decided for a canonical scope; False when nothing was
        stored because a message it was read from is gone (erased while the model ran)."""
        written = self._change(
            tenant,
            scope,
            add=changes.add,
            remove_ids=changes.remove_ids,
            sections=changes.sections or None,
            sources=changes.sources,
        )
        self._index(tenant, written.added)
        return not written.stale

    # -- the search index -----------------------------------------------------------------

    def _index(self, tenant: str, facts: Iterable[Fact], *, embed: bool = True) -> None:
        """Write facts' search items; with `embed`, their vectors too before this returns (an
        import of many leaves them to the background indexer)."""
        if self.index is None:
            return
        from recall.search.base import IndexItem

        items = []
        for fact in facts:
            space, owner = _space(fact.scope)
            items.append(
                IndexItem(
                    tenant=tenant,
                    space=space,
                    kind="fact",
                    source_id=fact.id,
                    owner=owner,
                    text=fact.content,
                    created_at=fact.updated_at,
                )
            )
        if items:
            from recall.search.embed_now import embed_now

            self.index.add(items)
            if embed:  # found by its meaning once the write returns
                embed_now(self.index, "fact", [item.source_id for item in items])

    def _unindex(self, ids: Sequence[int]) -> None:
        if self.index is not None and ids:
            self.index.remove("fact", ids)

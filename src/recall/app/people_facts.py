"""The facts of a world's people in a search of that world.

A world's search index space holds its messages, its memories and the facts of its world and
agent scopes; a human's facts live in its tenant's `user:ID` space, since a person is the same
person in every world of the tenant (and stays when a world goes). A search of a world also
searches the facts of the world's humans, so "what do we know about Maria's tea?" finds
`user:maria`'s preference beside the messages that mention it; the hits are ranked with the
world's own by score (a relevance, 0..1, comparable across spaces).

Each person's space is one index search (measured 3-6 ms on SQLite, so 16 people add ~60-90 ms
to a 20 ms search), hence at most MAX_PEOPLE of them: a world of many people searches the facts
of those whose facts share a word with the query. One search over many spaces would lift the
bound; the index searches one space at a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from recall.app.worlds import Worlds
from recall.store.records import WorldRecord

if TYPE_CHECKING:
    from recall.search.base import SearchHit

#: The most people whose facts one search of a world looks in (one index search each).
MAX_PEOPLE = 16
#: Scopes one read of their facts names at most.
SCOPES_PER_READ = 500
_WORD = re.compile(r"\w+")


def people_scopes(worlds: Worlds, world: WorldRecord, query: str) -> list[str]:
    """The `user:ID` scopes of the world's humans whose facts a search of it looks in: those
    with any facts, all of them up to MAX_PEOPLE, else (a world of many people) the first
    MAX_PEOPLE of those whose facts share a word with the query. Each scope searched is one
    index search (a few ms), so a world of thousands of customers never costs thousands."""
    scopes = [f"user:{h.id.lower()}" for h in worlds.humans(world.key)]
    facts = []
    for start in range(0, len(scopes), SCOPES_PER_READ):
        facts.extend(worlds.store.list_facts_in(world.tenant, scopes[start : start + SCOPES_PER_READ]))
    held = {fact.scope for fact in facts}
    with_facts = [s for s in scopes if s in held]
    if len(with_facts) <= MAX_PEOPLE:
        return with_facts
    words = _words(query)
    sharing = {fact.scope for fact in facts if words & _words(fact.content)}
    return [s for s in with_facts if s in sharing][:MAX_PEOPLE]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def with_people_facts(
    hits: Sequence[SearchHit], search_space: Callable[[str], list[SearchHit]], scopes: Sequence[str], k: int
) -> list[SearchHit]:
    """The `k` best of `hits` and the facts `search_space(scope)` finds in each of `scopes`,
    best first (a hit's score is its relevance in any space)."""
    found = list(hits)
    for scope in scopes:
        found.extend(search_space(scope))
    found.sort(key=lambda h: -h.score)
    return found[:k]


def fact_scope(space: str, owner: str) -> str:
    """The scope a fact found in `space` belongs to ('user:ID', 'agent:WORLD/AGENT' or
    'world:ID'): a user's facts have their own space; a world's space holds its world facts
    (no owner) and its agents' (owned by the agent)."""
    if space.startswith("user:"):
        return space.lower()
    return f"agent:{space.lower()}/{owner.lower()}" if owner else f"world:{space.lower()}"

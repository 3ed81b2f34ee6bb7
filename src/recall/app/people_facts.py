"""The facts of a world's people in a search of that world.

A world's search index space holds its messages, its memories and the facts of its world and
agent scopes; a human's facts live in its tenant's `user:ID` space, since a person is the same
person in every world of the tenant (and stays when a world goes). A search of a world also
searches the facts of the world's humans, so "what do we know about Maria's tea?" finds
`user:maria`'s preference beside the messages that mention it; the hits are ranked with the
world's own by score (a relevance, 0..1, comparable across spaces).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from recall.app.worlds import Worlds
from recall.store.base import WorldRecord

if TYPE_CHECKING:
    from recall.search.base import SearchHit


def people_scopes(worlds: Worlds, world: WorldRecord) -> list[str]:
    """The `user:ID` scopes of the world's humans that have any facts (only those are searched:
    a hybrid search of a space costs an embedding of the query)."""
    scopes = [f"user:{h.id.lower()}" for h in worlds.humans(world.key)]
    if not scopes:
        return []
    with_facts = {fact.scope for fact in worlds.store.list_facts_in(world.tenant, scopes)}
    return [s for s in scopes if s in with_facts]


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

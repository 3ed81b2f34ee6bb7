"""No one but the LangGraph store writes its metadata keys (`langgraph:*`), so memories an agent
forges with them cannot crowd the store's items out of a search (issue 43, point 13)."""

from __future__ import annotations

import pytest

from recall import Recall
from recall.errors import InvalidInputError
from recall.integrations.langgraph import RecallStore


def test_an_agent_cannot_forge_the_stores_metadata_keys(mem: Recall) -> None:
    store = RecallStore(mem, world="lg", create=True)
    store.put(("users",), "prefs", {"text": "Maria drinks green tea"})
    world = store.world
    world.add_agent("intruder")
    intruder = world.agent("intruder")
    forged = {"langgraph:owner": "", "langgraph:ns:0": "users", "langgraph:indexed": True}
    with pytest.raises(InvalidInputError, match="reserved") as refused:
        intruder.add_memory("Maria drinks green tea, tea, tea", **forged)
    assert refused.value.field.startswith("metadata.langgraph:")
    with pytest.raises(InvalidInputError, match="reserved"):
        world.add_memory("tea", **{"langgraph:ns:0": "users"})
    own = intruder.add_memory("a note of its own", source="chat")
    with pytest.raises(InvalidInputError, match="reserved"):
        intruder.update_memory(own, metadata=forged)
    assert [m.content for m in intruder.memories(limit=100) if m.type != "langgraph"] == ["a note of its own"]
    mem.refresh_index()
    hits = store.search(("users",), query="what does Maria drink?")
    assert [(h.key, h.value) for h in hits] == [("prefs", {"text": "Maria drinks green tea"})]

"""The Python API refuses what the HTTP API refuses: non-finite numbers, NUL, fields over their
caps (spec §8), with an InvalidInputError naming the field; a refused write stores nothing."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recall import Recall, World, limits
from recall.errors import InvalidInputError


@pytest.fixture(params=["sqlite", "postgres"])
def db_path(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "recall.db")
    return str(request.getfixturevalue("postgres_url"))


BIG = "x" * (limits.MAX_METADATA_CHARS + 1)

Write = Callable[[Recall, World], Any]

REFUSED: list[tuple[str, Write]] = [
    ("metadata.score", lambda m, w: w.post("maria", "hi", metadata={"score": math.nan})),
    ("metadata.a[0]", lambda m, w: w.post("maria", "hi", metadata={"a": [math.inf]})),
    ("metadata.a", lambda m, w: w.post("maria", "hi", metadata={"a": {"k\x00": 1}})),
    ("metadata", lambda m, w: w.post("maria", "hi", metadata={"blob": BIG})),
    ("metadata.when", lambda m, w: w.post("maria", "hi", metadata={"when": object()})),
    ("idempotency_key", lambda m, w: w.post("maria", "hi", idempotency_key="k\x00")),
    ("idempotency_key", lambda m, w: w.post("maria", "hi", idempotency_key="k" * (limits.MAX_IDEMPOTENCY_KEY + 1))),
    ("system_prompt", lambda m, w: w.add_agent("agent-c", system_prompt="be\x00evil")),
    ("knowledge", lambda m, w: w.add_agent("agent-c", knowledge="k" * (limits.MAX_PROFILE_TEXT + 1))),
    ("goals[0]", lambda m, w: w.add_agent("agent-c", goals=["g\x00"])),
    ("guidelines", lambda m, w: w.add_agent("agent-c", guidelines=["g"] * (limits.MAX_PROFILE_ITEMS + 1))),
    ("name", lambda m, w: m.create_world("other", name="n\x00")),
    ("key", lambda m, w: m.service.agent_state.remember("w", "agent-a", "k\x00", 1)),
    ("value[1]", lambda m, w: m.service.agent_state.remember("w", "agent-a", "k", [1, math.nan])),
    ("value.v", lambda m, w: m.service.agent_state.remember("w", "agent-a", "k", {"v": "\x00"})),
    ("session", lambda m, w: m.service.deliveries.check("w", "agent-a", session="s\x00")),
    ("time", lambda m, w: w.agent("agent-a").observe({"time": math.nan})),
    ("position[1]", lambda m, w: w.agent("agent-a").observe({"time": 1, "position": [0, math.inf]})),
    ("note", lambda m, w: w.agent("agent-a").observe({"time": 1, "note": "n" * (limits.MAX_OBSERVATION_TEXT + 1)})),
    ("note", lambda m, w: w.agent("agent-a").observe({"time": 1, "note": "\x00"})),
    ("collected", lambda m, w: w.agent("agent-a").observe({"time": 1, "collected": math.inf})),
    ("description", lambda m, w: w.agent("agent-a").act({"time": 1, "kind": "x", "description": "\x00"})),
    ("metadata.w", lambda m, w: w.add_memory("rule", w=math.nan)),
    ("metadata.w", lambda m, w: w.add_memory("rule", w="\x00")),
    ("source", lambda m, w: m.scope("user:maria").add("Likes tea", source="s\x00")),
    ("confidence", lambda m, w: m.scope("user:maria").add("Likes tea", confidence=math.nan)),
    ("top_of_mind", lambda m, w: m.scope("user:maria").set_sections(top_of_mind="\x00")),
]


@pytest.mark.parametrize(("field", "write"), REFUSED, ids=[f"{f}-{i}" for i, (f, _) in enumerate(REFUSED)])
def test_bad_values_are_refused_naming_the_field_and_nothing_is_stored(db_path: str, field: str, write: Write) -> None:
    with Recall(db_path) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("agent-a")
        with pytest.raises(InvalidInputError) as refused:
            write(mem, world)
        assert refused.value.field == field, refused.value
        assert [w.id for w in mem.worlds()] == ["w"]
        assert sorted(p.id for p in world.participants()) == ["agent-a", "maria"]
        assert world.messages() == []
        assert mem.service.agent_state.notes("w", "agent-a") == []
        assert mem.service.store.recent_observations("w", "agent-a", "observation", 10) == []
        assert mem.service.store.recent_observations("w", "agent-a", "action", 10) == []
        assert world.memories() == []
        assert mem.scope("user:maria").list() == []
        assert mem.scope("user:maria").sections == {}

"""MCP answers reach the official client, whose streamable HTTP transport reads at most 1 MiB of
one event (issue 43, point 10): a context at the default budget used to go out twice in one
event (structured content and the same JSON as text) and never arrived."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.types import TextContent

from recall import World
from recall.app.posting import PostRequest
from recall.server.config import ServerConfig
from recall.server.mcp_answers import MAX_ANSWER_BYTES
from tests.server.test_mcp import Served, add_people, mcp_session, serve

WORDS = [
    "invoice",
    "parcel",
    "Lyon",
    "tea",
    "meeting",
    "budget",
    "sprint",
    "garden",
    "river",
    "window",
    "ledger",
    "harbour",
]


def long_text(n: int, chars: int) -> str:
    words = itertools.cycle(WORDS[n % len(WORDS) :] + WORDS[: n % len(WORDS)])
    parts = [f"@agent-a note {n}:"]
    size = len(parts[0])
    while size < chars:
        parts.append(next(words))
        size += len(parts[-1]) + 1
    return " ".join(parts)


@pytest.fixture
def crowded(tmp_path: Path) -> Iterator[Served]:
    for served in serve(tmp_path, ServerConfig(rate_limit=0)):
        service = served.state.service
        world = World(service, service.worlds.create_world("w"))
        add_people(world)
        yield served


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_context_at_the_default_budget_arrives_once(crowded: Served) -> None:
    world = World(crowded.state.service, crowded.state.service.worlds.get_world("w"))
    world.import_messages([PostRequest("maria", long_text(n, 5_000)) for n in range(110)])
    async with mcp_session(crowded.url) as session:
        result = await session.call_tool("context", {"agent": "agent-a", "world": "w"})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    messages = result.structured_content["messages"]
    assert sum(len(m["content"]) for m in messages) > 400_000  # over half a megabyte of context
    # Sent once: the text block only says where the answer is.
    (note,) = result.content
    assert isinstance(note, TextContent) and "structured content" in note.text and len(note.text) < 200


@pytest.mark.anyio
async def test_an_answer_too_large_for_one_message_says_what_to_ask_for(crowded: Served) -> None:
    world = World(crowded.state.service, crowded.state.service.worlds.get_world("w"))
    world.import_messages([PostRequest("maria", long_text(n, 99_000)) for n in range(12)])
    async with mcp_session(crowded.url) as session:
        too_big = await session.call_tool("context", {"agent": "agent-a", "world": "w", "max_tokens": 2_000_000})
        assert too_big.is_error
        (text,) = too_big.content
        assert isinstance(text, TextContent)
        assert f"{MAX_ANSWER_BYTES:,}" in text.text and "smaller max_tokens" in text.text
        small = await session.call_tool("context", {"agent": "agent-b", "world": "w", "max_tokens": 4_000})
        assert not small.is_error and small.structured_content is not None
        (copy,) = small.content  # small answers keep the JSON text copy too
        assert isinstance(copy, TextContent) and copy.text.startswith("{")

"""`RecallInstructions` and `recall_tools` inside the real OpenAI Agents SDK, calling a local
OpenAI-compatible model over HTTP (recall's scripted server): what the model receives holds
recall's context for the current input on the first turn of a new session. And
`RecallSession.close()`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner
from agents.items import TResponseStreamEvent
from agents.models.interface import Model
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.run import RunConfig
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseCompletedEvent, ResponseOutputMessage, ResponseOutputText

from recall import Recall, World
from recall.integrations.openai_agents import RecallSession
from recall.integrations.openai_agents_context import RecallInstructions, recall_tools
from tests.llm.model_server import ModelServer, ScriptedReply, model_server_fixture

__all__ = ["model_server_fixture"]

CONFIG = RunConfig(tracing_disabled=True)


def model(server: ModelServer) -> OpenAIChatCompletionsModel:
    client = AsyncOpenAI(base_url=server.openai_url, api_key="test", max_retries=0)
    return OpenAIChatCompletionsModel(model="test-model", openai_client=client)


def system_of(body: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "system")


def session(mem: Recall, world: World, session_id: str) -> RecallSession:
    return RecallSession(mem, session_id=session_id, world=world, agent="agent-a", human="maria")


def test_the_first_turn_of_a_new_session_gets_recalls_context(
    mem: Recall, world: World, model_server: ModelServer
) -> None:
    world.post("maria", "My parcel number is 4711, it never arrived", chat="ticket-7")
    mem.scope("user:maria").add("Maria prefers e-mail over phone calls")
    world.agent("agent-a").add_memory("Parcels to Lyon go through the Villeurbanne depot", importance=8)
    s = session(mem, world, "ticket-9")
    agent = Agent(
        name="agent-a", instructions=RecallInstructions(s, "You help with parcels."), model=model(model_server)
    )
    model_server.script("It is 4711.")
    result = asyncio.run(Runner.run(agent, "what was my parcel number again?", session=s, run_config=CONFIG))
    assert result.final_output == "It is 4711."
    [body] = model_server.bodies("/v1/chat/completions")
    seen = system_of(body)
    assert seen.startswith("You help with parcels.")
    assert "My parcel number is 4711" in seen
    assert "Maria prefers e-mail" in seen
    assert "Villeurbanne depot" in seen
    assert body["messages"][-1] == {"role": "user", "content": "what was my parcel number again?"}
    # The session posted the input once; the context was recorded as agent-a's model call.
    assert [(m.sender, m.content) for m in world.messages("ticket-9")] == [
        ("maria", "what was my parcel number again?"),
        ("agent-a", "It is 4711."),
    ]
    [call] = world.agent("agent-a").calls()
    assert call.chat_id == "ticket-9" and call.trigger_id == world.messages("ticket-9")[0].id


def test_without_a_session_in_the_run_the_input_is_posted_first(
    mem: Recall, world: World, model_server: ModelServer
) -> None:
    world.post("maria", "My parcel number is 4711", chat="older")
    s = session(mem, world, "t2")
    agent = Agent(name="agent-a", instructions=RecallInstructions(s), model=model(model_server))
    model_server.script("4711.")
    asyncio.run(Runner.run(agent, "my parcel number?", run_config=CONFIG))
    assert "4711" in system_of(model_server.bodies()[0])
    assert [m.content for m in world.messages("t2")] == ["my parcel number?"]


def test_the_memory_tools_search_and_remember(mem: Recall, world: World, model_server: ModelServer) -> None:
    world.post("maria", "My parcel number is 4711", chat="older")
    s = session(mem, world, "t3")
    agent = Agent(name="agent-a", instructions=RecallInstructions(s), model=model(model_server), tools=recall_tools(s))
    model_server.script(
        ScriptedReply(tool_calls=(("search_memory", {"query": "parcel number"}),)),
        ScriptedReply(tool_calls=(("remember", {"memory": "Maria is a VIP customer"}),)),
        "Done.",
    )
    asyncio.run(Runner.run(agent, "Note that I am a VIP", session=s, run_config=CONFIG))
    bodies = model_server.bodies()
    assert {t["function"]["name"] for t in bodies[0]["tools"]} == {"search_memory", "remember"}
    tool_results = [m["content"] for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert "My parcel number is 4711" in tool_results[0] and tool_results[1].startswith("Remembered")
    # What `remember` kept reaches agent-a's context in another session.
    s2 = session(mem, world, "t4")
    agent2 = Agent(name="agent-a", instructions=RecallInstructions(s2), model=model(model_server))
    model_server.script("Yes.")
    asyncio.run(Runner.run(agent2, "Am I a VIP customer?", session=s2, run_config=CONFIG))
    assert "Maria is a VIP customer" in system_of(model_server.bodies()[-1])


def test_close_like_sqlite_session(mem: Recall, world: World, tmp_path: Path) -> None:
    s = session(mem, world, "c1")
    asyncio.run(s.add_items([{"role": "user", "content": "hi"}]))
    s.close()
    s.close()  # harmless
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(s.get_items())
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(s.add_items([{"role": "user", "content": "again"}]))
    assert [m.content for m in world.messages("c1")] == ["hi"]  # the caller's Recall stays open
    # Given a path, the session opens its own Recall, and close() closes it.
    db = tmp_path / "own.db"
    own = RecallSession(db, session_id="c2", world="w2", agent="helper", create=True)
    asyncio.run(own.add_items([{"role": "user", "content": "kept"}]))
    own.close()
    with pytest.raises(Exception, match="closed"):  # the store it opened is closed (sqlite3's error)
        own.mem.worlds()
    with Recall(db) as reopened:
        assert [m.content for m in reopened.world("w2").messages("c2")] == ["kept"]


class StreamingModel(Model):
    """A local model that streams one answer and records its instructions."""

    def __init__(self) -> None:
        self.instructions: list[str | None] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream_response(  # type: ignore[override]
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[TResponseStreamEvent]:
        self.instructions.append(system_instructions)
        message = ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="It is 4711.", annotations=[])],
        )
        response = Response(
            id="resp_1",
            created_at=0,
            model="local",
            object="response",
            output=[message],
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
        )
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=0)


def test_a_streamed_run_gets_the_context_and_posts_its_input_once(mem: Recall, world: World) -> None:
    # A streamed run saves its input after the model call: the instructions post it first, and
    # the session does not post it again.
    world.post("maria", "My parcel number is 4711", chat="older")
    s = session(mem, world, "st")
    local = StreamingModel()
    agent = Agent(name="agent-a", instructions=RecallInstructions(s), model=local)
    question: Any = [{"role": "user", "content": [{"type": "input_text", "text": "what was my parcel number again?"}]}]

    async def go() -> Any:
        result = Runner.run_streamed(agent, question, session=s, run_config=CONFIG)
        async for _ in result.stream_events():
            pass
        return result.final_output

    assert asyncio.run(go()) == "It is 4711."
    assert "My parcel number is 4711" in (local.instructions[0] or "")
    assert [(m.sender, m.content) for m in world.messages("st")] == [
        ("maria", "what was my parcel number again?"),
        ("agent-a", "It is 4711."),
    ]
    items = asyncio.run(s.get_items())
    assert items[0] == question[0] and len(items) == 2  # the item exactly as the run gave it

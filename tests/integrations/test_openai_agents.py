"""`RecallSession` against the real OpenAI Agents SDK: its `Session` protocol, and `Runner.run`
with a local model (no network)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

from agents import Agent, Runner, function_tool
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.memory import Session, SessionSettings
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.run import RunConfig
from agents.tool import Tool
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from recall import Recall, World
from recall.integrations.openai_agents import RecallSession

T = TypeVar("T")

#: One of each kind of item, in the SDK's JSON form.
ITEMS: list[Any] = [
    {"role": "user", "content": "What's the weather in Lyon?"},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "and this picture?"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
        ],
    },
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Lyon"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21°C"},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Sunny in Lyon, 21°C.", "annotations": [], "logprobs": []}],
    },
    {"role": "system", "content": "Be brief."},
    {"type": "function_call_output", "call_id": "call_2", "output": ""},
]


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def session(mem: Recall, world: World, session_id: str = "s1", **options: Any) -> RecallSession:
    return RecallSession(mem, session_id=session_id, world=world, agent="agent-a", human="maria", **options)


def test_it_is_an_sdk_session(mem: Recall, world: World) -> None:
    s = session(mem, world)
    assert isinstance(s, Session)
    assert s.session_id == "s1" and s.session_settings is None


def test_items_round_trip_losslessly(mem: Recall, world: World) -> None:
    s = session(mem, world)
    run(s.add_items(copy.deepcopy(ITEMS)))
    assert run(s.get_items()) == ITEMS
    # A new handle (or another process) reads the same session.
    assert run(session(mem, world).get_items()) == ITEMS
    # Who posted what: the human, the agent, its tool call and result; system for the rest.
    posted = [(m.sender, m.content) for m in world.messages("s1")]
    assert posted == [
        ("maria", "What's the weather in Lyon?"),
        ("maria", "and this picture?"),
        ("system", "[reasoning]"),
        ("agent-a", ""),
        ("system", "sunny, 21°C"),
        ("agent-a", "Sunny in Lyon, 21°C."),
        ("system", "Be brief."),
        ("system", "(no output)"),
    ]
    # agent-a's recall context shows the conversation with its tool call and the call's result.
    openai = world.agent("agent-a").context("s1").openai()
    assert [m["role"] for m in openai] == ["system", "user", "user", "assistant", "tool", "assistant", "tool"]
    assert openai[3]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}}
    ]
    assert openai[4]["tool_call_id"] == "call_1"
    # The session's posts are not left unread in agent-a's inbox (the SDK answered them).
    assert world.agent("agent-a").inbox() == []


def test_get_items_limit_and_session_settings(mem: Recall, world: World) -> None:
    s = session(mem, world)
    run(s.add_items([{"role": "user", "content": f"m{n}"} for n in range(5)]))
    assert [i["content"] for i in run(s.get_items(limit=2))] == ["m3", "m4"]  # type: ignore[typeddict-item]
    assert run(s.get_items(limit=0)) == []
    assert len(run(s.get_items(limit=50))) == 5
    limited = session(mem, world, session_settings=SessionSettings(limit=3))
    assert [i["content"] for i in run(limited.get_items())] == ["m2", "m3", "m4"]  # type: ignore[typeddict-item]
    assert len(run(limited.get_items(limit=4))) == 4
    assert len(run(session(mem, world, session_settings={"limit": 1}).get_items())) == 1


def test_pop_item_takes_the_newest_first(mem: Recall, world: World) -> None:
    s = session(mem, world)
    run(s.add_items([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]))
    run(s.add_items([{"role": "user", "content": "three"}]))
    assert run(s.pop_item()) == {"role": "user", "content": "three"}
    assert run(s.pop_item()) == {"role": "assistant", "content": "two"}
    assert run(s.get_items()) == [{"role": "user", "content": "one"}]
    run(s.add_items([{"role": "user", "content": "four"}]))
    assert run(session(mem, world).get_items()) == [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "four"},
    ]
    assert run(s.pop_item()) == {"role": "user", "content": "four"}
    assert run(s.pop_item()) == {"role": "user", "content": "one"}
    assert run(s.pop_item()) is None
    # Popped items stay in recall (it cannot delete messages yet).
    assert [m.content for m in world.messages("s1")] == ["one", "two", "three", "four"]


def test_clear_session_and_sessions_are_isolated(mem: Recall, world: World) -> None:
    s1, s2 = session(mem, world, "s1"), session(mem, world, "s2")
    run(s1.add_items([{"role": "user", "content": "for s1"}]))
    run(s2.add_items([{"role": "user", "content": "for s2"}]))
    assert run(s1.get_items()) == [{"role": "user", "content": "for s1"}]
    run(s1.clear_session())
    assert run(s1.get_items()) == []
    assert run(session(mem, world, "s1").get_items()) == []
    assert run(s2.get_items()) == [{"role": "user", "content": "for s2"}]
    run(s1.add_items([{"role": "user", "content": "after clear"}]))
    assert run(s1.get_items()) == [{"role": "user", "content": "after clear"}]
    assert run(s1.pop_item()) == {"role": "user", "content": "after clear"}
    assert run(s1.pop_item()) is None


def test_other_messages_of_the_chat_are_not_items(mem: Recall, world: World) -> None:
    s = session(mem, world)
    run(s.add_items([{"role": "user", "content": "hello"}]))
    world.post("maria", "@agent-b something else", chat="s1")
    assert run(s.get_items()) == [{"role": "user", "content": "hello"}]


def test_a_session_id_that_is_not_a_chat_id(mem: Recall, world: World) -> None:
    s = session(mem, world, "maria@example.com/2025-05-08 #1")
    run(s.add_items([{"role": "user", "content": "hi"}]))
    assert s.chat.startswith("s-") and [m.content for m in world.messages(s.chat)] == ["hi"]
    assert run(session(mem, world, "maria@example.com/2025-05-08 #1").get_items()) == [
        {"role": "user", "content": "hi"}
    ]
    assert run(session(mem, world, "maria@example.com/2025-05-08 #2").get_items()) == []


class ScriptedModel(Model):
    """A local model: asks for the weather tool once, then answers from the tool's output.
    Records the input of every call."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        items: list[Any] = [input] if isinstance(input, str) else list(input)
        self.inputs.append(copy.deepcopy(items))
        n = len(self.inputs)
        last = items[-1]
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            text = f"The weather: {last['output']}"
            out: Any = ResponseOutputMessage(
                id=f"msg_{n}",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
            )
        else:
            out = ResponseFunctionToolCall(
                id=f"fc_{n}",
                type="function_call",
                call_id=f"call_{n}",
                name="get_weather",
                arguments='{"city": "Lyon"}',
            )
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_runner_run_keeps_the_conversation_in_the_session(mem: Recall, world: World) -> None:
    model = ScriptedModel()
    agent = Agent(name="agent-a", instructions="You tell the weather.", model=model, tools=[get_weather])
    config = RunConfig(tracing_disabled=True)
    s = session(mem, world, "weather")

    first = run(Runner.run(agent, "Weather in Lyon?", session=s, run_config=config))
    assert first.final_output == "The weather: sunny in Lyon"
    items = run(s.get_items())
    assert [i.get("type", "message") for i in items] == ["message", "function_call", "function_call_output", "message"]

    second = run(Runner.run(agent, "And tomorrow?", session=s, run_config=config))
    assert second.final_output == "The weather: sunny in Lyon"
    # The second run's first model call got the first run's items back from recall.
    replayed = model.inputs[2]
    assert replayed[:4] == items
    assert replayed[4]["content"] == "And tomorrow?"
    # recall holds the conversation: the human's questions, agent-a's calls and answers.
    senders = [m.sender for m in world.messages("weather")]
    assert senders == ["maria", "agent-a", "system", "agent-a"] * 2


def test_the_newest_items_are_read_from_the_end_of_a_long_session(mem: Recall, world: World, monkeypatch: Any) -> None:
    # get_items(limit=n), pop_item and clear_session read about n rows, however long the session.
    s = session(mem, world)
    run(s.add_items([{"role": "user", "content": f"m{n}"} for n in range(600)]))
    store = mem.service.store
    read: list[int] = []
    real = store.newest_messages

    def counted(*args: Any, **kwargs: Any) -> Any:
        rows = real(*args, **kwargs)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(store, "newest_messages", counted)
    assert [i["content"] for i in run(s.get_items(limit=3))] == ["m597", "m598", "m599"]  # type: ignore[typeddict-item]
    assert 0 < sum(read) <= 32  # one page from the end
    read.clear()
    assert run(s.pop_item()) == {"role": "user", "content": "m599"}
    assert run(s.pop_item()) == {"role": "user", "content": "m598"}  # skips the popped one
    assert 0 < sum(read) <= 64
    read.clear()
    run(s.clear_session())
    assert 0 < sum(read) <= 32 and run(s.get_items()) == []
    assert len(run(s.get_items(limit=-1))) == 0

"""`RecallContext` inside a real LangChain chain: the recalled past, facts and memories reach the
model for the current input, on the first turn of a new session."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.runnables.history import RunnableWithMessageHistory

from recall import InvalidInputError, Recall, World
from recall.integrations.langchain import RecallChatMessageHistory
from recall.integrations.langchain_context import RecallContext


class EchoModel:
    """A local chat model: answers with what it was asked last, and records every prompt."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def __call__(self, prompt: PromptValue) -> AIMessage:
        messages = prompt.to_messages()
        self.prompts.append(messages)
        return AIMessage(f"you said: {messages[-1].content}")


def chain(mem: Recall, world: World, model: EchoModel) -> Any:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You help."), MessagesPlaceholder("context"), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    context = RecallContext(mem, world=world, agent="agent-a", human="maria")
    return RunnableWithMessageHistory(
        RunnablePassthrough.assign(context=context) | prompt | RunnableLambda(model),
        lambda session_id: RecallChatMessageHistory(
            mem, world=world, agent="agent-a", human="maria", chat=session_id, recalled=False
        ),
        input_messages_key="input",
        history_messages_key="history",
    )


def system_text(prompt: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in prompt if isinstance(m, SystemMessage))


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_the_first_turn_of_a_new_session_gets_the_recalled_past(mem: Recall, world: World) -> None:
    world.post("maria", "My parcel number is 4711, it never arrived", chat="ticket-7")
    world.agent("agent-a").ack(world.agent("agent-a").inbox())
    mem.scope("user:maria").add("Maria prefers e-mail over phone calls")
    world.agent("agent-a").add_memory("Parcels to Lyon go through the Villeurbanne depot", importance=8)
    model = EchoModel()
    config: Any = {"configurable": {"session_id": "ticket-9"}}
    reply = chain(mem, world, model).invoke({"input": "what was my parcel number again?"}, config=config)
    assert reply.content == "you said: what was my parcel number again?"
    prompt = model.prompts[0]
    # What the model received: recall's prompt of agent-a, the facts, the memories, the recalled past.
    seen = system_text(prompt)
    assert "My parcel number is 4711" in seen
    assert "Maria prefers e-mail" in seen
    assert "Villeurbanne depot" in seen
    assert isinstance(prompt[-1], HumanMessage) and prompt[-1].content == "what was my parcel number again?"
    # The input is posted once (by the context), the reply once (by the history).
    assert [(m.sender, m.content) for m in world.messages("ticket-9")] == [
        ("maria", "what was my parcel number again?"),
        ("agent-a", "you said: what was my parcel number again?"),
    ]
    assert world.agent("agent-a").inbox() == []


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_the_context_follows_the_current_input_not_the_turn_before(mem: Recall, world: World) -> None:
    world.post("maria", "The blue vase broke in transit", chat="old")
    world.post("maria", "My parcel number is 4711", chat="older")
    model = EchoModel()
    config: Any = {"configurable": {"session_id": "new"}}
    c = chain(mem, world, model)
    c.invoke({"input": "what happened to the vase?"}, config=config)
    c.invoke({"input": "and my parcel number?"}, config=config)
    assert "blue vase broke" in system_text(model.prompts[0])
    second = model.prompts[1]
    assert "My parcel number is 4711" in system_text(second)
    # The chain's history shows the first turn once, and the input is the last message.
    assert [(type(m).__name__, m.content) for m in second if not isinstance(m, SystemMessage)] == [
        ("HumanMessage", "what happened to the vase?"),
        ("AIMessage", "you said: what happened to the vase?"),
        ("HumanMessage", "and my parcel number?"),
    ]
    assert [m.content for m in world.messages("new")] == [
        "what happened to the vase?",
        "you said: what happened to the vase?",
        "and my parcel number?",
        "you said: and my parcel number?",
    ]
    # Each context is recorded as agent-a's model call, and replays as built.
    calls = world.agent("agent-a").calls()
    assert len(calls) == 2 and world.agent("agent-a").replay(calls[0].id).identical


def test_it_takes_a_string_or_messages_and_refuses_no_text(mem: Recall, world: World) -> None:
    world.post("maria", "My parcel number is 4711", chat="older")
    context = RecallContext(mem, world=world, agent="agent-a", human="maria", chat="c")
    assert "4711" in system_text(context.invoke("my parcel number?"))
    assert "4711" in system_text(context.invoke([HumanMessage("parcel number please")]))
    with pytest.raises(InvalidInputError):
        context.invoke({"question": "no input key"})
    with pytest.raises(InvalidInputError):
        context.invoke("  ")
    assert [m.content for m in world.messages("c")] == ["my parcel number?", "parcel number please"]


def test_async_invoke(mem: Recall, world: World) -> None:
    import asyncio

    world.post("maria", "My parcel number is 4711", chat="older")
    context = RecallContext(mem, world=world, agent="agent-a", human="maria", chat="c")
    assert "4711" in system_text(asyncio.run(context.ainvoke({"input": "my parcel number?"})))

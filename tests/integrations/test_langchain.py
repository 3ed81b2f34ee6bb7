"""`RecallChatMessageHistory` against the real LangChain: an agent's filtered view of a chat."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from recall import InvalidInputError, Recall, World
from recall.integrations.langchain import RecallChatMessageHistory


def history(mem: Recall, world: World, agent: str = "agent-a", chat: str | None = "t1") -> RecallChatMessageHistory:
    return RecallChatMessageHistory(mem, world=world, agent=agent, human="maria", chat=chat)


def test_added_messages_come_back_exactly(mem: Recall, world: World) -> None:
    h = history(mem, world)
    assert isinstance(h, BaseChatMessageHistory)
    sent: list[BaseMessage] = [
        HumanMessage("Where is my parcel?", id="h1"),
        AIMessage("It left Paris today.", additional_kwargs={"x": [1, 2]}, response_metadata={"model": "m"}),
    ]
    h.add_messages(sent)
    assert h.messages == sent
    # Posted into the chat by the human and the agent.
    stored = world.messages("t1")
    assert [(m.sender, m.content) for m in stored] == [("maria", sent[0].content), ("agent-a", sent[1].content)]
    # ... and in agent-a's own recall context, as its conversation.
    roles = [(m["role"], m["content"]) for m in world.agent("agent-a").context("t1").openai()[1:]]
    assert roles == [("user", "Where is my parcel?"), ("assistant", "It left Paris today.")]
    # LangChain answered the human: the message is not left unread in agent-a's inbox.
    assert [m.id for m in world.agent("agent-a").inbox()] == []


def test_messages_follow_recalls_routing_rule(mem: Recall, world: World) -> None:
    h = history(mem, world)
    h.add_user_message("hi all")
    world.post("maria", "@agent-b can you check the invoice?", chat="t1")  # for agent-b, not agent-a
    world.post("agent-b", "@agent-a the invoice is fine", chat="t1")  # agent-b to agent-a
    world.post("agent-b", "noted for myself", chat="t1")  # addresses nobody: not for agent-a
    world.post("maria", "@agent-a thanks", chat="t1")
    world.post("maria", "another chat", chat="t2")
    got = [(type(m).__name__, m.content, m.name) for m in h.messages]
    assert got == [
        ("HumanMessage", "hi all", None),
        ("HumanMessage", "@agent-a the invoice is fine", "agent-b"),
        ("HumanMessage", "@agent-a thanks", "maria"),
    ]
    # agent-b's view of the same chat is its own (its recalled past, a system message first, may
    # bring back what it heard in t2: the conversation is what the routing decides).
    theirs = history(mem, world, agent="agent-b").messages
    assert [m.content for m in theirs if not isinstance(m, SystemMessage)] == [
        "hi all",
        "@agent-b can you check the invoice?",
        "@agent-a the invoice is fine",
        "noted for myself",
    ]


def test_tool_calls_and_results_round_trip(mem: Recall, world: World) -> None:
    h = history(mem, world)
    call = {"name": "track", "args": {"parcel": "P-1"}, "id": "call_1", "type": "tool_call"}
    sent: list[BaseMessage] = [
        HumanMessage("Where is P-1?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("In Lyon", tool_call_id="call_1"),
        AIMessage("It is in Lyon."),
    ]
    h.add_messages(sent)
    assert h.messages == sent
    openai = world.agent("agent-a").context("t1").openai()
    assert openai[2]["tool_calls"][0]["function"] == {"name": "track", "arguments": '{"parcel": "P-1"}'}
    assert openai[3] == {"role": "tool", "content": "In Lyon", "tool_call_id": "call_1"}


def test_messages_posted_outside_langchain_are_rebuilt(mem: Recall, world: World) -> None:
    agent = world.agent("agent-a")
    world.post("maria", "@agent-a hello", chat="t1")
    world.post(
        "agent-a",
        "",
        chat="t1",
        metadata={"tool_calls": [{"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]},
    )
    agent.post_tool_result("42", call_id="c9", chat="t1")
    world.post("agent-a", "The answer is 42", chat="t1")
    got = history(mem, world).messages
    assert got[0] == HumanMessage("@agent-a hello", name="maria")
    assert isinstance(got[1], AIMessage) and got[1].tool_calls[0]["name"] == "f"
    assert got[1].tool_calls[0]["args"] == {"a": 1} and got[1].tool_calls[0]["id"] == "c9"
    assert got[2] == ToolMessage("42", tool_call_id="c9")
    assert got[3] == AIMessage("The answer is 42")


def conversation(turns: int) -> list[BaseMessage]:
    """`turns` questions and answers, alternating."""
    out: list[BaseMessage] = []
    for n in range(turns):
        out += [HumanMessage(f"question {n}"), AIMessage(f"answer {n}")]
    return out


def test_the_history_is_the_whole_session(mem: Recall, world: World) -> None:
    """Issue point 10: the history stopped at the agent's history depth (25), so a 40-message
    session started with an AIMessage."""
    h = history(mem, world)
    sent = conversation(20)
    h.add_messages(sent)
    assert len(sent) == 40
    got = h.messages
    assert got == sent  # from its first message, and no recalled past repeats any of it
    assert isinstance(got[0], HumanMessage) and got[0].content == "question 0"
    # An agent's own history depth is for its recall contexts, not for what LangChain reads.
    world.agent("agent-a").update(history_limit=3)
    assert history(mem, world).messages == sent
    assert [m.section for m in world.agent("agent-a").context("t1").messages].count("history") == 3


def test_a_window_keeps_the_newest_messages_from_a_human_one(mem: Recall, world: World) -> None:
    sent = conversation(6)
    history(mem, world).add_messages(sent)
    # The newest 5 begin with an answer (to a question outside the window): the window opens on
    # the question after it instead.
    windowed = RecallChatMessageHistory(mem, world=world, agent="agent-a", chat="t1", window=5, recalled=False)
    assert windowed.messages == sent[-4:]
    assert RecallChatMessageHistory(mem, world=world, agent="agent-a", chat="t1", window=6).messages[-6:] == sent[-6:]
    # What the window leaves out may come back as the recalled past, one system message before.
    recalled, *rest = RecallChatMessageHistory(mem, world=world, agent="agent-a", chat="t1", window=3).messages
    assert rest == sent[-2:]
    assert isinstance(recalled, SystemMessage) and "maria: question 0" in str(recalled.content)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InvalidInputError, match="window"):
            RecallChatMessageHistory(mem, world=world, agent="agent-a", window=bad)  # type: ignore[arg-type]


def test_the_recalled_past_comes_first_as_a_system_message(mem: Recall, world: World) -> None:
    world.post("maria", "My parcel number is 4711 and it never arrived.", chat="t9")
    h = history(mem, world)
    h.add_user_message("@agent-a what was my parcel number again?")
    first, *rest = h.messages
    assert isinstance(first, SystemMessage)
    assert "maria: My parcel number is 4711 and it never arrived." in str(first.content)
    assert [m.content for m in rest] == ["@agent-a what was my parcel number again?"]
    # Once this history is cleared, nothing from before comes back through the recalled past.
    h.clear()
    h.add_user_message("@agent-a the parcel number?")
    assert [type(m) for m in h.messages] == [HumanMessage]


def test_clear_hides_the_chat_so_far_and_keeps_it_in_recall(mem: Recall, world: World) -> None:
    h = history(mem, world)
    h.add_messages([HumanMessage("old question"), AIMessage("old answer")])
    other_chat = history(mem, world, chat="t2")
    other_chat.add_user_message("elsewhere")
    h.clear()
    assert h.messages == []
    # (Its recalled past, a system message first, may hold t1's turns once the background
    # indexer has embedded them: the conversation is what the clear must not touch.)
    assert [m.content for m in other_chat.messages if not isinstance(m, SystemMessage)] == ["elsewhere"]
    # Every handle on the same agent and chat sees the cleared history.
    assert history(mem, world).messages == []
    # recall still has the messages: in the chat and in agent-a's own context.
    assert [m.content for m in world.messages("t1")] == ["old question", "old answer"]
    # (the prompt and the two turns; the recalled past may add what agent-a heard in t2)
    kept = world.agent("agent-a").context("t1").openai()
    assert [m["content"] for m in kept if m["role"] != "system"] == ["old question", "old answer"]
    h.add_messages([HumanMessage("new question"), AIMessage("new answer")])
    assert [m.content for m in h.messages] == ["new question", "new answer"]
    h.clear()
    h.clear()  # twice is harmless
    assert h.messages == []


def test_system_messages_are_stored_and_come_back(mem: Recall, world: World) -> None:
    """Issue point 10: a SystemMessage raised ValueError."""
    h = history(mem, world)
    sent: list[BaseMessage] = [
        SystemMessage("Answer in French.", id="s1"),
        HumanMessage("hi"),
        AIMessage("bonjour"),
    ]
    h.add_messages(sent)
    assert h.messages == sent
    assert history(mem, world).messages == sent  # another handle, as stored
    # Posted by `system`, kept for agent-a: neither an agent's recall context nor another
    # agent's history shows it (agent-b hears maria's public "hi" only).
    assert [(m.sender, m.content) for m in world.messages("t1")] == [
        ("system", "Answer in French."),
        ("maria", "hi"),
        ("agent-a", "bonjour"),
    ]
    assert [m["content"] for m in world.agent("agent-a").context("t1").openai()[1:]] == ["hi", "bonjour"]
    assert history(mem, world, agent="agent-b").messages == [HumanMessage("hi")]


def test_other_kinds_of_message_are_refused_all_or_none(mem: Recall, world: World) -> None:
    h = history(mem, world)
    with pytest.raises(ValueError, match="human, AI, tool and system messages"):
        h.add_messages([HumanMessage("fine"), ChatMessage("hmm", role="critic")])
    assert world.messages("t1") == []  # all or none
    with pytest.raises(ValueError, match="needs text"):
        h.add_messages([HumanMessage("   ")])
    with pytest.raises(ValueError, match="needs text"):
        h.add_messages([SystemMessage("")])


def test_another_agents_ai_message_is_a_human_message_to_this_one(mem: Recall, world: World) -> None:
    history(mem, world, agent="agent-b").add_messages([AIMessage("@agent-a the invoice is fine")])
    assert history(mem, world).messages == [HumanMessage("@agent-a the invoice is fine", name="agent-b")]


def test_a_human_and_an_agent_are_registered_with_create(mem: Recall, world: World) -> None:
    h = RecallChatMessageHistory(mem, world=world, agent="agent-c", human="tom", chat="t3", create=True)
    h.add_messages([HumanMessage("hi"), AIMessage("hello tom")])
    assert {p.id: p.kind for p in world.participants()}.items() >= {"tom": "human", "agent-c": "agent"}.items()
    assert [m.sender for m in world.messages("t3")] == ["tom", "agent-c"]
    assert [m.content for m in h.messages] == ["hi", "hello tom"]


class EchoModel:
    """A local chat model: answers with what it was asked last, and records every prompt."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def __call__(self, prompt: PromptValue) -> AIMessage:
        messages = prompt.to_messages()
        self.prompts.append(messages)
        return AIMessage(f"you said: {messages[-1].content}")


# Deprecated in langchain-core 1.x in favour of LangGraph's persistence (RecallStore), still shipped and used.
@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_runnable_with_message_history_keeps_the_conversation_in_recall(mem: Recall, world: World) -> None:
    model = EchoModel()
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are agent A."), MessagesPlaceholder("history"), ("human", "{input}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | RunnableLambda(model),
        lambda session_id: RecallChatMessageHistory(mem, world=world, agent="agent-a", human="maria", chat=session_id),
        input_messages_key="input",
        history_messages_key="history",
    )
    config: Any = {"configurable": {"session_id": "ticket-42"}}
    assert chain.invoke({"input": "my parcel is late"}, config=config).content == "you said: my parcel is late"
    world.post("maria", "@agent-b are you there?", chat="ticket-42")  # not for agent-a
    assert chain.invoke({"input": "any news?"}, config=config).content == "you said: any news?"
    second = [(type(m).__name__, m.content) for m in model.prompts[1]]
    assert second == [
        ("SystemMessage", "You are agent A."),
        ("HumanMessage", "my parcel is late"),
        ("AIMessage", "you said: my parcel is late"),
        ("HumanMessage", "any news?"),
    ]
    senders = [(m.sender, m.content) for m in world.messages("ticket-42")]
    assert senders == [
        ("maria", "my parcel is late"),
        ("agent-a", "you said: my parcel is late"),
        ("maria", "@agent-b are you there?"),
        ("maria", "any news?"),
        ("agent-a", "you said: any news?"),
    ]


def test_async_methods(mem: Recall, world: World) -> None:
    async def run() -> None:
        h = history(mem, world)
        await h.aadd_messages([HumanMessage("async hi"), AIMessage("async hello")])
        assert [m.content for m in await h.aget_messages()] == ["async hi", "async hello"]
        await h.aclear()
        assert await h.aget_messages() == []

    asyncio.run(run())


def test_a_session_id_that_is_not_a_chat_id_gets_one(mem: Recall, world: World) -> None:
    h = history(mem, world, chat="maria@example.com / 2025-05-08")
    h.add_messages([HumanMessage("hi")])
    assert h.chat is not None and h.chat.startswith("s-")
    assert [m.content for m in world.messages(h.chat)] == ["hi"]
    assert [m.content for m in history(mem, world, chat="maria@example.com / 2025-05-08").messages] == ["hi"]


def test_each_read_is_recorded_as_the_agents_model_call(mem: Recall, world: World) -> None:
    parcel = world.post("maria", "My parcel number is 4711 and it never arrived.", chat="t9")
    h = history(mem, world)
    h.add_user_message("@agent-a what was my parcel number again?")
    first = h.messages[0]
    (call,) = world.agent("agent-a").calls()
    assert (call.source, call.chat_id) == ("langchain", "t1")
    recalled = [i.id for i in world.agent("agent-a").call(call.id).items if i.section == "recalled" and i.included]
    assert recalled == [parcel.id] and "4711" in str(first.content)
    assert world.agent("agent-a").replay(call.id).identical
    quiet = RecallChatMessageHistory(mem, world=world, agent="agent-a", human="maria", chat="t1", record=False)
    assert quiet.messages[0] == first
    assert len(world.agent("agent-a").calls()) == 1

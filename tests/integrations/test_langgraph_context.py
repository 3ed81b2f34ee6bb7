"""`RecallContextNode` inside a real LangGraph graph: the turn is posted into recall and the
agent's recall context for it (facts, memories, recalled past) reaches the model node on the
first turn of a new thread."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from recall import InvalidInputError, Recall, World
from recall.integrations.langgraph_context import RecallContextNode, RecallState


class Model:
    """A local model node: records what it is given, answers with the question."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def __call__(self, state: RecallState) -> dict[str, Any]:
        prompt = [*state["recall_context"], *state["messages"]]
        self.prompts.append(prompt)
        return {"messages": [AIMessage(f"you asked: {state['messages'][-1].content}")]}


def graph(node: RecallContextNode, model: Model, checkpointer: Any = None) -> Any:
    return (
        StateGraph(RecallState)
        .add_node("recall", node)
        .add_node("model", model)
        .add_node("save", node.save)
        .add_edge(START, "recall")
        .add_edge("recall", "model")
        .add_edge("model", "save")
        .add_edge("save", END)
        .compile(checkpointer=checkpointer)
    )


def system_text(prompt: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in prompt if isinstance(m, SystemMessage))


def test_the_first_turn_of_a_new_thread_gets_recalls_context(mem: Recall, world: World) -> None:
    world.post("maria", "My parcel number is 4711, it never arrived", chat="ticket-7")
    mem.scope("user:maria").add("Maria prefers e-mail over phone calls")
    world.agent("agent-a").add_memory("Parcels to Lyon go through the Villeurbanne depot", importance=8)
    model = Model()
    g = graph(RecallContextNode(mem, world=world, agent="agent-a", human="maria"), model, InMemorySaver())
    config: Any = {"configurable": {"thread_id": "ticket-9"}}
    out = g.invoke({"messages": [("user", "what was my parcel number again?")]}, config)
    assert out["messages"][-1].content == "you asked: what was my parcel number again?"
    seen = system_text(model.prompts[0])
    assert "My parcel number is 4711" in seen
    assert "Maria prefers e-mail" in seen
    assert "Villeurbanne depot" in seen
    assert "agent A" in seen  # agent-a's system prompt in recall
    # The second turn: recall has the turn before once, and the new input.
    g.invoke({"messages": [("user", "and who sends it?")]}, config)
    assert [(m.sender, m.content) for m in world.messages("ticket-9")] == [
        ("maria", "what was my parcel number again?"),
        ("agent-a", "you asked: what was my parcel number again?"),
        ("maria", "and who sends it?"),
        ("agent-a", "you asked: and who sends it?"),
    ]
    assert [type(m) for m in model.prompts[1] if not isinstance(m, SystemMessage)] == [
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]
    assert [m.chat_id for m in world.agent("agent-a").inbox()] == ["ticket-7"]  # the graph's turns are answered
    assert len(world.agent("agent-a").calls()) == 2


def test_without_a_checkpointer_each_new_message_is_posted_once(mem: Recall, world: World) -> None:
    world.post("maria", "My parcel number is 4711", chat="older")
    model = Model()
    node = RecallContextNode(mem, world=world, agent="agent-a", human="maria", chat="c")
    g = graph(node, model)
    g.invoke({"messages": [HumanMessage("my parcel number?")]})
    assert "4711" in system_text(model.prompts[0])
    # Given only the new message, the graph posts it (recall holds the conversation before it).
    g.invoke({"messages": [HumanMessage("hello")]})
    assert [m.content for m in world.messages("c")] == [
        "my parcel number?",
        "you asked: my parcel number?",
        "hello",
        "you asked: hello",
    ]


def test_a_state_without_messages_is_refused(mem: Recall, world: World) -> None:
    node = RecallContextNode(mem, world=world, agent="agent-a", human="maria")
    with pytest.raises(InvalidInputError):
        node({"other": 1})


def test_the_memory_tools_in_a_tool_node(mem: Recall, world: World) -> None:
    from langgraph.prebuilt import ToolNode, tools_condition

    from recall.integrations.langchain_tools import recall_tools

    world.post("maria", "My parcel number is 4711", chat="older")
    tools = recall_tools(mem, world=world, agent="agent-a")
    assert [t.name for t in tools] == ["search_memory", "remember"]
    calls = iter(
        [
            AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": "parcel number"}, "id": "c1"}]),
            AIMessage("", tool_calls=[{"name": "remember", "args": {"memory": "Maria is a VIP customer"}, "id": "c2"}]),
            AIMessage("Done."),
        ]
    )
    node = RecallContextNode(mem, world=world, agent="agent-a", human="maria")
    g = (
        StateGraph(RecallState)
        .add_node("recall", node)
        .add_node("model", lambda state: {"messages": [next(calls)]})
        .add_node("tools", ToolNode(tools))
        .add_edge(START, "recall")
        .add_edge("recall", "model")
        .add_conditional_edges("model", tools_condition)
        .add_edge("tools", "model")
        .compile()
    )
    out = g.invoke({"messages": [HumanMessage("note that I am a VIP")]}, {"configurable": {"thread_id": "t"}})
    results = [m.content for m in out["messages"] if m.type == "tool"]
    assert "My parcel number is 4711" in results[0] and results[1].startswith("Remembered")
    # What `remember` kept reaches agent-a's context on a new thread.
    model = Model()
    graph(node, model).invoke(
        {"messages": [HumanMessage("Am I a VIP customer?")]}, {"configurable": {"thread_id": "u"}}
    )
    assert "Maria is a VIP customer" in system_text(model.prompts[0])


def test_a_turn_reads_the_chat_from_its_end_however_long_the_thread(
    mem: Recall, world: World, monkeypatch: Any
) -> None:
    model = Model()
    g = graph(RecallContextNode(mem, world=world, agent="agent-a", human="maria"), model, InMemorySaver())
    config: Any = {"configurable": {"thread_id": "long"}}
    for n in range(40):
        g.invoke({"messages": [HumanMessage(f"question {n}")]}, config)
    store = mem.service.store
    read: list[int] = []
    real = store.newest_messages

    def counted(*args: Any, **kwargs: Any) -> Any:
        rows = real(*args, **kwargs)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(store, "newest_messages", counted)
    g.invoke({"messages": [HumanMessage("one more")]}, config)
    assert len(world.messages("long", limit=1000)) == 82  # each message posted once
    assert 0 < sum(read) <= 64  # a first page from the end, for the node and for save

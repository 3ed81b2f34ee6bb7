"""History summaries through a real local OpenAI-compatible server: incremental, cached, and a
failure falls back to recent messages instead of breaking the context."""

from __future__ import annotations

from pathlib import Path

from recall import Recall, Settings
from recall.llm import OpenAICompatibleModel
from recall.llm.summarizer import LLMSummarizer
from tests.core.messages import conversation
from tests.llm.model_server import ModelServer, model_server_fixture  # noqa: F401  (the model_server fixture)

CHAT = "/v1/chat/completions"


def _model(server: ModelServer) -> OpenAICompatibleModel:
    return OpenAICompatibleModel("test-model", base_url=server.openai_url, max_retries=0)


def _prompt(server: ModelServer, index: int) -> str:
    return str(server.bodies(CHAT)[index]["messages"][-1]["content"])


def test_a_prefix_is_summarised_once_and_extended_incrementally(model_server: ModelServer) -> None:
    messages = conversation(*((("maria" if i % 2 else "agent-a"), f"message number {i}") for i in range(1, 13)))
    summarizer = LLMSummarizer(_model(model_server))
    model_server.script("S10", "S12")
    assert summarizer.summarize(messages[:10]) == "S10"
    assert "agent-a: message number 2" in _prompt(model_server, 0)
    assert summarizer.summarize(messages[:10]) == "S10"  # cached: no second call
    assert summarizer.summarize(messages[:12]) == "S12"
    assert summarizer.calls == 2 and len(model_server.requests) == 2
    # The second call got the cached summary and only the two new messages.
    second = _prompt(model_server, 1)
    assert "S10" in second and "message number 11" in second and "message number 12" in second
    assert "message number 10" not in second
    assert model_server.bodies(CHAT)[1]["messages"][0]["role"] == "system"


def test_a_model_failure_gives_no_summary_and_is_not_cached(model_server: ModelServer) -> None:
    messages = conversation(("maria", "hello"), ("agent-a", "hi"))
    summarizer = LLMSummarizer(_model(model_server))
    model_server.script(500, "S2")
    assert summarizer.summarize(messages) == ""
    assert summarizer.summarize(messages) == "S2"


def test_contexts_compress_long_history_with_the_configured_model(tmp_path: Path, model_server: ModelServer) -> None:
    settings = Settings(
        llm_provider="openai", llm_model="test-model", llm_base_url=model_server.openai_url, index_interval=0
    )
    with Recall(tmp_path / "r.db", settings) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.add_agent("bot", system_prompt="You help.")
        for i in range(15):
            world.post("maria", f"Note {i}: the parcel number is {1000 + i}, please keep it in mind for later.")
            world.post("bot", f"Noted parcel {1000 + i}.")
        trigger = world.post("maria", "What was the first parcel number?")
        model_server.script("Maria listed parcel numbers 1000 to 1012.")
        agent = world.agent("bot")
        budget = 400
        context = agent.context(message=trigger.id, max_tokens=budget, history_limit=100)
        openai = context.openai()
        assert openai[1] == {
            "role": "system",
            "content": "Previous conversation summary:\nMaria listed parcel numbers 1000 to 1012.",
        }
        # The newest five history messages stay verbatim; the 25 older ones were summarised.
        assert [m["content"] for m in openai[2:-1]] == [m.content for m in world.messages()[25:30]]
        assert "Note 0:" in str(model_server.bodies(CHAT)[0]["messages"][-1]["content"])
        assert context.report.total_tokens <= budget
        # The same context again: the summary comes from the cache.
        agent.context(message=trigger.id, max_tokens=budget, history_limit=100)
        assert len(model_server.requests) == 1

"""Both chat-model adapters against a real local HTTP server speaking the OpenAI and Anthropic
APIs: what they send, what they return, how failures surface, and the settings factory."""

from __future__ import annotations

import pytest

from recall.errors import InvalidInputError, ModelError
from recall.llm import AnthropicModel, ChatModel, OpenAICompatibleModel, chat_model_from_settings
from recall.llm.anthropic import JSON_INSTRUCTION, anthropic_messages
from recall.llm.base import AgentModel, ModelReply, Tool, ToolCall
from recall.llm.factory import agent_model
from recall.settings import Settings
from tests.llm.model_server import (  # noqa: F401  (the model_server fixture)
    ModelServer,
    ScriptedReply,
    model_server_fixture,
)

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"


def openai_model(server: ModelServer, **kwargs: object) -> OpenAICompatibleModel:
    return OpenAICompatibleModel("test-model", base_url=server.openai_url, api_key="sk-test", **kwargs)  # type: ignore[arg-type]


def anthropic_model(server: ModelServer, **kwargs: object) -> AnthropicModel:
    return AnthropicModel("claude-test", base_url=server.anthropic_url, api_key="ak-test", **kwargs)  # type: ignore[arg-type]


def sent_key(headers: dict[str, str]) -> str | None:
    """The API key an SDK sent: Anthropic SDKs use `x-api-key` or a bearer token, by version."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None


# -- OpenAI-compatible ----------------------------------------------------------------------


def test_openai_returns_the_reply_text_and_sends_system_first(model_server: ModelServer) -> None:
    model_server.script("Hello Maria.")
    model = openai_model(model_server)
    assert isinstance(model, ChatModel)
    assert model.name == "openai:test-model"

    reply = model.complete(
        [{"role": "user", "content": "Hi", "name": "maria"}, {"role": "assistant", "content": "Hey"}],
        system="You are terse.",
        max_tokens=50,
        temperature=0.2,
    )

    assert reply == "Hello Maria."
    [request] = model_server.requests
    assert request.path == CHAT
    assert request.headers["authorization"] == "Bearer sk-test"
    body = request.body
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi", "name": "maria"},
        {"role": "assistant", "content": "Hey"},
    ]
    assert body["max_tokens"] == 50
    assert body["temperature"] == 0.2
    assert "response_format" not in body


def test_openai_json_mode_sends_response_format(model_server: ModelServer) -> None:
    model_server.script('{"ok": true}')
    reply = openai_model(model_server).complete([{"role": "user", "content": "JSON please"}], json_output=True)
    assert reply == '{"ok": true}'
    body = model_server.bodies(CHAT)[0]
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"] == [{"role": "user", "content": "JSON please"}]  # no system prompt given


def test_openai_without_key_sends_a_placeholder(model_server: ModelServer) -> None:
    model_server.script("ok")
    OpenAICompatibleModel("llama3", base_url=model_server.openai_url).complete([{"role": "user", "content": "x"}])
    assert model_server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_openai_http_500_is_a_model_error_after_one_retry(model_server: ModelServer) -> None:
    model_server.script(500, 500)
    with pytest.raises(ModelError) as caught:
        openai_model(model_server).complete([{"role": "user", "content": "x"}])
    error = caught.value
    assert error.status == 500
    assert error.provider == "openai" and error.model == "test-model"
    message = str(error)
    assert "openai model 'test-model'" in message
    assert "HTTP 500" in message
    assert model_server.openai_url in message
    assert "scripted HTTP 500" in message  # the endpoint's own words
    assert len(model_server.requests) == 2  # max_retries=1


def test_openai_retries_once_then_succeeds(model_server: ModelServer) -> None:
    model_server.script(503, "recovered")
    assert openai_model(model_server).complete([{"role": "user", "content": "x"}]) == "recovered"
    assert len(model_server.requests) == 2


def test_openai_401_names_the_key_setting(model_server: ModelServer) -> None:
    model_server.script((401, "invalid api key"))
    with pytest.raises(ModelError) as caught:
        openai_model(model_server).complete([{"role": "user", "content": "x"}])
    assert caught.value.status == 401
    assert "llm_api_key_env" in str(caught.value)
    assert "invalid api key" in str(caught.value)


def test_openai_switches_to_max_completion_tokens_when_asked(model_server: ModelServer) -> None:
    model_server.script(
        (400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'."),
        "fine",
    )
    assert openai_model(model_server).complete([{"role": "user", "content": "x"}], max_tokens=77) == "fine"
    first, second = model_server.bodies(CHAT)
    assert first["max_tokens"] == 77 and "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 77 and "max_tokens" not in second


def test_openai_connection_refused_is_a_model_error() -> None:
    from tests.llm.model_server import start_model_server

    server = start_model_server()
    url = server.openai_url
    server.close()  # nothing listens there any more
    model = OpenAICompatibleModel("m", base_url=url, max_retries=0, timeout=5)
    with pytest.raises(ModelError) as caught:
        model.complete([{"role": "user", "content": "x"}])
    assert caught.value.status is None
    assert "could not connect" in str(caught.value)
    assert url in str(caught.value)


# -- Anthropic -------------------------------------------------------------------------------


def test_anthropic_returns_the_reply_text_and_sends_system_separately(model_server: ModelServer) -> None:
    model_server.script("Bonjour.")
    model = anthropic_model(model_server)
    assert isinstance(model, ChatModel)
    assert model.name == "anthropic:claude-test"

    reply = model.complete(
        [
            {"role": "user", "content": "Hi", "name": "maria"},
            {"role": "user", "content": "Anyone?", "name": "bob"},
            {"role": "assistant", "content": "Hello"},
            {"role": "assistant", "content": "How can I help?"},
            {"role": "user", "content": "Say it in French"},
        ],
        system="Be brief.",
        max_tokens=64,
    )

    assert reply == "Bonjour."
    [request] = model_server.requests
    assert request.path == MESSAGES
    assert sent_key(request.headers) == "ak-test"
    body = request.body
    assert body["model"] == "claude-test"
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 64
    assert "temperature" not in body
    assert body["messages"] == [
        {"role": "user", "content": "maria: Hi\n\nbob: Anyone?"},
        {"role": "assistant", "content": "Hello\n\nHow can I help?"},
        {"role": "user", "content": "Say it in French"},
    ]


def test_anthropic_json_mode_asks_in_the_system_prompt(model_server: ModelServer) -> None:
    model_server.script('{"a": 1}')
    assert anthropic_model(model_server).complete([{"role": "user", "content": "x"}], json_output=True) == '{"a": 1}'
    body = model_server.bodies(MESSAGES)[0]
    assert body["system"] == JSON_INSTRUCTION
    assert "response_format" not in body


def test_anthropic_http_500_is_a_model_error(model_server: ModelServer) -> None:
    model_server.script(500, 500)
    with pytest.raises(ModelError) as caught:
        anthropic_model(model_server).complete([{"role": "user", "content": "x"}])
    assert caught.value.status == 500
    assert caught.value.provider == "anthropic"
    assert "anthropic model 'claude-test'" in str(caught.value)
    assert "HTTP 500" in str(caught.value)
    assert len(model_server.requests) == 2


def test_anthropic_message_conversion() -> None:
    system, turns = anthropic_messages(
        [
            {"role": "system", "content": "memory block"},
            {"role": "assistant", "content": "earlier reply"},
            {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "image_url"}]},
        ],
        system="prompt",
    )
    assert system == "prompt\n\nmemory block"
    assert turns == [
        {"role": "user", "content": "(conversation continues)"},
        {"role": "assistant", "content": "earlier reply"},
        {"role": "user", "content": "part one"},
    ]


# -- the factory -----------------------------------------------------------------------------


def test_factory_without_a_model_is_none() -> None:
    assert chat_model_from_settings(Settings()) is None
    assert chat_model_from_settings(Settings(llm_provider="openai", llm_model="  ")) is None


def test_factory_rejects_an_unknown_provider() -> None:
    with pytest.raises(InvalidInputError) as caught:
        chat_model_from_settings(Settings(llm_provider="gemini", llm_model="x"))
    assert caught.value.field == "llm_provider"
    assert "'gemini'" in str(caught.value) and "openai" in str(caught.value)


def test_factory_builds_openai_with_the_key_from_the_named_variable(model_server: ModelServer) -> None:
    settings = Settings(
        llm_provider="openai", llm_model="llama3", llm_base_url=model_server.openai_url, llm_api_key_env="MY_KEY"
    )
    model = chat_model_from_settings(settings, environ={"MY_KEY": "secret-1"})
    assert isinstance(model, OpenAICompatibleModel)
    model_server.script("hi")
    assert model.complete([{"role": "user", "content": "x"}]) == "hi"
    assert model_server.requests[0].headers["authorization"] == "Bearer secret-1"
    assert model_server.bodies()[0]["model"] == "llama3"


def test_factory_builds_anthropic(model_server: ModelServer) -> None:
    settings = Settings(
        llm_provider="Anthropic", llm_model="claude-x", llm_base_url=model_server.anthropic_url, llm_api_key_env="K"
    )
    model = chat_model_from_settings(settings, environ={"K": "secret-2"})
    assert isinstance(model, AnthropicModel)
    model_server.script("ok")
    assert model.complete([{"role": "user", "content": "x"}]) == "ok"
    assert sent_key(model_server.requests[0].headers) == "secret-2"


def test_factory_defaults_to_openai_compatible_when_only_a_model_is_set() -> None:
    model = chat_model_from_settings(Settings(llm_model="gpt-4o-mini"), environ={})
    assert isinstance(model, OpenAICompatibleModel)
    assert model.name == "openai:gpt-4o-mini"


# -- conversations with tools (the agent runner's calls) -------------------------------------

WEATHER = Tool(
    "get_weather",
    "The current weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
#: A conversation after one tool round trip, in the OpenAI format recall's contexts use.
AFTER_TOOL = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Lisbon?", "name": "maria"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'}}
        ],
    },
    {"role": "tool", "content": '{"temp": 21}', "tool_call_id": "call_1"},
]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_chat_returns_tool_calls(model_server: ModelServer, provider: str) -> None:
    model: AgentModel = openai_model(model_server) if provider == "openai" else anthropic_model(model_server)
    assert isinstance(model, AgentModel)
    model_server.script(ScriptedReply(tool_calls=(("get_weather", {"city": "Lisbon"}),)))
    reply = model.chat([{"role": "user", "content": "Weather in Lisbon?"}], tools=[WEATHER])
    assert reply.text == ""
    assert [(c.name, c.parsed_arguments()) for c in reply.tool_calls] == [("get_weather", {"city": "Lisbon"})]
    assert reply.tool_calls[0].id  # the id the tool result must answer
    body = model_server.bodies()[0]
    if provider == "openai":
        assert body["tools"] == [WEATHER.openai()]
    else:
        assert body["tools"] == [
            {"name": "get_weather", "description": WEATHER.description, "input_schema": WEATHER.parameters}
        ]


def test_openai_chat_sends_the_tool_round_trip_as_it_is(model_server: ModelServer) -> None:
    model_server.script("21 degrees in Lisbon.")
    reply = openai_model(model_server).chat(AFTER_TOOL, tools=[WEATHER])
    assert reply == ModelReply("21 degrees in Lisbon.")
    assert model_server.bodies(CHAT)[0]["messages"] == AFTER_TOOL


def test_anthropic_chat_sends_tool_use_and_tool_result_blocks(model_server: ModelServer) -> None:
    model_server.script("21 degrees in Lisbon.")
    reply = anthropic_model(model_server).chat(AFTER_TOOL, tools=[WEATHER])
    assert reply == ModelReply("21 degrees in Lisbon.")
    body = model_server.bodies(MESSAGES)[0]
    assert body["system"] == "You are terse."
    assert body["messages"] == [
        {"role": "user", "content": "maria: Weather in Lisbon?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Lisbon"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": '{"temp": 21}'}]},
    ]


def test_retries_back_off_and_recover(model_server: ModelServer) -> None:
    model_server.script(503, 429, "third time lucky")
    reply = openai_model(model_server, max_retries=3).chat([{"role": "user", "content": "x"}])
    assert reply.text == "third time lucky"
    assert len(model_server.requests) == 3


def test_tool_call_arguments_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        ToolCall("c", "f", "[1, 2]").parsed_arguments()


def test_agent_model_specs() -> None:
    env = {"OPENAI_API_KEY": "sk-env", "ANTHROPIC_API_KEY": "ak-env"}
    ollama = agent_model("ollama/llama3.2", environ=env)
    # Ollama speaks the OpenAI API, but is named: its models run at Ollama's context length.
    assert isinstance(ollama, OpenAICompatibleModel) and ollama.name == "ollama:llama3.2"
    assert ollama.base_url == "http://localhost:11434/v1"
    assert agent_model("openai/gpt-4o-mini", environ=env)._client.api_key == "sk-env"
    assert agent_model("openai/x", api_key="given", environ=env)._client.api_key == "given"
    claude = agent_model("Anthropic/claude-test", base_url="http://127.0.0.1:9", environ=env)
    assert isinstance(claude, AnthropicModel) and claude.model == "claude-test"
    for bad in ("gpt-4o", "mistral/x", "openai/", ""):
        with pytest.raises(InvalidInputError, match="PROVIDER/MODEL"):
            agent_model(bad, environ=env)

"""The agent runner (spec §7): wait for messages the agent would answer, build its context, call
its model (running any tools the model asks for), post the reply threaded to the message it
answers, then queue fact extraction.

Everything an agent decides goes through recall — the would-respond rule and the turn limit
(`decide`), the count of model calls (`record_llm_call`), the context, built and recorded for the
model the runner calls and its window — so runners in one process or in many need no other
channel between them. A runner never crashes on a bad model or a busy server: a model error is
logged and counted (`RunStats.model_errors`), and the world hears nothing of it (it is a shared
record, not a status page) unless the runner was given an `outage_notice` to post (once per chat
while the model keeps failing: an outage is not answered message by message). The messages an
outage left unanswered stay unread in the agent's inbox, where they can be listed, and are tried
again: by `run` after a pause that doubles while the model keeps failing, and by any runner
started later. Only a request the model refuses as such (HTTP 400, 413, 422: it would be refused
again) is marked read unanswered. Any other error is logged and the loop goes on after a pause.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recall.core.models import Message
from recall.core.tokens import TokenCounter, encoding_for_model
from recall.errors import InvalidInputError, ModelError, RecallError
from recall.llm.base import AgentModel, Tool, ToolCall
from recall.llm.windows import model_window, split_model_name
from recall.runner.backend import Prompt, RunnerBackend
from recall.runner.replies import process_reply

logger = logging.getLogger("recall.runner")

#: A notice a runner may be given to post when the model fails (`outage_notice`); none by default.
APOLOGY = "Sorry, I can't answer right now: my model is not responding. Please try again in a moment."
#: Rounds of tool calls one answer may take before the model must reply in words.
MAX_TOOL_ROUNDS = 4
#: Seconds between two attempts after an unexpected error (the server down, say).
ERROR_PAUSE = 2.0
#: Seconds `run` waits before trying again the messages a failed model left unanswered; the pause
#: doubles while the model keeps failing, up to `MAX_RETRY_PAUSE`.
RETRY_PAUSE = 2.0
MAX_RETRY_PAUSE = 300.0
#: Statuses of a request the model refused for what it holds: sent again, it is refused again.
REFUSED = frozenset({400, 413, 422})


@dataclass(frozen=True)
class ToolFunction:
    """A tool the agent's model may call, and the Python function that runs it. The function
    gets the call's arguments as keyword arguments; what it returns is sent back as text
    (JSON for anything but a string)."""

    tool: Tool
    function: Callable[..., Any]


@dataclass
class RunStats:
    """What a runner did, for logs, tests and the live demo."""

    replies: int = 0
    notices: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    model_errors: int = 0
    errors: int = 0


class AgentRunner:
    """Connects one agent (through a `RunnerBackend`) to a chat model."""

    def __init__(
        self,
        backend: RunnerBackend,
        model: AgentModel,
        *,
        tools: Sequence[ToolFunction] = (),
        max_tokens: int = 1024,
        extract: bool = True,
        on_post: Callable[[str, str], None] | None = None,
        outage_notice: str | None = None,
        context_window: int | None = None,
    ) -> None:
        self.backend = backend
        self.model = model
        self.tools = {t.tool.name: t for t in tools}
        self.max_tokens = max_tokens
        #: The model as recall records it (`ollama/llama3.2`): contexts are built for it.
        self.model_name = recorded_name(model.name)
        #: Tokens the model takes in one call, the reply included: `context_window`, else the
        #: model's known window, else a safe default (`recall.llm.windows`).
        self.context_window = context_window if context_window is not None else model_window(model.name)
        self.context_budget = self.context_window - max_tokens - self._tool_tokens()
        if self.context_budget < 1:
            raise InvalidInputError(
                "context_window",
                f"{self.context_window:,} tokens leave no room for a context beside the reply's {max_tokens:,}"
                " (max_tokens) and the tool definitions; give the model's real window",
            )
        self.extract = extract
        #: Called with (agent id, text) after each post (the live demo prints them).
        self.on_post = on_post
        #: Posted in a chat when the model fails there (once until it answers again); None: nothing.
        self.outage_notice = outage_notice
        self.stats = RunStats()
        #: Seconds `run` waits before the next step: 0 unless the model failed in the last one.
        self.retry_pause = 0.0
        #: Chats apologised in since the model last answered: they get no second apology.
        self._apologised: set[str | None] = set()
        #: The model's failure in the current step: the step's other answers are not attempted.
        self._failure: ModelError | None = None

    def _tool_tokens(self) -> int:
        """What the tool definitions take of the window (sent beside the context)."""
        if not self.tools:
            return 0
        definitions = json.dumps([t.tool.openai() for t in self.tools.values()])
        return TokenCounter(encoding_for_model(self.model_name)).count(definitions)

    @property
    def agent_id(self) -> str:
        return self.backend.agent_id

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event, wait: float = 5.0) -> None:
        """Answer messages until `stop` is set (checked at least every `wait` seconds)."""
        logger.info(
            "agent %s of world %s runs on %s (window %s tokens, contexts up to %s)",
            self.agent_id,
            self.backend.world_id,
            self.model.name,
            f"{self.context_window:,}",
            f"{self.context_budget:,}",
        )
        while not stop.is_set():
            try:
                self.step(wait)
            except Exception:  # the loop must outlive any one failure
                self.stats.errors += 1
                logger.exception("agent %s: step failed; retrying in %.0f s", self.agent_id, ERROR_PAUSE)
                stop.wait(ERROR_PAUSE)
                continue
            if self.retry_pause:  # the model failed: its unanswered messages wait for the next try
                stop.wait(self.retry_pause)

    def step(self, timeout: float = 0.0) -> int:
        """Handle the messages waiting now (waiting up to `timeout` seconds for some): one answer
        per chat, to the newest message the agent would respond to. Returns the posts made.

        The messages of a chat the model failed to answer stay unread (tried again next step);
        the others are read once handled, answered or not."""
        messages = self.backend.next_messages(timeout)
        self._failure = None
        posts = 0
        for group in _by_chat(messages):
            unanswered = False
            try:
                posted, unanswered = self._handle(group)
                posts += posted
            finally:
                if not unanswered:  # a message that breaks anything else is not retried forever
                    self.backend.ack([m.id for m in group])
        if self._failure is None:
            self.retry_pause = 0.0
        return posts

    def _handle(self, group: Sequence[Message]) -> tuple[int, bool]:
        """(posts made, whether the group stays unread for the model's next try)."""
        answer: Message | None = None
        notice: tuple[str, Message] | None = None
        for message in group:  # oldest first: a human message resets the turn counter
            decision = self.backend.decide(message)
            if decision.respond:
                answer, notice = message, None
            elif decision.notice is not None and answer is None:
                notice = (decision.notice, message)
        if answer is not None:
            return self._answer(answer)
        if notice is not None:
            text, message = notice
            self._post(text, message)
            self.stats.notices += 1
            return 1, False
        return 0, False

    # -- one answer ---------------------------------------------------------------------------

    def _answer(self, message: Message) -> tuple[int, bool]:
        """Answer `message`: (posts made, whether it is left unanswered for the model's next try)."""
        if self._failure is not None:  # the model failed moments ago: this one would fail the same
            return self._model_failed(message, self._failure)
        prompt = self.backend.context(message, model=self.model_name, max_tokens=self.context_budget)
        conversation = prompt.messages
        tools = [t.tool for t in self.tools.values()]
        for round_number in range(MAX_TOOL_ROUNDS + 1):
            self.stats.model_calls += 1
            try:
                offered = tools if round_number < MAX_TOOL_ROUNDS else []
                reply = self.model.chat(conversation, tools=offered, max_tokens=self.max_tokens)
            except ModelError as e:
                self._outcome(prompt, str(e))
                return self._model_failed(message, e)
            # Counted once answered: a model that fails spends none of the agent's turns.
            self.backend.record_llm_call()
            self._apologised.clear()  # the model answers again
            if reply.tool_calls and self.tools:
                conversation += self._run_tools(message, reply.text, reply.tool_calls)
                continue
            self._outcome(prompt, None)
            processed = process_reply(self.agent_id, reply.text, message)
            posted = 0
            if processed.post:
                self._post(processed.text, message)
                self.stats.replies += 1
                posted = 1
            logger.info(
                "agent %s %s message %s%s",
                self.agent_id,
                "answered" if posted else f"passed on ({processed.quiet or 'empty reply'})",
                message.id,
                "" if message.chat_id is None else f" in chat {message.chat_id}",
            )
            if self.extract:
                self.backend.extract(message.chat_id)
            return posted, False
        return 0, False  # not reached: the last round offers no tools

    def _outcome(self, prompt: Prompt, error: str | None) -> None:
        """Record on the call what came of it (the calls list, the inspector and /metrics show
        an outage there); a failure to record it is logged, never the runner's end."""
        if prompt.call_id is None:
            return
        try:
            self.backend.call_outcome(prompt.call_id, error)
        except RecallError as e:
            logger.warning("agent %s: could not record the outcome of call %s: %s", self.agent_id, prompt.call_id, e)

    def _model_failed(self, message: Message, error: ModelError) -> tuple[int, bool]:
        """Log (once per step) and count a failed model call; post the outage notice, if the
        runner has one, in the message's chat unless already done since the model last answered.
        (posts made, whether the message stays unread to be tried again)."""
        if error.status in REFUSED:  # this request is at fault, not the model: no retry
            self.stats.model_errors += 1
            logger.warning("agent %s: model refused message %s, not retried: %s", self.agent_id, message.id, error)
            return 0, False
        if self._failure is None:  # the step's first failure: the next pause, and one log line
            self.stats.model_errors += 1
            self._failure = error
            self.retry_pause = min(self.retry_pause * 2, MAX_RETRY_PAUSE) if self.retry_pause else RETRY_PAUSE
            logger.warning(
                "agent %s: model failed, message %s left unanswered (unread; tried again in %.0f s): %s",
                self.agent_id,
                message.id,
                self.retry_pause,
                error,
            )
        if self.outage_notice is None or message.chat_id in self._apologised:
            return 0, True
        self._post(self.outage_notice, message)
        self._apologised.add(message.chat_id)
        return 1, True

    def _run_tools(self, message: Message, text: str, calls: Iterable[ToolCall]) -> list[dict[str, Any]]:
        """Run the calls; store the calls and their results in the agent's history (so later
        contexts show them) and return them as messages for the next model call."""
        calls = list(calls)
        openai_calls = [c.openai() for c in calls]
        self.backend.send(text, chat=message.chat_id, parent=message.id, metadata={"tool_calls": openai_calls})
        added: list[dict[str, Any]] = [{"role": "assistant", "content": text, "tool_calls": openai_calls}]
        for call in calls:
            result = self._run_tool(call)
            self.stats.tool_calls += 1
            self.backend.post_tool_result(result, chat=message.chat_id, parent=message.id, call_id=call.id)
            added.append({"role": "tool", "content": result, "tool_call_id": call.id})
        return added

    def _run_tool(self, call: ToolCall) -> str:
        entry = self.tools.get(call.name)
        if entry is None:
            return f"error: there is no tool named {call.name!r}"
        try:
            arguments = call.parsed_arguments()
        except ValueError as e:
            return f"error: the arguments are not a JSON object ({e})"
        try:
            result = entry.function(**arguments)
        except Exception as e:  # the model sees the error and can try again
            logger.info("agent %s: tool %s failed: %s", self.agent_id, call.name, e)
            return f"error: {type(e).__name__}: {e}"
        text = result if isinstance(result, str) else json.dumps(result, default=str)
        return text or "(no output)"

    def _post(self, text: str, message: Message) -> None:
        self.backend.send(text, chat=message.chat_id, parent=message.id)
        if self.on_post is not None:
            self.on_post(self.agent_id, text)


def recorded_name(name: str) -> str:
    """A model's name as recall records it: `provider/model` (`ollama/llama3.2`), the spelling of
    `recall agent run --model`, for an `AgentModel.name` of `provider:model`."""
    provider, model = split_model_name(name)
    return f"{provider}/{model}" if provider else name


def _by_chat(messages: Sequence[Message]) -> list[list[Message]]:
    """Messages grouped by chat, each group oldest first, groups in order of first arrival."""
    groups: dict[str | None, list[Message]] = {}
    for message in sorted(messages, key=lambda m: m.id):
        groups.setdefault(message.chat_id, []).append(message)
    return list(groups.values())


def run_agents(runners: Sequence[AgentRunner], stop: threading.Event, wait: float = 5.0) -> list[threading.Thread]:
    """Start each runner in a thread of its own (daemon); they stop when `stop` is set."""
    threads = [
        threading.Thread(target=r.run, args=(stop, wait), name=f"agent-{r.agent_id}", daemon=True) for r in runners
    ]
    for thread in threads:
        thread.start()
    return threads


def tool_function(
    function: Callable[..., Any], description: str, parameters: Mapping[str, Any] | None = None
) -> ToolFunction:
    """A `ToolFunction` named after `function`."""
    schema = dict(parameters) if parameters is not None else {"type": "object", "properties": {}}
    return ToolFunction(Tool(function.__name__, description, schema), function)

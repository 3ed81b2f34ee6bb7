# ruff: noqa: E402 (the extra is checked before the runner's modules load, so their imports follow it)
"""Agents that answer (spec §7): the runner loop, how it reaches recall, and reply post-processing.

Example::

    from recall import Recall
    from recall.llm.factory import agent_model
    from recall.runner import AgentRunner, LocalBackend

    with Recall("recall.db") as mem:
        runner = AgentRunner(LocalBackend(mem.world("w").agent("helper")), agent_model("ollama/llama3.2"))
        runner.step(timeout=30)  # or runner.run(stop_event) in a thread; run_agents() for several
"""

from recall.extras import require

require("models", "the agent runner")  # before its HTTP client and the model SDKs load

from recall.errors import BackendError
from recall.runner.agent_runner import APOLOGY, AgentRunner, RunStats, ToolFunction, run_agents, tool_function
from recall.runner.backend import HttpBackend, LocalBackend, RunnerBackend
from recall.runner.replies import Reply, process_reply

__all__ = [
    "APOLOGY",
    "AgentRunner",
    "BackendError",
    "HttpBackend",
    "LocalBackend",
    "Reply",
    "RunStats",
    "RunnerBackend",
    "ToolFunction",
    "process_reply",
    "run_agents",
    "tool_function",
]

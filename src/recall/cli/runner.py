"""`recall agent run`: agents answering with a model against a recall server, until stopped."""

from __future__ import annotations

from typing import Annotated

import typer

from recall.cli.shared import err, fail
from recall.errors import RecallError


def agent_run(
    server: Annotated[str, typer.Option(help="URL of the recall server (recall serve).")],
    world: Annotated[str, typer.Option(help="The world the agents are in.")],
    agent: Annotated[list[str], typer.Option(help="An agent to run; repeat for several (one thread each).")],
    model: Annotated[str, typer.Option(help="PROVIDER/MODEL: openai/…, ollama/…, anthropic/….")],
    base_url: Annotated[
        str | None, typer.Option(help="The model endpoint (any OpenAI-compatible URL; Ollama's by default).")
    ] = None,
    api_key: Annotated[
        str | None, typer.Option(help="The model's API key (default: $OPENAI_API_KEY or $ANTHROPIC_API_KEY).")
    ] = None,
    server_key: Annotated[
        str | None, typer.Option(envvar="RECALL_API_KEY", help="The recall server's API key, when it has keys.")
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Longest reply, in tokens.")] = 1024,
    no_extract: Annotated[bool, typer.Option("--no-extract", help="Do not queue fact extraction.")] = False,
    outage_notice: Annotated[
        str | None,
        typer.Option(
            help="Posted in a chat when the model fails there (once until it answers again). Default: nothing is"
            " posted; the failure is logged.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run agents against a recall server, answering with a model.

    Each agent answers what it is addressed in, until Ctrl-C or SIGTERM."""
    # Imported here: the model SDKs and the HTTP client load only when agents run.
    import logging
    import signal
    import threading

    from recall.llm.factory import agent_model
    from recall.runner.agent_runner import AgentRunner, run_agents
    from recall.runner.backend import HttpBackend

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        chat_model = agent_model(model, base_url=base_url, api_key=api_key)
        # A model that cannot answer would leave every message unanswered: say so now, start nothing.
        chat_model.check()
    except RecallError as exc:
        fail(exc)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    backends = [HttpBackend(server, world, agent_id, api_key=server_key) for agent_id in agent]
    runners = [
        AgentRunner(b, chat_model, max_tokens=max_tokens, extract=not no_extract, outage_notice=outage_notice)
        for b in backends
    ]
    threads = run_agents(runners, stop)
    err.print(f"running {', '.join(agent)} in {world} on {chat_model.name}; Ctrl-C stops", markup=False)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        stop.set()
    for thread in threads:
        thread.join(timeout=40)  # a long-poll ends within its 30 s timeout
    for backend in backends:
        backend.close()

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
    max_context: Annotated[
        int | None,
        typer.Option(
            min=256,
            help="The model's context window in tokens (the reply's included): contexts are built to fit it."
            " Default: the model's known window (OpenAI, Anthropic), else 4,096 for ollama/… (Ollama's default"
            " context length) and 8,192 for other models.",
            show_default=False,
        ),
    ] = None,
    no_extract: Annotated[bool, typer.Option("--no-extract", help="Do not queue fact extraction.")] = False,
    outage_notice: Annotated[
        str | None,
        typer.Option(
            help="Posted in a chat when the model fails there (once until it answers again). Default: nothing is"
            " posted; the failure is logged.",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log every HTTP request too (to recall and to the model).")
    ] = False,
) -> None:
    """Run agents against a recall server, answering with a model.

    Each agent answers what it is addressed in, until Ctrl-C or SIGTERM. Stderr gets a line per reply or error.

    Messages the model fails to answer stay unread: 'recall inbox WORLD AGENT' lists them.

    They are tried again after a pause that doubles while the model keeps failing, and by the next run."""
    # Imported here: the model SDKs and the HTTP client load only when agents run.
    import signal
    import threading

    from recall.llm.factory import agent_model
    from recall.runner.agent_runner import AgentRunner, run_agents
    from recall.runner.backend import HttpBackend

    configure_logging(verbose)
    try:
        chat_model = agent_model(model, base_url=base_url, api_key=api_key)
        # A model that cannot answer would leave every message unanswered: say so now, start nothing.
        chat_model.check()
        backends = [HttpBackend(server, world, agent_id, api_key=server_key) for agent_id in agent]
        runners = [
            AgentRunner(
                b,
                chat_model,
                max_tokens=max_tokens,
                extract=not no_extract,
                outage_notice=outage_notice,
                context_window=max_context,
            )
            for b in backends
        ]
    except RecallError as exc:
        fail(exc)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threads = run_agents(runners, stop)
    window = f"context window {runners[0].context_window:,} tokens"
    err.print(f"running {', '.join(agent)} in {world} on {chat_model.name} ({window}); Ctrl-C stops", markup=False)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        stop.set()
    for thread in threads:
        thread.join(timeout=40)  # a long-poll ends within its 30 s timeout
    for backend in backends:
        backend.close()


def configure_logging(verbose: bool) -> None:
    """recall's own lines on stderr: one per reply or error. The libraries below it (the HTTP
    clients log each request at INFO, the model SDKs each retry) speak only of warnings, unless
    `verbose`."""
    import logging

    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("recall").setLevel(logging.INFO)

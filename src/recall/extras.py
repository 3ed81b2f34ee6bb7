"""The parts of recall a core install leaves out, each behind a pip extra, and the one-line error
that names the extra when such a part is used without it.

`pip install recall-memory` is the core: the Python API, the CLI and search on SQLite. The
server, PostgreSQL, the chat models, the framework adapters and exporting OpenTelemetry
traces and metrics each need their extra; `all` is every one of them. A package that needs an extra calls `require` first thing, so importing it
without the extra raises `MissingExtraError` with one line that says what to install, before any
import deep inside it fails with a module name the user never asked for.
"""

from __future__ import annotations

import importlib.util

from recall.errors import RecallError

#: Each extra, the modules it brings that recall imports, and what it is for.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "server": (
        ("fastapi", "starlette", "uvicorn", "mcp", "swagger_ui_bundle"),
        "recall's server (serve, mcp, the inspector)",
    ),
    "postgres": (("psycopg", "psycopg_pool"), "a PostgreSQL store"),
    "models": (("openai", "anthropic", "httpx"), "a chat model (the agent runner, fact extraction)"),
    "langgraph": (("langgraph",), "the LangGraph adapter"),
    "langchain": (("langchain_core",), "the LangChain adapter"),
    "openai-agents": (("agents",), "the OpenAI Agents SDK adapter"),
    "otel": (
        ("opentelemetry.trace", "opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"),
        "exporting OpenTelemetry traces and metrics",
    ),
}


class MissingExtraError(RecallError, ImportError):
    """A part of recall was used whose pip extra is not installed; the message names the extra."""

    def __init__(self, extra: str, what: str, missing: list[str]) -> None:
        self.extra = extra
        super().__init__(
            f"{what} needs the '{extra}' extra: pip install \"recall-memory[{extra}]\""
            f" (not installed: {', '.join(missing)})"
        )


def missing_modules(extra: str, modules: tuple[str, ...] | None = None) -> list[str]:
    """The modules of `extra` (or just `modules` of it) that cannot be imported here."""
    names = modules if modules is not None else EXTRAS[extra][0]
    return [name for name in names if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def require(extra: str, what: str | None = None, modules: tuple[str, ...] | None = None) -> None:
    """Raise `MissingExtraError` unless every module of `extra` (or just `modules`) is installed;
    `what` names the part being used (default: what the extra is for)."""
    missing = missing_modules(extra, modules)
    if missing:
        raise MissingExtraError(extra, what or EXTRAS[extra][1], missing)

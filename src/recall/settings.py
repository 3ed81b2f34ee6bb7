"""Every default number recall uses, in one place.

A `Settings` value is immutable; `Settings.from_env()` overrides fields from `RECALL_*`
environment variables (for example `RECALL_HISTORY_LIMIT=50`), and a world, an agent or a
single call can override the per-agent fields again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from recall.errors import InvalidInputError


@dataclass(frozen=True)
class Settings:
    #: Messages of conversation history kept in a context (the UI offers 10/25/50/100).
    history_limit: int = 25
    #: Most new messages shown as the incoming part; older unanswered ones count as history.
    incoming_limit: int = 100
    #: LLM calls an agent may make before a human or world message must step in.
    turn_limit: int = 5
    #: Model the context is built for; decides the tokenizer and the default budget.
    model: str = "gpt-4o"
    #: Tokens kept free for the model's reply when the budget defaults to the window.
    reply_reserve: int = 4096
    #: Largest message content accepted, in characters.
    max_message_chars: int = 100_000
    #: Token budget of the `<memory>` block.
    max_injection_tokens: int = 2000
    #: Above this many history messages, compression summarises all but the newest few.
    compress_above: int = 20
    #: Newest history messages always kept verbatim when compressing.
    compress_keep_recent: int = 5
    #: Observations and actions of an agent shown in its context, of each.
    observation_cap: int = 50
    #: Messages of context an inbox check sends (at most 100).
    context_limit: int = 25
    #: Seconds after which an agent session's context is sent whole again (context once).
    context_session_ttl: int = 600

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        overrides: dict[str, object] = {}
        for f in fields(cls):
            raw = env.get(f"RECALL_{f.name.upper()}")
            if raw is None:
                continue
            if f.type in ("int", int):
                try:
                    value = int(raw)
                except ValueError:
                    value = -1
                if value < 0:
                    raise InvalidInputError(f"RECALL_{f.name.upper()}", f"must be a whole number ≥ 0, got {raw!r}")
                overrides[f.name] = value
            else:
                overrides[f.name] = raw
        return replace(cls(), **overrides)  # type: ignore[arg-type]

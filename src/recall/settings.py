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

    # -- facts and the memory block (spec §4)
    #: Weight of the TF-IDF similarity to the recent conversation in a fact's rank.
    fact_similarity_weight: float = 0.6
    #: Weight of the fact's confidence in its rank.
    fact_confidence_weight: float = 0.4
    #: Facts kept per scope; above it the lowest-confidence ones go.
    max_facts: int = 100
    #: Extracted facts below this confidence are not added.
    extraction_min_confidence: float = 0.7
    #: Seconds a scope's extraction waits for more updates before it runs.
    extraction_debounce: float = 30.0

    # -- long-term memories and search (spec §3)
    #: Relevant long-term memories shown in a context, and the least importance they need.
    long_term_limit: int = 5
    long_term_min_importance: int = 5

    # -- the recalled past (spec §3): passages of the agent's memory a search picks for what it
    # answers; each is also an agent setting (`AgentProfile.recalled_*`), see docs/context.md
    #: Most tokens of recalled past in a context (0 turns it off). By default no cap but the
    #: budget: the recalled past competes with the older history by value, and the cutoff and
    #: the budget end it.
    recalled_max_tokens: int = 1_000_000
    #: The score-adaptive stop: passages scoring below this fraction of the best one stay out.
    recalled_cutoff: float = 0.002
    #: Most passages (0: as many as fit). Seed 001's "similar past interactions" was 3 ...
    recalled_limit: int = 0
    #: ... with a cosine similarity of 0.8 or more (0: no floor).
    recalled_min_similarity: float = 0.0
    #: Where passages come from: "world" (every chat the agent heard) or "chat" (this one).
    recalled_scope: str = "world"
    #: A longer message is recalled as an excerpt of about this many tokens around its match.
    recalled_excerpt_tokens: int = 160
    #: A passage shorter than this many tokens brings the turn it answers.
    recalled_neighbour_tokens: int = 12
    #: Weight of the search for the recent conversation against the one for the newest message.
    recalled_recent_weight: float = 0.5
    # -- how the budget is spent (spec §3): a recent window, then the older history and the
    # recalled past by one ranking, recency one signal of it (docs/context.md)
    #: Most messages of the recent window a reply must follow (besides the triggering one) ...
    recent_window_messages: int = 4
    #: ... and its share of the budget (the message that does not fit is excerpted).
    recent_window_share: float = 0.10
    #: Weight of recency in an older history message's score (its relevance × (1 + weight ×
    #: recency)), and the messages over which recency halves (0: relevance alone).
    recency_weight: float = 0.5
    recency_half_life: float = 4.0
    #: Texts embedded per batch by the background indexer.
    embed_batch: int = 64
    #: The embedding model for semantic search: "minilm" (all-MiniLM-L6-v2, bundled) or "none"
    #: (keyword search only).
    embeddings: str = "minilm"
    #: Seconds between background indexing rounds (a post wakes it sooner); 0 turns the
    #: background indexer off, and the index is brought up to date on demand (`refresh_index`).
    index_interval: float = 2.0
    #: Seconds a write to a SQLite store waits while another process writes it (an import, a
    #: CLI command) before it gives up: `StoreBusyError`, 503 with Retry-After over HTTP.
    busy_timeout: float = 5.0

    # -- recorded model calls (docs/context.md, "What the model saw"): the runner's, and any
    # context built with record=True
    #: Calls kept per agent, newest first (0: none recorded).
    call_retention_count: int = 1000
    #: Days a recorded call is kept (0: no age limit).
    call_retention_days: float = 30.0
    #: "ids": a record holds what each section held by id and version (the text is the store's);
    #: "full": also a copy of the messages as sent.
    call_copies: str = "ids"

    # -- a chat model for extraction and summaries; none configured means both are off
    #: "openai" (any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM) or "anthropic".
    llm_provider: str = ""
    llm_model: str = ""
    #: Endpoint, e.g. http://localhost:11434/v1 for Ollama; empty for the provider's default.
    llm_base_url: str = ""
    #: The key itself is read from this environment variable, never stored in settings.
    llm_api_key_env: str = "RECALL_LLM_API_KEY"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        overrides: dict[str, object] = {}
        for f in fields(cls):
            raw = env.get(f"RECALL_{f.name.upper()}")
            if raw is None:
                continue
            if f.type in ("float", float):
                try:
                    number = float(raw)
                except ValueError:
                    number = -1.0
                if not number >= 0:
                    raise InvalidInputError(f"RECALL_{f.name.upper()}", f"must be a number ≥ 0, got {raw!r}")
                overrides[f.name] = number
            elif f.type in ("int", int):
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

"""Exact, offline token counts for OpenAI's `cl100k_base` and `o200k_base`.

tiktoken normally downloads its rank files; recall ships the same two files (2.4 MB, in
`encodings/`, see its NOTICE.md), builds the encodings from those and refuses any file whose
SHA-256 differs from the one tiktoken itself pins. Nothing touches the network.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import tiktoken

from recall.errors import InvalidInputError, RankFileError

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Pattern strings and special tokens as defined in tiktoken_ext/openai_public.py.
_ENCODINGS: dict[str, dict[str, object]] = {
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        "special_tokens": {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    },
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    },
}

ENCODING_NAMES = tuple(_ENCODINGS)

# Chat-format overhead, as OpenAI documents it for its current chat models: every message
# costs 3 tokens plus its encoded fields, a `name` 1 more, and the reply is primed with 3.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3


#: The rank files recall ships (package data), gzipped as tiktoken's own files are served.
_RANK_DIR = Path(__file__).parent / "encodings"


def _load_ranks(name: str, expected_sha256: str) -> dict[bytes, int]:
    try:
        packed = (_RANK_DIR / f"{name}.tiktoken.gz").read_bytes()
    except OSError as exc:
        raise RankFileError(f"{name}: recall's rank file is missing ({exc}); reinstall recall-memory") from exc
    data = gzip.decompress(packed)
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256:
        raise RankFileError(f"{name}: rank file SHA-256 {digest} is not the official {expected_sha256}")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding `name`, built offline (loaded once per process)."""
    spec = _ENCODINGS.get(name)
    if spec is None:
        raise InvalidInputError("encoding", f"unknown encoding {name!r}; use one of {', '.join(ENCODING_NAMES)}")
    return tiktoken.Encoding(
        name=name,
        pat_str=str(spec["pat_str"]),
        mergeable_ranks=_load_ranks(name, str(spec["sha256"])),
        special_tokens=dict(spec["special_tokens"]),  # type: ignore[call-overload]
    )


def encoding_for_model(model: str) -> str:
    """The encoding a model family uses; GPT-4o and later use o200k_base."""
    m = model.lower().split("/")[-1]
    if m.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")):
        return "o200k_base"
    if m.startswith(("gpt-4", "gpt-3.5", "text-embedding")):
        return "cl100k_base"
    return "o200k_base"


def context_window(model: str) -> int:
    m = model.lower().split("/")[-1]
    if m.startswith(("gpt-4.1", "gpt-5")):
        return 1_000_000 if m.startswith("gpt-4.1") else 400_000
    if m.startswith(("gpt-4o", "o1", "o3", "o4", "gpt-4-turbo", "chatgpt-4o")):
        return 128_000
    if m.startswith("gpt-4"):
        return 8_192
    if m.startswith("gpt-3.5"):
        return 16_385
    return 128_000


#: Counts of short texts are remembered, per encoding: a chat's context is built again at every
#: turn, and its history lines and recalled passages are mostly the ones counted last time.
COUNT_CACHE_SIZE = 32_768
COUNT_CACHE_MAX_CHARS = 1_000
#: Longer texts (model replies, pasted documents) are remembered too, fewer of them: counting
#: one takes about a millisecond, and the same long replies are in context after context.
LONG_COUNT_CACHE_SIZE = 512
LONG_COUNT_CACHE_MAX_CHARS = 50_000


@cache
def _cached_count(encoding_name: str, size: int = COUNT_CACHE_SIZE) -> Callable[[str], int]:
    enc = encoding(encoding_name)

    @lru_cache(maxsize=size)
    def count(text: str) -> int:
        return _count(enc, text)

    return count


def _count(enc: tiktoken.Encoding, text: str) -> int:
    # disallowed_special=() counts stored text that looks like a special token as ordinary
    # text, which is what the model will see.
    return len(enc.encode(text, disallowed_special=()))


def _starts_a_piece(line: str) -> bool:
    """Whether no piece of the encodings' pre-split can reach into `line` from a line break
    before it: a piece holding a line break goes on only through more white space (or, in
    o200k_base, a `/` after punctuation)."""
    return bool(line) and not line[0].isspace() and line[0] != "/"


class TokenCounter:
    """Counts text and chat messages exactly for one encoding."""

    def __init__(self, encoding_name: str) -> None:
        self.name = encoding_name
        self._enc = encoding(encoding_name)
        self._cached = _cached_count(encoding_name)
        self._cached_long = _cached_count(encoding_name, LONG_COUNT_CACHE_SIZE)

    def count(self, text: str) -> int:
        if len(text) <= COUNT_CACHE_MAX_CHARS:
            return self._cached(text)
        if len(text) <= LONG_COUNT_CACHE_MAX_CHARS:
            return self._cached_long(text)
        return _count(self._enc, text)

    def count_lines(self, lines: Sequence[str]) -> int:
        """Tokens of `lines` joined by line breaks, exactly as `count` of the joined text, from
        each line's own (remembered) count. Both encodings pre-split text with a pattern and
        merge pairs only inside a piece, so a count is the sum of its pieces'; a line break
        joins the piece before it (`!\n` is one piece) and, when the next line begins with
        neither white space nor `/`, ends it. So each line but the last is counted with its
        line break. A block of recalled passages is thus counted without encoding it again."""
        if not lines:
            return 0
        if not all(_starts_a_piece(line) for line in lines[1:]):
            return self.count("\n".join(lines))
        return sum(self.count(f"{line}\n") for line in lines[:-1]) + self.count(lines[-1])

    def message(self, role: str, content: str, name: str | None = None, extra: Mapping[str, Any] | None = None) -> int:
        """Tokens of one chat message. `extra` fields (`tool_calls`, `tool_call_id`) are counted
        as their compact JSON text: OpenAI publishes no formula for them, and the JSON is what
        the model is sent, so this is close and never zero."""
        n = TOKENS_PER_MESSAGE + self.count(role) + self.count(content)
        if name:
            n += TOKENS_PER_NAME + self.count(name)
        for value in (extra or {}).values():
            n += self.count(value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))
        return n

    def truncate(self, text: str, max_tokens: int) -> str:
        tokens = self._enc.encode(text, disallowed_special=())
        return self._enc.decode(tokens[:max_tokens])

"""Spec §3 budget: exact, offline token counts for cl100k_base and o200k_base."""

from __future__ import annotations

import pytest

from recall.core import tokens
from recall.core.tokens import TokenCounter, encoding_for_model
from recall.errors import InvalidInputError, RankFileError


@pytest.mark.parametrize(
    ("name", "ids"),
    [
        pytest.param("cl100k_base", [15339, 1917], id="cl100k"),
        pytest.param("o200k_base", [24912, 2375], id="o200k"),
    ],
)
def test_known_encodings(name: str, ids: list[int]) -> None:
    assert tokens.encoding(name).encode("hello world") == ids
    assert TokenCounter(name).count("hello world") == 2


def test_known_count() -> None:
    text = "This is a test string to count tokens accurately using tiktoken."
    assert TokenCounter("cl100k_base").count(text) == 13


def test_special_token_text_counts_as_ordinary_text() -> None:
    counter = TokenCounter("cl100k_base")
    assert counter.count("<|endoftext|>") > 1


def test_rank_file_with_wrong_hash_is_refused() -> None:
    with pytest.raises(RankFileError, match="SHA-256"):
        tokens._load_ranks("cl100k_base", "0" * 64)


@pytest.mark.parametrize(
    ("role", "content", "name"),
    [
        pytest.param("user", "hello world", None, id="no-name"),
        pytest.param("user", "hello world", "maria", id="with-name"),
        pytest.param("system", "", None, id="empty-content"),
        pytest.param("assistant", "Sure, on it.", None, id="assistant"),
    ],
)
def test_message_cost(role: str, content: str, name: str | None) -> None:
    counter = TokenCounter("cl100k_base")
    expected = 3 + counter.count(role) + counter.count(content)
    if name:
        expected += 1 + counter.count(name)
    assert counter.message(role, content, name) == expected


def test_message_cost_known_value() -> None:
    # 3 + "user"(1) + "hi"(1) + 1 + "human"(1)
    assert TokenCounter("cl100k_base").message("user", "hi", "human") == 7


def test_unknown_encoding_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError) as err:
        TokenCounter("p50k_nope")
    assert err.value.field == "encoding"
    assert "cl100k_base" in str(err.value)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        pytest.param("gpt-4o", "o200k_base", id="gpt-4o"),
        pytest.param("gpt-4o-mini", "o200k_base", id="gpt-4o-mini"),
        pytest.param("openai/gpt-4o", "o200k_base", id="provider-prefix"),
        pytest.param("GPT-4O", "o200k_base", id="case-insensitive"),
        pytest.param("gpt-4", "cl100k_base", id="gpt-4"),
        pytest.param("gpt-4-turbo", "cl100k_base", id="gpt-4-turbo"),
        pytest.param("gpt-3.5-turbo", "cl100k_base", id="gpt-3.5"),
    ],
)
def test_encoding_for_model(model: str, expected: str) -> None:
    assert encoding_for_model(model) == expected


_PIECES = [
    *"abcXYZ019 .,!?:;'\"/\\-_()[]<>&@#\t\r",
    "é",
    "日本",
    "😀",
    "\u00a0",
    "'s",
    "'ll",
    "...",
    "—",
    "<|endoftext|>",
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_lines_count_as_their_joined_text(name: str) -> None:
    """The recalled past is counted line by line: the sum must be the joined text's count,
    also where a line begins with white space or `/` (there a line break joins the next line)."""
    import random

    counter = TokenCounter(name)
    rng = random.Random(7)
    for _ in range(3000):
        lines = ["".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 10))) for _ in range(rng.randint(1, 5))]
        assert counter.count_lines(lines) == counter.count("\n".join(lines)), lines
    assert counter.count_lines([]) == 0
    # The cases the line-by-line sum alone gets wrong.
    for lines in (["ok!", "/path"], ["a", " b"], ["x", "", "y"], ["done.", "\tz"]):
        assert counter.count_lines(lines) == counter.count("\n".join(lines))


def test_long_texts_are_counted_too() -> None:
    counter = TokenCounter("o200k_base")
    text = "word " * (tokens.COUNT_CACHE_MAX_CHARS // 2)
    assert counter.count(text) == len(tokens.encoding("o200k_base").encode(text)) > 400
    assert counter.count(text[:19]) == counter.count(text[:19]) == 4  # the second from the cache

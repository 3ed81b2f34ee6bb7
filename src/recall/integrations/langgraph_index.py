"""What of a LangGraph store's items recall searches: the fields `index` names (LangGraph's JSON
paths, as a list or as its `IndexConfig`), and the text of an item they give.

recall embeds a whole store with one model, chosen when the store opens
(`Settings(embeddings=...)`): messages, memories, facts and these items are searched together.
So an `IndexConfig` is read for its `fields` only, and its `dims` or `embed`, when given, must be
the store's own model: another model's is refused here, when the store is made, rather than
found out as vectors that do not compare.
"""

# ruff: noqa: E402 (the extra is checked before the framework loads, so its imports follow the check)
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from recall.extras import require

require("langgraph")  # before the framework loads: one line naming the extra

from langgraph.store.base import IndexConfig, get_text_at_path

from recall.api import Recall
from recall.errors import InvalidInputError

#: The keys of LangGraph's `IndexConfig`, all of which recall reads.
_INDEX_KEYS = ("dims", "embed", "fields")
#: Names of the bundled model, all-MiniLM-L6-v2, that an `IndexConfig`'s `embed` may give (after a
#: provider prefix such as `huggingface:` and `sentence-transformers/`; any case).
_MINILM_NAMES = frozenset({"minilm", "all-minilm", "all-minilm-l6-v2", "all-minilm-l6-v2-int8"})


def _store_model(mem: Recall) -> tuple[str, int] | None:
    """(name, dims) of the model that embeds the store; None when it searches by keywords only."""
    index = mem.service.index
    embedder = index.embedder if index is not None else None
    return None if embedder is None else (embedder.name, embedder.dim)


def _names_model(embed: str, model: str) -> bool:
    """Whether `embed` (a LangGraph provider string, e.g. `huggingface:sentence-transformers/all-MiniLM-L6-v2`)
    names the store's model `model`."""
    name = embed.strip().lower()
    name = name.split(":", 1)[1] if ":" in name else name
    name = name.removeprefix("sentence-transformers/")
    if model.lower().startswith("all-minilm-l6-v2"):
        return name in _MINILM_NAMES or name == model.lower()
    return name == model.lower()


def _check_model(mem: Recall, config: Mapping[str, Any]) -> None:
    """Refuse an `IndexConfig` whose `dims` or `embed` is not the store's own model: one model embeds
    a whole store (messages, memories, facts and these items are searched together), chosen when
    the store opens (`Settings(embeddings=...)`)."""
    model = _store_model(mem)
    how = (
        "recall embeds a whole store with one model, chosen when the store opens: "
        "Recall(db, settings=Settings(embeddings='minilm')) for all-MiniLM-L6-v2 (384 dims, bundled; the default) "
        "or Settings(embeddings='none') for keyword search only"
    )
    dims = config.get("dims")
    if dims is not None:
        if model is None:
            raise InvalidInputError(
                "index",
                f"dims is {dims!r}, but this store makes no vectors (Settings(embeddings='none')): leave dims "
                f"out ({how})",
            )
        if isinstance(dims, bool) or dims != model[1]:
            raise InvalidInputError(
                "index",
                f"dims is {dims!r}, but the store's embedding model ({model[0]}) makes {model[1]}-dimensional "
                f"vectors: leave dims out or give {model[1]} ({how})",
            )
    embed = config.get("embed")
    if embed is None:
        return
    shown = repr(embed) if len(repr(embed)) <= 80 else repr(embed)[:77] + "..."
    if model is None:
        raise InvalidInputError(
            "index",
            f"embed is {shown}, but this store makes no vectors (Settings(embeddings='none')): leave embed out ({how})",
        )
    if not isinstance(embed, str) or not _names_model(embed, model[0]):
        raise InvalidInputError(
            "index",
            f"embed is {shown}, which recall cannot use: {how}. Leave embed out, or name the store's model "
            f"({'minilm' if model[0].lower().startswith('all-minilm') else model[0]!r})",
        )


def index_fields(mem: Recall, index: IndexConfig | Sequence[str] | str | None) -> tuple[str, ...]:
    """The JSON paths whose text is searched: a list of them, or LangGraph's `IndexConfig` (its
    `fields`; its `dims` and `embed` must be the store's own model). Default: `$`, the whole value."""
    if index is None:
        return ("$",)
    if isinstance(index, Mapping):
        unknown = sorted(repr(k) for k in index if k not in _INDEX_KEYS)
        if unknown:
            raise InvalidInputError(
                "index", f"unknown IndexConfig key {', '.join(unknown)}: recall reads {', '.join(_INDEX_KEYS)}"
            )
        _check_model(mem, index)
        fields: Any = index.get("fields")
    else:
        fields = index
    paths = [fields] if isinstance(fields, str) else list(fields or ())
    for path in paths:
        if not isinstance(path, str) or not path.strip():
            raise InvalidInputError(
                "index", f"fields are JSON paths of the value (such as 'text' or 'user.name'), got {path!r}"
            )
    return tuple(paths) if paths else ("$",)


def _render(value: Mapping[str, Any]) -> str:
    """The whole value as text to search: one `field: value` line per top-level field."""
    lines = []
    for field, inner in value.items():
        text = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
        lines.append(f"{field}: {text}")
    return "\n".join(lines)


def search_text(value: Mapping[str, Any], paths: Sequence[str]) -> str:
    """The text of `value` at `paths` (`$`: the whole value, as `field: value` lines), one line a text."""
    texts: list[str] = []
    for path in paths:
        texts.extend([_render(value)] if path == "$" else get_text_at_path(dict(value), path))
    return "\n".join(t for t in texts if t.strip())

"""A stopping indexer ends its round between runs of the model: `close()` waits for one short
run, not for a round of long texts (a round of long replies' passages kept `close()` waiting
40 s). What the round did not store stays pending, and is embedded later."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from recall import Recall, Settings
from recall.app.posting import PostRequest
from recall.search.index import SearchIndex
from recall.search.indexer import BackgroundIndexer
from recall.search.open import search_index
from recall.search.passage_vectors import STOP_CHECK_TEXTS


class GatedEmbedder:
    """An embedding model that says when it runs and holds its first run until released: the
    stand-in for a slow model, so the test decides when the indexer is inside a run."""

    name = "gated"
    dim = 8

    def __init__(self) -> None:
        self.runs: list[int] = []
        self.running = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.runs.append(len(texts))
        self.running.set()
        assert self.release.wait(60), "the test never released the model"
        return np.full((len(texts), self.dim), 1 / np.sqrt(self.dim), dtype=np.float32)


def test_a_stopping_indexer_ends_its_round_after_the_run_under_way(tmp_path: Path) -> None:
    items = 3 * STOP_CHECK_TEXTS  # one round of three runs of the model
    with Recall(tmp_path / "r.db", Settings(embeddings="none", index_interval=0)) as mem:
        world = mem.world("w", create=True)
        world.add_human("maria")
        world.post_many([PostRequest("maria", f"Note {n} on the harbour ledger.") for n in range(items)])
        model = GatedEmbedder()
        store = mem.service.store
        index = search_index(store, model)
        assert isinstance(index, SearchIndex)
        indexer = BackgroundIndexer(index, batch=items, interval=60).start()
        assert model.running.wait(60), "the indexer never ran the model"
        assert not indexer.stop(timeout=0)  # asked to stop while the model runs: still running
        model.release.set()
        assert indexer.stop(timeout=60)
        assert model.runs == [STOP_CHECK_TEXTS]  # the round ended after its first run
        assert index.pending() == items  # and stored nothing: every item is still to embed
        assert index.catch_up(batch=items) == items
        assert index.pending() == 0
        assert model.runs == [STOP_CHECK_TEXTS] * 4

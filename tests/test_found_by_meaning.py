"""A memory or fact is found by its meaning the moment the call that writes it returns, and a
clear match of one scores above the documented `min_score=0.3` while unrelated ones score
under it (issue 44, points 5 and 6): the Python API and the LangGraph store, on SQLite and
PostgreSQL, with no background indexer and no `refresh_index()`. REST and MCP:
tests/server/test_found_by_meaning_http.py. The questions share no word with what they find,
so no keyword search can find it: only its vector, stored before the write returned."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from recall import Recall, Settings
from recall.integrations.langgraph import RecallStore
from recall.search.calibration import calibrated, similarity_score
from recall.search.embeddings import Embedder

#: (stored, a question about it sharing no word with it): pairs of bench/score_calibration.py.
PAIRS = (
    ("I only drink green tea", "what beverage do I like?"),
    ("My daughter Lucy starts school in September", "when does my child begin classes?"),
    ("I am afraid of flying", "does air travel scare me?"),
    ("The parcel was sent with DHL", "which courier delivered the package?"),
)
#: Stored beside them, about nothing the questions ask.
OTHERS = (
    "The printer on the second floor jams often",
    "Quarterly reports are due in April",
    "Parking is free after six in the evening",
)
#: The threshold the docs show (docs/long-term-memory.md, python-api.md, integrations.md).
DOCUMENTED = 0.3
UNRELATED = "quantum chromodynamics lecture"


def test_a_memory_is_found_by_meaning_as_soon_as_add_memory_returns(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0)) as mem:  # no background indexer
        world = mem.world("w", create=True)
        world.add_agent("desk")
        ids = [world.add_memory(text).id for text, _ in PAIRS]
        for text in OTHERS:
            world.add_memory(text)
        for (_, question), memory_id in zip(PAIRS, ids, strict=True):
            hits = world.search(question)
            assert hits and (hits[0].kind, hits[0].source_id) == ("memory", memory_id), (question, hits[:2])
            # The documented threshold keeps the match, and only it.
            assert [h.source_id for h in world.search(question, min_score=DOCUMENTED)] == [memory_id], question
        assert world.search(UNRELATED, min_score=DOCUMENTED) == []
        # An agent's own memory, and a memory changed in place, are found by their new meaning.
        own = world.agent("desk").add_memory("I am vegetarian")
        assert [h.source_id for h in world.agent("desk").search("do I eat meat?", min_score=DOCUMENTED)] == [own.id]
        world.update_memory(ids[0], content="My favourite band is Radiohead")
        hits = world.search("which musicians do I love?", min_score=DOCUMENTED)
        assert [h.source_id for h in hits] == [ids[0]]


def test_a_fact_is_found_by_meaning_as_soon_as_it_is_added(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0)) as mem:
        scope = mem.scope("user:maria")
        ids = [scope.add(text).id for text, _ in PAIRS]
        for text in OTHERS:
            scope.add(text)
        for (_, question), fact_id in zip(PAIRS, ids, strict=True):
            hits = mem.search("user:maria", question, min_score=DOCUMENTED)
            assert [(h.kind, h.source_id) for h in hits] == [("fact", fact_id)], question
        assert mem.search("user:maria", UNRELATED, min_score=DOCUMENTED) == []
        world = mem.world("shop", create=True)
        fact = mem.scope("world:shop").add("The shop opens at nine every morning")
        hits = world.search("what time can customers come in?", kinds=("fact",), min_score=DOCUMENTED)
        assert [h.source_id for h in hits] == [fact.id]


def test_the_langgraph_store_finds_what_it_put_by_meaning_at_once(store_location: str) -> None:
    with Recall(store_location, Settings(index_interval=0)) as mem:
        # fresh_search=False: no refresh_index() before the search; `put` itself embeds.
        store = RecallStore(mem, world="lg", create=True, min_score=DOCUMENTED, fresh_search=False)
        for n, (text, _) in enumerate(PAIRS):
            store.put(("prefs",), f"pair-{n}", {"text": text})
        for n, text in enumerate(OTHERS):
            store.put(("prefs",), f"other-{n}", {"text": text})
        for n, (_, question) in enumerate(PAIRS):
            items = store.search(("prefs",), query=question)
            assert [i.key for i in items] == [f"pair-{n}"], question
            assert items[0].score is not None and DOCUMENTED <= items[0].score <= 1
        assert store.search(("prefs",), query=UNRELATED) == []


def test_keyword_matches_keep_their_scores_and_scores_stay_best_first(mem: Recall) -> None:
    world = mem.world("w", create=True)
    world.add_human("maria")
    tea = world.add_memory("I only drink green tea")
    world.add_memory("Quarterly reports are due in April")
    world.post("maria", "Do you sell green tea?")
    hits = world.search("green tea")
    assert (hits[0].kind, hits[0].source_id) == ("memory", tea.id) and hits[0].score > 0.9
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)


@pytest.mark.parametrize("kind", ["memory", "fact"])
def test_calibration_is_monotone_in_similarity_and_keeps_a_higher_relevance(kind: str) -> None:
    grid = [n / 100 for n in range(101)]
    mapped = [similarity_score(s) for s in grid]
    assert mapped == sorted(mapped) and 0 < mapped[0] < 0.01 and mapped[-1] > 0.99
    assert calibrated(kind, 0.95, 0.2) == 0.95  # a strong keyword match keeps its relevance
    assert calibrated(kind, 0.04, 0.55) > DOCUMENTED  # a paraphrase scores by its meaning
    assert calibrated(kind, 0.04, 0.05) < 0.05  # an unrelated one does not
    assert calibrated(kind, 0.9, None) == 0.9 and calibrated(kind, 0.5, 0.6, "bm25") == 0.5
    assert calibrated(kind, 0.55, 0.55, "vector") == similarity_score(0.55)
    # Messages keep the ranking's relevance, fitted on conversations.
    assert calibrated("message", 0.04, 0.55) == 0.04


def test_every_min_score_the_docs_show_is_the_one_measured_here() -> None:
    root = Path(__file__).resolve().parent.parent
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    shown = {
        (page.name, float(value))
        for page in pages
        for value in re.findall(r"min_score=([0-9.]+)", page.read_text(encoding="utf-8"))
    }
    assert shown and {value for _, value in shown} == {DOCUMENTED}, sorted(shown)


def test_a_model_failure_keeps_the_memory_and_leaves_its_vector_to_the_indexer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with Recall(tmp_path / "r.db", Settings(index_interval=0)) as mem:
        world = mem.world("w", create=True)
        index = mem.service.index
        assert index is not None and index.embedder is not None
        model: Embedder = index.embedder

        class Down:
            name, dim = model.name, model.dim

            def embed(self, texts: Sequence[str]) -> object:
                raise RuntimeError("the model is down")

        monkeypatch.setattr(index, "embedder", Down())
        with caplog.at_level(logging.WARNING, logger="recall.indexer"):
            memory = world.add_memory("I only drink green tea")
        assert "background indexer embeds them" in caplog.text
        assert [m.id for m in world.memories()] == [memory.id]  # stored, once
        monkeypatch.setattr(index, "embedder", model)
        assert index.pending() == 1
        mem.refresh_index()
        assert [h.source_id for h in world.search("what beverage do I like?", min_score=DOCUMENTED)] == [memory.id]
